"""The hostname index of candidate PVs: a node's pick from it equals its pick from every PV."""

from __future__ import annotations

import random
from typing import Any

from scheduler.plugins.volumebinding.candidates import CandidateVolumes, pinned_hostnames
from scheduler.plugins.volumebinding.storage import IdentityMemo, find_matching_volume

HOSTNAME = "kubernetes.io/hostname"
HOSTS = [f"node-{i}" for i in range(6)]


def expression(key: str, operator: str, values: list[Any] | None = None) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": values} if values is not None else {})}


def affinity(rng: random.Random) -> dict[str, Any] | None:
    """Node affinities of every kind the index must tell apart."""
    choice = rng.randrange(8)
    if choice == 0:
        return None  # every node
    if choice == 1:
        return {"required": {"nodeSelectorTerms": []}}  # no node
    term_count = rng.randint(1, 2)
    terms = []
    for _ in range(term_count):
        kind = rng.randrange(6)
        if kind <= 2:  # pinned: hostname In, maybe with another requirement
            extra = [expression("zone", "In", ["a"])] if kind == 2 else []
            terms.append({"matchExpressions": [*extra, expression(HOSTNAME, "In", rng.sample(HOSTS, 2))]})
        elif kind == 3:
            terms.append({"matchExpressions": [expression(HOSTNAME, "NotIn", [rng.choice(HOSTS)])]})
        elif kind == 4:
            terms.append({"matchExpressions": [expression("zone", "In", ["a", "b"])]})
        else:
            terms.append({"matchExpressions": [expression(HOSTNAME, "In", [])]})  # invalid: no node
    return {"required": {"nodeSelectorTerms": terms}}


def volume(i: int, rng: random.Random) -> dict[str, Any]:
    pv_spec: dict[str, Any] = {
        "capacity": {"storage": f"{rng.choice([1, 2, 5])}Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
    }
    node_affinity = affinity(rng)
    if node_affinity is not None:
        pv_spec["nodeAffinity"] = node_affinity
    return {"metadata": {"name": f"pv-{i}"}, "spec": pv_spec, "status": {"phase": "Available"}}


CLAIM = {
    "metadata": {"name": "data", "namespace": "default", "uid": "c1"},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "resources": {"requests": {"storage": "1Gi"}},
    },
}


def test_every_node_picks_from_the_index_what_it_picks_from_the_whole_list() -> None:
    rng = random.Random(7)
    for _ in range(200):
        volumes = [volume(i, rng) for i in range(rng.randint(0, 12))]
        candidates = CandidateVolumes()
        for pv in volumes:
            candidates.append(pv)
        excluded = {pv["metadata"]["name"] for pv in volumes if rng.random() < 0.2}
        for host in [*HOSTS, "elsewhere", None]:
            labels = {"zone": rng.choice(["a", "b"])}
            if host is not None:
                labels[HOSTNAME] = host
            shown = candidates.for_node(labels)
            assert find_matching_volume(CLAIM, shown, labels, excluded) is find_matching_volume(
                CLAIM, volumes, labels, excluded
            )
            assert [pv for pv in volumes if pv in shown] == list(shown)  # the list's order kept


def test_only_a_hostname_in_requirement_in_every_term_pins_a_volume() -> None:
    def pv(*terms: list[dict[str, Any]]) -> dict[str, Any]:
        selector = {"nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}
        return {"spec": {"nodeAffinity": {"required": selector}}}

    assert pinned_hostnames(pv([expression(HOSTNAME, "In", ["a", "b"])])) == {"a", "b"}
    assert pinned_hostnames(
        pv(
            [expression(HOSTNAME, "In", ["a"])],
            [expression("zone", "In", ["z"]), expression(HOSTNAME, "In", ["c"])],
        )
    ) == {"a", "c"}
    assert (
        pinned_hostnames(pv([expression(HOSTNAME, "In", ["a"])], [expression("zone", "In", ["z"])])) is None
    )
    assert pinned_hostnames(pv([expression(HOSTNAME, "NotIn", ["a"])])) is None
    assert pinned_hostnames({"spec": {}}) is None


def test_the_identity_memo_answers_for_the_very_object_only() -> None:
    calls: list[dict[str, Any]] = []

    def compute(obj: dict[str, Any]) -> int:
        calls.append(obj)
        return len(obj)

    memo: IdentityMemo[int] = IdentityMemo(compute, size=2)
    first, twin, third = {"a": 1}, {"a": 1}, {"b": 2, "c": 3}
    assert [memo.get(first), memo.get(first), memo.get(twin)] == [1, 1, 1]
    assert calls == [first, twin] and calls[1] is twin  # an equal object is another object
    assert memo.get(third) == 2  # the memo was full: it started over
    assert memo.get(first) == 1 and len(calls) == 4
