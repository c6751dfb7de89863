"""The hostname index of candidate PVs, kept across pods: a node's pick from it equals its pick
from every PV of the class, however the PVs change meanwhile."""

from __future__ import annotations

import random
from typing import Any

from scheduler.plugins.volumebinding.assume_cache import AssumeCache
from scheduler.plugins.volumebinding.candidates import CandidateVolumes, VolumeIndex, pinned_hostnames
from scheduler.plugins.volumebinding.storage import IdentityMemo, VolumeRequest, find_matching_volume
from scheduler.testing.builders import FakeLister
from scheduler.testing.inmemory import InMemoryLister

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


def volume(i: int, rng: random.Random, version: int = 1) -> dict[str, Any]:
    pv_spec: dict[str, Any] = {
        "capacity": {"storage": f"{rng.choice([1, 2, 5])}Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": rng.choice(["local", "local", "local", "other"]),
    }
    node_affinity = affinity(rng)
    if node_affinity is not None:
        pv_spec["nodeAffinity"] = node_affinity
    metadata = {"name": f"pv-{i}", "resourceVersion": str(version)}
    return {"metadata": metadata, "spec": pv_spec, "status": {"phase": "Available"}}


CLAIM = {
    "metadata": {"name": "data", "namespace": "default", "uid": "c1"},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "resources": {"requests": {"storage": "1Gi"}},
    },
}


REQUEST = VolumeRequest.of(CLAIM)


def node_labels(rng: random.Random) -> list[dict[str, str]]:
    """Every host of the volumes, one they never name, and a node without a hostname label."""
    nodes = []
    for host in [*HOSTS, "elsewhere", None]:
        labels = {"zone": rng.choice(["a", "b"])}
        if host is not None:
            labels[HOSTNAME] = host
        nodes.append(labels)
    return nodes


def taken(pv: dict[str, Any]) -> dict[str, Any]:
    """``pv`` as Reserve assumes it: bound to another pod's claim."""
    return {**pv, "spec": {**pv["spec"], "claimRef": {"namespace": "default", "name": "other"}}}


def test_the_kept_index_picks_what_the_whole_class_gives_however_the_volumes_change() -> None:
    rng = random.Random(7)
    lister = FakeLister()
    kept = VolumeIndex(lambda: lister)
    cache = AssumeCache(lambda: lister)
    version = 1
    for _ in range(300):
        step, name = rng.random(), rng.randrange(12)
        current = lister.get(f"pv-{name}")
        if step < 0.5:  # added, changed, or recreated after a delete
            version += 1
            lister.put(volume(name, rng, version))
        elif step < 0.65:
            lister.delete(f"pv-{name}")
        elif step < 0.8 and current is not None:
            cache.assume(taken(dict(current)))  # this scheduler's own write, not yet seen
        elif current is not None:
            cache.restore(f"pv-{name}")
        fresh = VolumeIndex(lambda: FakeLister(lister.list()))
        whole = sorted(
            (
                seen
                for pv in lister.list()
                if pv["spec"]["storageClassName"] == "local"
                and (seen := cache.get(pv["metadata"]["name"])) is not None
            ),
            key=lambda pv: pv["metadata"]["name"],
        )
        volumes, rebuilt = kept.of_class("local"), fresh.of_class("local")
        assert (volumes is None) == (rebuilt is None) == (not whole)
        if volumes is None or rebuilt is None:
            continue
        shown = CandidateVolumes(volumes, cache.get)
        excluded = {pv["metadata"]["name"] for pv in whole if rng.random() < 0.2}
        for labels in node_labels(rng):
            assert volumes.for_node(labels) == rebuilt.for_node(labels)
            assert find_matching_volume(
                REQUEST, shown.for_node(labels), labels, excluded
            ) is find_matching_volume(REQUEST, whole, labels, excluded)


def test_an_index_over_a_lister_without_revisions_lists_it_again() -> None:
    objects: dict[str, dict[str, Any]] = {}
    index = VolumeIndex(lambda: InMemoryLister(objects))  # an ObjectLister keeping no revisions
    objects["pv-1"] = {**volume(1, random.Random(3)), "spec": {"storageClassName": "local"}}
    assert index.of_class("local") is not None
    del objects["pv-1"]
    assert index.of_class("local") is None


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
