"""InterPodAffinity: required terms filter (both directions), preferred terms score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from builders import FakeHandle, make_node, make_pod, table_of

from scheduler.api import Pod
from scheduler.config.args import InterPodAffinityArgs
from scheduler.framework import Code, CycleState, QueueingHint, Status
from scheduler.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
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
        [AFF, AFF, OK, AFF],
        id="matchLabelKeys narrow affinity to pods with the same label value",
    ),
    pytest.param(
        pod(
            "in",
            "",
            {"app": "web", "tenant": "a"},
            affinity=affinity(anti=[term({"app": "web"}, HOST, mismatchLabelKeys=["tenant"])]),
        ),
        [
            pod("web-b", "n1", {"app": "web", "tenant": "b"}),
            pod("web-a", "n2", {"app": "web", "tenant": "a"}),
        ],
        [ANTI, OK, OK, OK],
        id="mismatchLabelKeys aim anti-affinity at other tenants only",
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
