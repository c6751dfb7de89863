"""InterPodAffinity: required terms filter (both directions), preferred terms score."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.api import Pod
from scheduler.config.args import InterPodAffinityArgs
from scheduler.framework import Code, CycleState, QueueingHint, Status
from scheduler.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
    counting,
)
from scheduler.plugins.interpodaffinity.terms import matches_all, parse_pod_terms
from scheduler.testing.builders import (
    Cluster,
    FakeHandle,
    make_node,
    make_pod,
    per_node_and_batch_filter,
    per_node_and_batch_score,
    table_of,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
OK = None
AFF = "affinity"
ANTI = "anti"
EXISTING = "existing"


def term(labels: Mapping[str, str] | None, key: str = ZONE, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key}
    if labels is not None:
        t["labelSelector"] = {"matchLabels": dict(labels)}
    t.update(extra)
    return t


def affinity(
    required: Sequence[Mapping] = (),
    anti: Sequence[Mapping] = (),
    preferred: Sequence[tuple[int, Mapping]] = (),
    preferred_anti: Sequence[tuple[int, Mapping]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(required),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred
            ],
        }
    if anti or preferred_anti:
        out["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti
            ],
        }
    return out


def pod(name: str, node: str = "", labels: Mapping[str, str] | None = None, **kwargs: Any) -> Pod:
    return make_pod(name, node_name=node, labels=labels or {}, **kwargs)


def nodes() -> list:
    """n1 and n2 in zone z1, n3 in zone z2, n4 without a zone."""
    return [
        make_node("n1", labels={ZONE: "z1"}),
        make_node("n2", labels={ZONE: "z1"}),
        make_node("n3", labels={ZONE: "z2"}),
        make_node("n4"),
    ]


def verdict(status: Status | None) -> str | None:
    if status is None:
        return OK
    expected = {
        (ERR_REASON_AFFINITY_RULES_NOT_MATCH,): (AFF, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,): (ANTI, Code.UNSCHEDULABLE),
        (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,): (EXISTING, Code.UNSCHEDULABLE),
    }[status.reasons]
    assert status.code == expected[1]
    return expected[0]


class _Namespaces:
    """A ``namespaces`` lister: plain API dicts by name."""

    def __init__(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        self._objects = {name: {"metadata": {"name": name, "labels": dict(v)}} for name, v in labels.items()}

    def get(self, key: str) -> Any | None:
        return self._objects.get(key)

    def list(self) -> list[Any]:
        return list(self._objects.values())


class NamespaceHandle(FakeHandle):
    """A handle that watches namespaces (and nothing else)."""

    LABELS: Mapping[str, Mapping[str, str]] = {
        "default": {"kubernetes.io/metadata.name": "default", "team": "a"},
        "other": {"kubernetes.io/metadata.name": "other", "team": "a"},
        "third": {"kubernetes.io/metadata.name": "third", "team": "b"},
    }

    def lister(self, resource: str) -> _Namespaces:
        if resource != "namespaces":
            raise KeyError(resource)
        return _Namespaces(self.LABELS)


def run_filter(handle: FakeHandle, incoming: Pod, args: Any = None) -> tuple[Status | None, list]:
    plugin = InterPodAffinity(args, handle)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, handle.snapshot)
    if status is not None and status.is_skip:  # the framework then skips Filter: every node passes
        return status, [OK] * len(handle.snapshot)
    if status is not None:
        return status, []
    return None, [verdict(plugin.filter(state, incoming, info)) for info in handle.snapshot.node_infos()]


DB = {"app": "db"}
WEB = {"app": "web"}
# A term as the API server stores it: mismatchLabelKeys folded in as ``tenant NotIn (a)``.
FOLDED_MISMATCH_TERM = term(
    None,
    HOST,
    mismatchLabelKeys=["tenant"],
    labelSelector={
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tenant", "operator": "NotIn", "values": ["a"]}],
    },
)

FILTER_CASES = [
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB)])),
        [pod("db", "n1", DB)],
        [OK, OK, AFF, AFF],
        id="required affinity admits the matching pod's zone only",
    ),
    pytest.param(
        pod("in", "", DB, affinity=affinity(required=[term(DB)])),
        [],
        [OK, OK, OK, AFF],
        id="the first pod matching its own affinity may go anywhere with the topology key",
    ),
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB)])),
        [],
        [AFF, AFF, AFF, AFF],
        id="affinity to pods that do not exist fits nowhere",
    ),
    pytest.param(
        pod("in", "", DB, affinity=affinity(required=[term(DB)])),
        [pod("db", "n3", DB)],
        [AFF, AFF, OK, AFF],
        id="once a matching pod exists the self-match exception no longer applies",
    ),
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB)])),
        [pod("db", "n1", DB, namespace="other")],
        [AFF, AFF, AFF, AFF],
        id="affinity terms default to the pod's own namespace",
    ),
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB, namespaces=["other"])])),
        [pod("db", "n1", DB, namespace="other")],
        [OK, OK, AFF, AFF],
        id="listed namespaces are searched",
    ),
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB, namespaceSelector={})])),
        [pod("db", "n3", DB, namespace="other")],
        [AFF, AFF, OK, AFF],
        id="an empty namespaceSelector searches every namespace",
    ),
    pytest.param(
        pod(
            "in",
            affinity=affinity(
                required=[
                    term(DB, namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "other"}})
                ]
            ),
        ),
        [pod("db", "n3", DB, namespace="other"), pod("db2", "n1", DB, namespace="third")],
        [AFF, AFF, OK, AFF],
        id="a namespaceSelector on the namespace name works without namespace labels",
    ),
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB), term(WEB, HOST)])),
        [pod("db", "n1", DB), pod("web", "n2", WEB)],
        [AFF, AFF, AFF, AFF],
        id="all affinity terms must be met by one and the same pod",
    ),
    pytest.param(
        pod("in", affinity=affinity(required=[term(DB), term(DB, HOST)])),
        [pod("db", "n1", DB)],
        [OK, AFF, AFF, AFF],
        id="each term's topology must contain the matching pod",
    ),
    pytest.param(
        pod("in", affinity=affinity(anti=[term(WEB, HOST)])),
        [pod("web", "n1", WEB)],
        [ANTI, OK, OK, OK],
        id="required anti-affinity keeps away from the matching pod's host",
    ),
    pytest.param(
        pod("in", affinity=affinity(anti=[term(WEB)])),
        [pod("web", "n1", WEB)],
        [ANTI, ANTI, OK, OK],
        id="required anti-affinity by zone spares nodes without a zone",
    ),
    pytest.param(
        pod("in", "", WEB),
        [pod("guard", "n1", {"app": "guard"}, affinity=affinity(anti=[term(WEB)]))],
        [EXISTING, EXISTING, OK, OK],
        id="an existing pod's anti-affinity rejects the incoming pod (symmetry)",
    ),
    pytest.param(
        pod("in", "", WEB, namespace="other"),
        [pod("guard", "n1", affinity=affinity(anti=[term(WEB)]))],
        [OK, OK, OK, OK],
        id="an existing pod's anti-affinity covers its own namespace only",
    ),
    pytest.param(
        pod(
            "in",
            "",
            {"app": "db", "tenant": "a"},
            affinity=affinity(required=[term(DB, matchLabelKeys=["tenant"])]),
        ),
        [pod("db-b", "n1", {"app": "db", "tenant": "b"}), pod("db-a", "n3", {"app": "db", "tenant": "a"})],
        [OK, OK, OK, AFF],
        id="the scheduler leaves matchLabelKeys to the API server and selects by labelSelector alone",
    ),
    pytest.param(
        pod(
            "in",
            "",
            {"app": "web", "tenant": "a"},
            affinity=affinity(anti=[FOLDED_MISMATCH_TERM]),
        ),
        [
            pod("web-b", "n1", {"app": "web", "tenant": "b"}),
            pod("web-a", "n2", {"app": "web", "tenant": "a"}),
        ],
        [ANTI, OK, OK, OK],
        id="mismatchLabelKeys folded into the selector by the API server aim at other tenants only",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "expected"), FILTER_CASES)
def test_filter_verdict_per_node(incoming: Pod, pods: list, expected: list) -> None:
    _, verdicts = run_filter(FakeHandle(table_of(nodes(), pods, capacity=8)), incoming)
    assert verdicts == expected


def test_namespace_selector_uses_namespace_labels_from_the_handle() -> None:
    incoming = pod(
        "in", affinity=affinity(required=[term(DB, namespaceSelector={"matchLabels": {"team": "a"}})])
    )
    pods = [pod("db", "n3", DB, namespace="other"), pod("db3", "n1", DB, namespace="third")]
    status, verdicts = run_filter(NamespaceHandle(table_of(nodes(), pods)), incoming)
    assert status is None
    assert verdicts == [AFF, AFF, OK, AFF]


def test_a_namespace_the_lister_does_not_hold_is_known_by_its_name_label() -> None:
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "ghost"}}
    by_team = {"matchLabels": {"team": "a"}}
    pods = [pod("db", "n3", DB, namespace="ghost")]
    handle = NamespaceHandle(table_of(nodes(), pods))
    incoming = pod("in", affinity=affinity(required=[term(DB, namespaceSelector=by_name)]))
    assert run_filter(handle, incoming)[1] == [AFF, AFF, OK, AFF]
    incoming = pod("in", affinity=affinity(required=[term(DB, namespaceSelector=by_team)]))
    assert run_filter(handle, incoming)[1] == [AFF, AFF, AFF, AFF]


def test_an_empty_namespace_selector_matches_pods_of_every_namespace() -> None:
    incoming = pod("in", affinity=affinity(anti=[term(DB, namespaceSelector={})]))
    pods = [pod("db", "n1", DB, namespace="other"), pod("db2", "n3", DB, namespace="third")]
    assert run_filter(NamespaceHandle(table_of(nodes(), pods)), incoming)[1] == [ANTI, ANTI, ANTI, OK]


def test_existing_anti_affinity_namespace_selector_is_matched_against_the_incoming_namespace() -> None:
    guard = pod(
        "guard", "n1", affinity=affinity(anti=[term(WEB, namespaceSelector={"matchLabels": {"team": "b"}})])
    )
    handle = NamespaceHandle(table_of(nodes(), [guard]))
    assert run_filter(handle, pod("in", "", WEB, namespace="third"))[1] == [EXISTING, EXISTING, OK, OK]
    assert run_filter(handle, pod("in", "", WEB, namespace="other"))[1] == [OK, OK, OK, OK]


def test_pre_filter_skips_when_nobody_has_required_terms() -> None:
    status, _ = run_filter(FakeHandle(table_of(nodes(), [pod("db", "n1", DB)])), pod("in", "", WEB))
    assert status is not None and status.is_skip


def test_invalid_incoming_selector_is_unresolvable() -> None:
    bad = {"topologyKey": ZONE, "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}
    status, _ = run_filter(FakeHandle(table_of(nodes())), pod("in", affinity=affinity(required=[bad])))
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_add_and_remove_pod_update_all_three_counters() -> None:
    web = pod("web", "n1", WEB)
    handle = FakeHandle(table_of(nodes(), [web]))
    plugin = InterPodAffinity(None, handle)
    incoming = pod("in", "", WEB, affinity=affinity(anti=[term(WEB, HOST)]))
    state = CycleState()
    assert plugin.pre_filter(state, incoming, handle.snapshot)[1] is None
    n1, n3 = handle.snapshot.get("n1"), handle.snapshot.get("n3")
    assert verdict(plugin.filter(state, incoming, n1)) == ANTI

    what_if = state.clone()
    plugin.remove_pod(what_if, incoming, web, n1)
    assert plugin.filter(what_if, incoming, n1) is None
    assert verdict(plugin.filter(state, incoming, n1)) == ANTI  # the original is untouched

    guard = pod("guard", "n3", affinity=affinity(anti=[term(WEB)]))
    plugin.add_pod(what_if, incoming, guard, n3)
    assert verdict(plugin.filter(what_if, incoming, n3)) == EXISTING


# ---------------------------------------------------------------------------- scoring


def run_score(handle: FakeHandle, incoming: Pod, args: Any = None) -> tuple[Status | None, list, list]:
    plugin = InterPodAffinity(args, handle)
    state = CycleState()
    infos = list(handle.snapshot.node_infos())
    status = plugin.pre_score(state, incoming, infos)
    if status is not None:
        return status, [], []
    raw = [plugin.score(state, incoming, info) for info in infos]
    normalized = np.array(raw, dtype=np.int64)
    plugin.normalize_scores(state, incoming, normalized)
    return None, raw, normalized.tolist()


SCORE_CASES = [
    pytest.param(
        pod("in", affinity=affinity(preferred=[(5, term(DB))])),
        [pod("db", "n1", DB)],
        None,
        [5, 5, 0, 0],
        [100, 100, 0, 0],
        id="preferred affinity credits the matching pod's zone by its weight",
    ),
    pytest.param(
        pod("in", affinity=affinity(preferred_anti=[(3, term(WEB, HOST))])),
        [pod("web", "n1", WEB)],
        None,
        [-3, 0, 0, 0],
        [0, 100, 100, 100],
        id="preferred anti-affinity debits the matching pod's host",
    ),
    pytest.param(
        pod("in", affinity=affinity(preferred=[(8, term(DB))], preferred_anti=[(4, term(WEB))])),
        [pod("db", "n1", DB), pod("web", "n3", WEB), pod("db2", "n3", DB)],
        None,
        [8, 8, 4, 0],
        [100, 100, 50, 0],
        id="affinity and anti-affinity weights add up per zone",
    ),
    pytest.param(
        pod("in", "", WEB),
        [pod("fan", "n3", affinity=affinity(required=[term(WEB)]))],
        None,
        [0, 0, 1, 0],
        [0, 0, 100, 0],
        id="an existing pod's required affinity to the incoming pod counts hardPodAffinityWeight",
    ),
    pytest.param(
        pod("in", "", WEB),
        [pod("fan", "n3", affinity=affinity(required=[term(WEB)]))],
        InterPodAffinityArgs(hard_pod_affinity_weight=7),
        [0, 0, 7, 0],
        [0, 0, 100, 0],
        id="hardPodAffinityWeight is configurable",
    ),
    pytest.param(
        pod("in", "", WEB),
        [pod("hater", "n1", affinity=affinity(preferred_anti=[(10, term(WEB))]))],
        None,
        [-10, -10, 0, 0],
        [0, 0, 100, 100],
        id="an existing pod's preferred anti-affinity to the incoming pod debits its zone",
    ),
    pytest.param(
        pod("in", "", WEB, affinity=affinity(preferred=[(2, term(DB, HOST))])),
        [pod("db", "n2", DB), pod("fan", "n1", affinity=affinity(preferred=[(6, term(WEB))]))],
        None,
        [6, 8, 0, 0],
        [75, 100, 0, 0],
        id="both directions combine",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "args", "raw", "normalized"), SCORE_CASES)
def test_score_raw_and_normalized(incoming: Pod, pods: list, args: Any, raw: list, normalized: list) -> None:
    status, got_raw, got_normalized = run_score(
        FakeHandle(table_of(nodes(), pods, capacity=8)), incoming, args
    )
    assert status is None
    assert got_raw == raw
    assert got_normalized == normalized


@pytest.mark.parametrize(
    ("incoming", "pods", "args"),
    [
        pytest.param(pod("in", "", WEB), [pod("db", "n1", DB)], None, id="nobody has affinity terms"),
        pytest.param(
            pod("in", "", WEB),
            [pod("fan", "n3", affinity=affinity(required=[term(WEB)]))],
            InterPodAffinityArgs(hard_pod_affinity_weight=0),
            id="a zero hardPodAffinityWeight ignores existing required affinity",
        ),
        pytest.param(
            pod("in", "", WEB),
            [pod("hater", "n1", affinity=affinity(preferred_anti=[(10, term(WEB))]))],
            InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True),
            id="ignorePreferredTermsOfExistingPods skips pods without preferred terms",
        ),
    ],
)
def test_pre_score_skips(incoming: Pod, pods: list, args: Any) -> None:
    status, _, _ = run_score(FakeHandle(table_of(nodes(), pods)), incoming, args)
    assert status is not None and status.is_skip


def test_out_of_range_hard_pod_affinity_weight_is_rejected() -> None:
    with pytest.raises(ValueError, match="hardPodAffinityWeight"):
        InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=101), FakeHandle())


# ---------------------------------------------------------------------------- queueing hints


def hints() -> dict[str, Any]:
    return {h.event.resource: h.hint for h in InterPodAffinity(None, FakeHandle()).events_to_register()}


TARGET = pod("in", affinity=affinity(required=[term(DB)], anti=[term(WEB, HOST)]))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            None, pod("db", "n1", DB), QueueingHint.QUEUE, id="an assigned pod matching the affinity"
        ),
        pytest.param(None, pod("db", "", DB), QueueingHint.SKIP, id="an unassigned pod"),
        pytest.param(None, pod("x", "n1", {"app": "x"}), QueueingHint.SKIP, id="an unrelated pod added"),
        pytest.param(pod("web", "n1", WEB), None, QueueingHint.QUEUE, id="a pod the target hates deleted"),
        pytest.param(pod("db", "n1", DB), None, QueueingHint.SKIP, id="a pod the target likes deleted"),
        pytest.param(
            pod("w", "n1", WEB), pod("w", "n1", {"app": "x"}), QueueingHint.QUEUE, id="a hated pod relabelled"
        ),
    ],
)
def test_pod_event_hints(old: Pod | None, new: Pod | None, expected: QueueingHint) -> None:
    assert hints()["Pod"](TARGET, old, new) is expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(
            make_node("n", labels={ZONE: "z"}), QueueingHint.QUEUE, id="a node with an affinity key"
        ),
        pytest.param(make_node("n"), QueueingHint.QUEUE, id="a node with the anti-affinity hostname key"),
    ],
)
def test_node_event_hints(new: Any, expected: QueueingHint) -> None:
    assert hints()["Node"](TARGET, None, new) is expected


def test_node_without_any_topology_key_skips() -> None:
    target = pod("in", affinity=affinity(required=[term(DB)]))
    assert hints()["Node"](target, None, make_node("n")) is QueueingHint.SKIP


def test_the_target_pods_own_label_update_queues() -> None:
    target = pod("in", labels={"v": "1"}, uid="u-in", affinity=affinity(required=[term(DB)]))
    relabelled = pod("in", labels={"v": "2"}, uid="u-in", affinity=affinity(required=[term(DB)]))
    assert hints()["Pod"](target, target, relabelled) is QueueingHint.QUEUE


def test_a_pod_nominated_to_a_node_counts_as_placed() -> None:
    nominated = pod("db", "", DB, nominated_node_name="n1")
    assert hints()["Pod"](TARGET, None, nominated) is QueueingHint.QUEUE


@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        pytest.param(
            pod("guard", "n1", affinity=affinity(anti=[term(WEB, HOST)])),
            QueueingHint.QUEUE,
            id="a deleted pod whose required anti-affinity matched the target queues",
        ),
        pytest.param(
            pod("guard", "n1", affinity=affinity(anti=[term(DB, HOST)])),
            QueueingHint.SKIP,
            id="a deleted pod whose required anti-affinity spared the target skips",
        ),
    ],
)
def test_deleted_pods_anti_affinity_hint(deleted: Pod, expected: QueueingHint) -> None:
    target = pod("in", "", WEB, affinity=affinity(required=[term(DB)]))
    assert hints()["Pod"](target, deleted, None) is expected


@pytest.mark.parametrize(
    ("namespace_selector", "expected"),
    [
        pytest.param(
            {"matchLabels": {"team": "a"}},
            QueueingHint.SKIP,
            id="hints match terms with no namespace labels, so a labelled namespaceSelector never matches",
        ),
        pytest.param({}, QueueingHint.QUEUE, id="hints match an empty namespaceSelector to every namespace"),
    ],
)
def test_pod_hints_ignore_namespace_labels(namespace_selector: Mapping, expected: QueueingHint) -> None:
    target = pod("in", affinity=affinity(required=[term(DB, namespaceSelector=namespace_selector)]))
    plugin = InterPodAffinity(None, NamespaceHandle())
    hint = {h.event.resource: h.hint for h in plugin.events_to_register()}["Pod"]
    assert hint(target, None, pod("db", "n1", DB, namespace="other")) is expected


ANTI_ZONE = pod("in", affinity=affinity(anti=[term(WEB)]))
AFFINITY_ZONE = pod("in", affinity=affinity(required=[term(DB)]))


@pytest.mark.parametrize(
    ("target", "old", "new", "expected"),
    [
        pytest.param(
            ANTI_ZONE,
            None,
            make_node("n"),
            QueueingHint.QUEUE,
            id="any node added queues a pod with required anti-affinity, even without the key",
        ),
        pytest.param(
            ANTI_ZONE,
            make_node("n", labels={ZONE: "z1"}),
            make_node("n"),
            QueueingHint.QUEUE,
            id="a node losing an anti-affinity topology key queues",
        ),
        pytest.param(
            ANTI_ZONE,
            make_node("n"),
            make_node("n", labels={ZONE: "z1"}),
            QueueingHint.SKIP,
            id="a node gaining an anti-affinity topology key skips",
        ),
        pytest.param(
            ANTI_ZONE,
            make_node("n", labels={ZONE: "z1"}),
            make_node("n", labels={ZONE: "z2"}),
            QueueingHint.QUEUE,
            id="a node moving between anti-affinity domains queues",
        ),
        pytest.param(
            AFFINITY_ZONE,
            make_node("n"),
            make_node("n", labels={ZONE: "z1"}),
            QueueingHint.QUEUE,
            id="a node gaining an affinity topology key queues",
        ),
        pytest.param(
            AFFINITY_ZONE,
            make_node("n", labels={ZONE: "z1"}),
            make_node("n", labels={ZONE: "z2"}),
            QueueingHint.QUEUE,
            id="a node moving between affinity domains queues",
        ),
        pytest.param(
            AFFINITY_ZONE,
            make_node("n", labels={ZONE: "z1"}),
            make_node("n", labels={ZONE: "z1", "x": "y"}),
            QueueingHint.SKIP,
            id="a label update leaving the affinity topology key alone skips",
        ),
        pytest.param(
            AFFINITY_ZONE,
            make_node("n", labels={ZONE: "z1"}),
            make_node("n"),
            QueueingHint.SKIP,
            id="a node losing an affinity topology key skips",
        ),
    ],
)
def test_node_update_hints(target: Pod, old: Any, new: Any, expected: QueueingHint) -> None:
    assert hints()["Node"](target, old, new) is expected


# ---------------------------------------------------------------------------- randomized agreement
#
# Random clusters, checked three ways: the batch forms against the per-node forms, both against a
# brute-force reading of the rules over every placed pod (the oracle below), and one plugin
# instance kept across cluster changes (its tallies refreshed from the table's change log)
# against the oracle of each new state. Preemption's AddPod/RemovePod what-ifs must give what a
# fresh PreFilter gives on the cluster really changed that way.

RACK = "rack"
KEYS = [ZONE, HOST, RACK]
NAMESPACES = ["default", "other", "third"]
SEEDS = range(12)


def random_labels(rng: random.Random) -> dict[str, str]:
    labels = {}
    if rng.random() < 0.8:
        labels["app"] = rng.choice("abc")
    if rng.random() < 0.5:
        labels["tier"] = rng.choice("xy")
    return labels


def random_term(rng: random.Random) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": rng.choice(KEYS)}
    shape = rng.random()
    if shape < 0.5:
        t["labelSelector"] = {"matchLabels": {"app": rng.choice("abc")}}
    elif shape < 0.8:
        operator = rng.choice(["In", "NotIn", "Exists"])
        expression = {"key": "tier", "operator": operator}
        if operator != "Exists":
            expression["values"] = [rng.choice("xy")]
        t["labelSelector"] = {"matchExpressions": [expression]}
    elif shape < 0.95:
        t["labelSelector"] = {}  # matches every pod of the term's namespaces
    # else: no labelSelector at all, which matches no pod
    scope = rng.random()
    if scope < 0.15:
        t["namespaces"] = [rng.choice(NAMESPACES)]
    elif scope < 0.25:
        t["namespaceSelector"] = {}
    elif scope < 0.35:
        t["namespaceSelector"] = {"matchLabels": {"team": rng.choice("ab")}}
    return t


def random_affinity(rng: random.Random, chance: float) -> dict[str, Any] | None:
    def some(kind_chance: float) -> list:
        return [random_term(rng) for _ in range(rng.choice([1, 1, 2]))] if rng.random() < kind_chance else []

    def weighted(kind_chance: float) -> list:
        return [(rng.randint(1, 10), t) for t in some(kind_chance)]

    if rng.random() >= chance:
        return None
    return (
        affinity(required=some(0.35), anti=some(0.35), preferred=weighted(0.4), preferred_anti=weighted(0.4))
        or None
    )


def random_pod(
    rng: random.Random, name: str, node: str = "", chance: float = 0.4, pool: Sequence[Any] = ()
) -> Pod:
    """A pod with random labels; with ``chance``, (anti-)affinity: one of ``pool`` (the specs a
    workload's pods share) or, without a pool, a new one."""
    if pool:
        spec = rng.choice(pool) if rng.random() < chance else None
    else:
        spec = random_affinity(rng, chance)
    return pod(name, node, random_labels(rng), namespace=rng.choice(NAMESPACES), affinity=spec)


def random_node(rng: random.Random, name: str) -> Any:
    labels = {}
    if rng.random() < 0.85:
        labels[ZONE] = rng.choice(["z1", "z2", "z3"])
    if rng.random() < 0.5:
        labels[RACK] = rng.choice(["r1", "r2"])
    return make_node(name, labels=labels)


def random_cluster(rng: random.Random) -> tuple[list, list[Pod], list]:
    """Nodes, the pods placed on them, and the pool of affinity specs those pods share."""
    node_list = [random_node(rng, f"n{i}") for i in range(rng.randint(4, 12))]
    pool = [random_affinity(rng, 1.0) for _ in range(4)]
    pods = [
        random_pod(rng, f"p{i}-{k}", node.name, pool=pool)
        for i, node in enumerate(node_list)
        for k in range(rng.choice([0, 1, 2, 3]))
    ]
    return node_list, pods, pool


def ns_labels(namespace: str) -> Mapping[str, str]:
    return NamespaceHandle.LABELS.get(namespace, {"kubernetes.io/metadata.name": namespace})


def placed(handle: FakeHandle) -> list[tuple[Pod, Any]]:
    return [(p, info.node) for info in handle.snapshot.node_infos() for p in info.pods.values()]


def same_domain(a: Any, b: Any, key: str) -> bool:
    return key in a.labels and a.labels.get(key) == b.labels.get(key)


def oracle_filter(handle: FakeHandle, incoming: Pod) -> tuple[bool, list[str | None]]:
    """(PreFilter skips, per-node verdict), straight from the rules over every placed pod."""
    terms = parse_pod_terms(incoming)
    own = ns_labels(incoming.namespace)
    pods = placed(handle)
    hated_by = [
        (t, where)
        for p, where in pods
        for t in parse_pod_terms(p).required_anti_affinity
        if t.matches(incoming, own) and t.topology_key in where.labels
    ]
    if not hated_by and not terms.required_affinity and not terms.required_anti_affinity:
        return True, []
    liked = [
        (p, where) for p, where in pods if matches_all(terms.required_affinity, p, ns_labels(p.namespace))
    ]
    any_liked = any(t.topology_key in where.labels for _, where in liked for t in terms.required_affinity)
    verdicts: list[str | None] = []
    for info in handle.snapshot.node_infos():
        node = info.node
        if terms.required_affinity:
            has_keys = all(t.topology_key in node.labels for t in terms.required_affinity)
            near = all(
                any(same_domain(node, where, t.topology_key) for _, where in liked)
                for t in terms.required_affinity
            )
            own_group = not any_liked and matches_all(terms.required_affinity, incoming, own)
            if not has_keys or not (near or own_group):
                verdicts.append(AFF)
                continue
        if any(
            same_domain(node, where, t.topology_key) and t.matches(p, ns_labels(p.namespace))
            for t in terms.required_anti_affinity
            for p, where in pods
        ):
            verdicts.append(ANTI)
        elif any(same_domain(node, where, t.topology_key) for t, where in hated_by):
            verdicts.append(EXISTING)
        else:
            verdicts.append(OK)
    return False, verdicts


def oracle_raw_scores(handle: FakeHandle, incoming: Pod, hard_weight: int = 1) -> list[int] | None:
    """Raw scores per node, or None when no term touches any pod (PreScore skips)."""
    terms = parse_pod_terms(incoming)
    own = ns_labels(incoming.namespace)
    contributions = []  # (weight, node of the pod, topology key)
    for p, where in placed(handle):
        theirs = parse_pod_terms(p)
        for sign, weighted in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
            contributions += [
                (sign * w.weight, where, w.term.topology_key)
                for w in weighted
                if w.term.matches(p, ns_labels(p.namespace))
            ]
        if hard_weight > 0:
            contributions += [
                (hard_weight, where, t.topology_key)
                for t in theirs.required_affinity
                if t.matches(incoming, own)
            ]
        for sign, weighted in ((1, theirs.preferred_affinity), (-1, theirs.preferred_anti_affinity)):
            contributions += [
                (sign * w.weight, where, w.term.topology_key)
                for w in weighted
                if w.term.matches(incoming, own)
            ]
    contributions = [(w, where, key) for w, where, key in contributions if key in where.labels]
    if not contributions:
        return None
    return [
        sum(w for w, where, key in contributions if same_domain(info.node, where, key))
        for info in handle.snapshot.node_infos()
    ]


def check_filter(plugin: InterPodAffinity, handle: FakeHandle, incoming: Pod) -> None:
    """Per node, batch and oracle agree on PreFilter's skip and on every node's verdict."""
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, handle.snapshot)
    skips, expected = oracle_filter(handle, incoming)
    assert (status is not None and status.is_skip) == skips, status
    if skips:
        return
    assert status is None
    cluster = Cluster(handle.snapshot.table, list(handle.snapshot.node_infos()))
    per_node, batch = per_node_and_batch_filter(plugin, state, incoming, cluster)
    assert [verdict(s) for s in per_node] == expected
    assert [verdict(s) for s in batch] == expected


def check_score(plugin: InterPodAffinity, handle: FakeHandle, incoming: Pod, hard_weight: int = 1) -> None:
    state = CycleState()
    infos = list(handle.snapshot.node_infos())
    status = plugin.pre_score(state, incoming, infos)
    expected = oracle_raw_scores(handle, incoming, hard_weight)
    if expected is None:
        assert status is not None and status.is_skip
        return
    assert status is None
    cluster = Cluster(handle.snapshot.table, infos)
    per_node, batch = per_node_and_batch_score(plugin, state, incoming, cluster)
    assert per_node == expected
    assert batch == expected


@pytest.fixture(params=[False, True], ids=["sparse", "dense"])
def term_tallies(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run twice: terms of placed pods tallied per node as given, and as full columns from the
    first node on (big clusters switch to those)."""
    if request.param:
        monkeypatch.setattr(counting, "DENSE_AT", 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_clusters_batch_per_node_and_oracle_agree(seed: int, term_tallies: None) -> None:
    rng = random.Random(seed)
    for _ in range(6):
        node_list, pods, _ = random_cluster(rng)
        handle = NamespaceHandle(table_of(node_list, pods, capacity=rng.choice([2, 16])))
        hard_weight = rng.choice([0, 1, 5])
        plugin = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=hard_weight), handle)
        for i in range(4):
            incoming = random_pod(rng, f"in{i}", chance=0.9)
            check_filter(plugin, handle, incoming)
            check_score(plugin, handle, incoming, hard_weight)


@pytest.mark.parametrize("seed", SEEDS)
def test_one_plugin_kept_across_cluster_changes_agrees_with_the_oracle(seed: int, term_tallies: None) -> None:
    """Pods placed and removed, nodes relabelled: rows are rewritten as the cache does (sync_row),
    and the plugin's tallies must follow."""
    rng = random.Random(seed)
    node_list, pods, pool = random_cluster(rng)
    cluster = table_of(node_list, pods, capacity=4)
    handle = NamespaceHandle(cluster)
    plugin = InterPodAffinity(None, handle)
    incoming = [random_pod(rng, f"in{i}", chance=0.9) for i in range(3)]
    for step in range(25):
        info = rng.choice(cluster.infos)
        change = rng.random()
        if change < 0.45:
            info.add_pod(random_pod(rng, f"s{step}", info.name, chance=0.6, pool=pool))
        elif change < 0.8 and info.pods:
            info.remove_pod(rng.choice(list(info.pods)))
        else:
            info.node = random_node(rng, info.name)
        cluster.table.sync_row(info)
        for target in incoming:
            check_filter(plugin, handle, target)
            check_score(plugin, handle, target)


def first_with_pods(rng: random.Random, cluster: Cluster) -> Any:
    holding = [info for info in cluster.infos if info.pods]
    return rng.choice(holding) if holding else None


@pytest.mark.parametrize("seed", SEEDS)
def test_add_and_remove_pod_what_ifs_match_a_fresh_pre_filter(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    while checked < 5:
        node_list, pods, pool = random_cluster(rng)
        incoming = random_pod(rng, "in", chance=1.0)
        cluster = table_of(node_list, pods, capacity=16)
        handle = NamespaceHandle(cluster)
        plugin = InterPodAffinity(None, handle)
        state = CycleState()
        if plugin.pre_filter(state, incoming, handle.snapshot)[1] is not None:
            continue
        target = first_with_pods(rng, cluster)
        if target is None:
            continue
        checked += 1
        # what-if: one pod removed from one node, another added to a random node
        what_if = state.clone()
        victim = rng.choice(list(target.pods.values()))
        removed_from = target.clone()
        removed_from.remove_pod(victim.uid)
        assert plugin.remove_pod(what_if, incoming, victim, removed_from) is None
        added = random_pod(rng, "added", chance=0.8, pool=pool)
        host = rng.choice(cluster.infos)
        added = pod("added", host.name, added.labels, namespace=added.namespace, affinity=added.affinity)
        grown = host.clone()
        grown.add_pod(added)
        assert plugin.add_pod(what_if, incoming, added, grown) is None
        per_node, batch = per_node_and_batch_filter(plugin, what_if, incoming, cluster)

        # the same change for real, judged by a fresh plugin
        real = table_of(node_list, [p for p in pods if p.uid != victim.uid] + [added], capacity=16)
        real_handle = NamespaceHandle(real)
        skips, expected = oracle_filter(real_handle, incoming)
        fresh = InterPodAffinity(None, real_handle)
        fresh_state = CycleState()
        fresh_status = fresh.pre_filter(fresh_state, incoming, real_handle.snapshot)[1]
        assert (fresh_status is not None and fresh_status.is_skip) == skips
        if skips:
            expected = [OK] * len(node_list)
        assert [verdict(s) for s in per_node] == expected
        assert [verdict(s) for s in batch] == expected
        # the original state is untouched by the what-if
        check_untouched = per_node_and_batch_filter(plugin, state, incoming, cluster)
        _, before = oracle_filter(handle, incoming)
        assert [verdict(s) for s in check_untouched[0]] == before
        assert [verdict(s) for s in check_untouched[1]] == before


def test_without_a_handle_pre_score_counts_the_pods_of_the_candidates() -> None:
    cluster = table_of(
        nodes(), [pod("db", "n1", DB), pod("fan", "n3", affinity=affinity(required=[term(WEB)]))]
    )
    plugin = InterPodAffinity(None, None)
    incoming = pod("in", "", WEB, affinity=affinity(preferred=[(5, term(DB))]))
    state = CycleState()
    assert plugin.pre_score(state, incoming, cluster.infos) is None
    assert [plugin.score(state, incoming, info) for info in cluster.infos] == [5, 5, 1, 0]
    only_n3 = CycleState()
    assert plugin.pre_score(only_n3, incoming, [cluster.info("n3")]) is None
    assert plugin.score(only_n3, incoming, cluster.info("n3")) == 1
