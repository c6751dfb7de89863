"""PodTopologySpread: skew filtering, spread scoring, defaults, preemption updates and queueing hints."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.api import Node, Pod
from scheduler.config.args import PodTopologySpreadArgs
from scheduler.framework import Code, CycleState, NodeInfo, QueueingHint, Status
from scheduler.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from scheduler.plugins.podtopologyspread.defaults import default_selector
from scheduler.testing.builders import (
    Cluster,
    FakeHandle,
    FakeSnapshot,
    expand_verdicts,
    make_node,
    node_dict,
    pod_dict,
    table_of,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
OK = None
SKEW = "skew"
LABEL = "label"


def spread(
    key: str = ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    selector: Mapping[str, Any] | None = FOO,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    c.update(extra)
    return c


def pod(
    name: str,
    node: str = "",
    labels: Mapping[str, str] | None = None,
    constraints: Sequence[Mapping[str, Any]] = (),
    **kwargs: Any,
) -> Pod:
    d = pod_dict(name, node_name=node, labels={"foo": ""} if labels is None else labels, **kwargs)
    if constraints:
        d["spec"]["topologySpreadConstraints"] = [dict(c) for c in constraints]
    return Pod.from_dict(d)


def four_nodes(**taints: Any) -> list:
    """node-a, node-b in zone1; node-x, node-y in zone2."""
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [make_node(n, labels={ZONE: z}, taints=taints.get(n, ())) for n, z in zones.items()]


def run_filter(plugin: PodTopologySpread, handle: FakeHandle, incoming: Pod) -> tuple[Status | None, list]:
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, handle.snapshot)
    if status is not None:
        return status, []
    return None, [plugin.filter(state, incoming, info) for info in handle.snapshot.node_infos()]


def verdict(status: Status | None) -> str | None:
    if status is None:
        return OK
    if status.reasons == (ERR_REASON_NODE_LABEL_NOT_MATCH,):
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return LABEL
    assert status.reasons == (ERR_REASON_CONSTRAINTS_NOT_MATCH,)
    assert status.code == Code.UNSCHEDULABLE
    return SKEW


FILTER_CASES = [
    pytest.param(
        pod("in", constraints=[spread()]),
        four_nodes(),
        [],
        [OK, OK, OK, OK],
        id="with no existing pods every node fits",
    ),
    pytest.param(
        pod("in", constraints=[spread()]),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b"), pod("p-x1", "node-x")],
        [SKEW, SKEW, OK, OK],
        id="a zone already one ahead rejects the next matching pod",
    ),
    pytest.param(
        pod("in", labels={}, constraints=[spread()]),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b"), pod("p-x1", "node-x")],
        [OK, OK, OK, OK],
        id="an incoming pod that does not match its own selector adds no skew",
    ),
    pytest.param(
        pod("in", constraints=[spread()]),
        four_nodes(),
        [pod("p-a1", "node-a", namespace="other"), pod("p-b1", "node-b", namespace="other")],
        [OK, OK, OK, OK],
        id="pods in other namespaces are not counted",
    ),
    pytest.param(
        pod("in", constraints=[spread()]),
        [*four_nodes()[:2], make_node("node-x")],
        [pod("p-a1", "node-a")],
        [OK, OK, LABEL],
        id="a node without the topology key is unresolvable while a lone zone is its own minimum",
    ),
    pytest.param(
        pod("in", constraints=[spread(minDomains=3)]),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-x1", "node-x")],
        [SKEW, SKEW, SKEW, SKEW],
        id="fewer domains than minDomains make the global minimum zero",
    ),
    pytest.param(
        pod("in", constraints=[spread(minDomains=2)]),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-x1", "node-x")],
        [OK, OK, OK, OK],
        id="enough domains for minDomains keep the real global minimum",
    ),
    pytest.param(
        pod("in", constraints=[spread()], node_selector={ZONE: "zone1"}),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b")],
        [OK, OK, OK, OK],
        id="nodes outside the pod's node affinity are not domains under the default Honor policy",
    ),
    pytest.param(
        pod("in", constraints=[spread(nodeAffinityPolicy="Ignore")], node_selector={ZONE: "zone1"}),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b")],
        [SKEW, SKEW, OK, OK],
        id="nodeAffinityPolicy Ignore counts every node's domain",
    ),
    pytest.param(
        pod("in", constraints=[spread()]),
        four_nodes(
            **{"node-x": [("dedicated", "x", "NoSchedule")], "node-y": [("dedicated", "x", "NoSchedule")]}
        ),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b")],
        [SKEW, SKEW, OK, OK],
        id="tainted nodes still count under the default nodeTaintsPolicy Ignore",
    ),
    pytest.param(
        pod("in", constraints=[spread(nodeTaintsPolicy="Honor")]),
        four_nodes(
            **{"node-x": [("dedicated", "x", "NoSchedule")], "node-y": [("dedicated", "x", "NoSchedule")]}
        ),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b")],
        [OK, OK, OK, OK],
        id="nodeTaintsPolicy Honor drops domains of untolerated tainted nodes",
    ),
    pytest.param(
        pod("in", labels={"foo": "", "rev": "2"}, constraints=[spread(matchLabelKeys=["rev"])]),
        four_nodes(),
        [
            pod("p-a1", "node-a", labels={"foo": "", "rev": "1"}),
            pod("p-b1", "node-b", labels={"foo": "", "rev": "1"}),
        ],
        [OK, OK, OK, OK],
        id="matchLabelKeys restrict counting to pods with the same label value",
    ),
    pytest.param(
        pod("in", labels={"foo": "", "rev": "1"}, constraints=[spread(matchLabelKeys=["rev"])]),
        four_nodes(),
        [
            pod("p-a1", "node-a", labels={"foo": "", "rev": "1"}),
            pod("p-b1", "node-b", labels={"foo": "", "rev": "1"}),
        ],
        [SKEW, SKEW, OK, OK],
        id="matchLabelKeys still count pods of the same revision",
    ),
    pytest.param(
        pod(
            "in",
            labels={"foo": "", "rev": "1"},
            constraints=[spread(selector=None, matchLabelKeys=["rev"])],
        ),
        four_nodes(),
        [
            pod("p-a1", "node-a", labels={"foo": "", "rev": "1"}),
            pod("p-b1", "node-b", labels={"foo": "", "rev": "1"}),
        ],
        [OK, OK, OK, OK],
        id="a constraint without labelSelector matches no pod, matchLabelKeys or not",
    ),
    pytest.param(
        pod("in", constraints=[spread(), spread(HOST)]),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-x1", "node-x"), pod("p-x2", "node-y")],
        [SKEW, OK, SKEW, SKEW],
        id="every constraint must hold: zone and hostname together",
    ),
    pytest.param(
        pod("in", constraints=[spread(max_skew=2)]),
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-b1", "node-b")],
        [SKEW, SKEW, OK, OK],
        id="maxSkew bounds the difference to the emptiest domain",
    ),
]


@pytest.mark.parametrize(("incoming", "nodes", "pods", "expected"), FILTER_CASES)
def test_filter_verdict_per_node(incoming: Pod, nodes: list, pods: list, expected: list) -> None:
    handle = FakeHandle(table_of(nodes, pods, capacity=8))
    status, verdicts = run_filter(PodTopologySpread(None, handle), handle, incoming)
    assert status is None
    assert [verdict(v) for v in verdicts] == expected


def test_terminating_pods_are_not_counted() -> None:
    terminating = pod_dict("p-a1", node_name="node-a", labels={"foo": ""})
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    handle = FakeHandle(table_of(four_nodes(), [terminating, pod("p-b1", "node-b")]))
    _, verdicts = run_filter(PodTopologySpread(None, handle), handle, pod("in", constraints=[spread()]))
    # zone1 counts 1 (not 2): 1 + 1 - 0 > 1 still rejects zone1, zone2 passes
    assert [verdict(v) for v in verdicts] == [SKEW, SKEW, OK, OK]


def test_an_empty_selector_counts_no_placed_pods_as_upstream() -> None:
    # Upstream's countPodsMatchSelector counts nothing for `labelSelector: {}`: zone1's two pods
    # do not make it fuller than zone2, so every node fits.
    handle = FakeHandle(table_of(four_nodes(), [pod("p-a1", "node-a"), pod("p-b1", "node-b")]))
    _, verdicts = run_filter(
        PodTopologySpread(None, handle), handle, pod("in", constraints=[spread(selector={})])
    )
    assert [verdict(v) for v in verdicts] == [OK, OK, OK, OK]


def test_pod_without_constraints_skips_the_filter() -> None:
    handle = FakeHandle(table_of(four_nodes()))
    status, _ = run_filter(PodTopologySpread(None, handle), handle, pod("in"))
    assert status is not None and status.is_skip


def test_schedule_anyway_constraints_do_not_filter() -> None:
    handle = FakeHandle(table_of(four_nodes(), [pod("p-a1", "node-a"), pod("p-b1", "node-b")]))
    status, _ = run_filter(
        PodTopologySpread(None, handle), handle, pod("in", constraints=[spread(when="ScheduleAnyway")])
    )
    assert status is not None and status.is_skip


def test_a_constraint_without_when_unsatisfiable_neither_filters_nor_scores() -> None:
    handle = FakeHandle(table_of(four_nodes(), [pod("p-a1", "node-a"), pod("p-b1", "node-b")]))
    plugin = PodTopologySpread(None, handle)
    unspecified = {"maxSkew": 1, "topologyKey": ZONE, "labelSelector": FOO}
    incoming = pod("in", constraints=[unspecified])
    status, _ = run_filter(plugin, handle, incoming)
    assert status is not None and status.is_skip
    status = plugin.pre_score(CycleState(), incoming, list(handle.snapshot.node_infos()))
    assert status is not None and status.is_skip


def test_invalid_selector_is_an_error() -> None:
    bad = spread(selector={"matchExpressions": [{"key": "foo", "operator": "In"}]})
    handle = FakeHandle(table_of(four_nodes()))
    status, _ = run_filter(PodTopologySpread(None, handle), handle, pod("in", constraints=[bad]))
    assert status is not None and status.code == Code.ERROR


def test_add_and_remove_pod_update_counts_for_preemption() -> None:
    victims = [pod("p-a1", "node-a"), pod("p-b1", "node-b"), pod("p-x1", "node-x")]
    handle = FakeHandle(table_of(four_nodes(), victims))
    plugin = PodTopologySpread(None, handle)
    incoming = pod("in", constraints=[spread()])
    state = CycleState()
    plugin.pre_filter(state, incoming, handle.snapshot)
    node_a = handle.snapshot.get("node-a")
    assert verdict(plugin.filter(state, incoming, node_a)) == SKEW

    what_if = state.clone()
    assert plugin.remove_pod(what_if, incoming, victims[0], node_a) is None
    assert plugin.filter(what_if, incoming, node_a) is None
    assert verdict(plugin.filter(state, incoming, node_a)) == SKEW  # the original is untouched

    plugin.add_pod(what_if, incoming, pod("new", "node-y"), handle.snapshot.get("node-y"))
    plugin.add_pod(what_if, incoming, pod("new2", "node-y"), handle.snapshot.get("node-y"))
    # zone1 = 1, zone2 = 3: zone2 is now the crowded one
    assert plugin.filter(what_if, incoming, node_a) is None
    assert verdict(plugin.filter(what_if, incoming, handle.snapshot.get("node-x"))) == SKEW


# ---------------------------------------------------------------------------- scoring


def run_score(plugin: PodTopologySpread, handle: FakeHandle, incoming: Pod) -> tuple[list[int], list[int]]:
    state = CycleState()
    infos = list(handle.snapshot.node_infos())
    status = plugin.pre_score(state, incoming, infos)
    assert status is None
    raw = [plugin.score(state, incoming, info) for info in infos]
    normalized = np.array(raw, dtype=np.int64)
    plugin.normalize_scores(state, incoming, normalized)
    return raw, normalized.tolist()


SCORE_CASES = [
    pytest.param(
        [spread(when="ScheduleAnyway")],
        four_nodes(),
        [pod("p-a1", "node-a"), pod("p-a2", "node-a"), pod("p-b1", "node-b"), pod("p-x1", "node-x")],
        [4, 4, 1, 1],
        [25, 25, 100, 100],
        id="zone counts are weighted by log(number of zones + 2)",
    ),
    pytest.param(
        [spread(HOST, when="ScheduleAnyway")],
        [make_node("a"), make_node("b"), make_node("c")],
        [pod("p-a1", "a"), pod("p-a2", "a"), pod("p-b1", "b")],
        [3, 2, 0],
        [0, 33, 100],
        id="hostname counts are read from each node",
    ),
    pytest.param(
        [spread(HOST, max_skew=2, when="ScheduleAnyway")],
        [make_node("a"), make_node("b"), make_node("c")],
        [pod("p-a1", "a"), pod("p-a2", "a"), pod("p-b1", "b")],
        [4, 3, 1],
        [25, 50, 100],
        id="a larger maxSkew adds maxSkew - 1 to every score",
    ),
    pytest.param(
        [spread(when="ScheduleAnyway")],
        [*four_nodes()[:2], make_node("node-z")],
        [pod("p-a1", "node-a")],
        [1, 1, 0],
        [100, 100, 0],
        id="a node missing the topology key is ignored and normalised to zero",
    ),
    pytest.param(
        [spread(when="ScheduleAnyway")],
        four_nodes(),
        [],
        [0, 0, 0, 0],
        [100, 100, 100, 100],
        id="all-zero scores normalise to the maximum",
    ),
]


@pytest.mark.parametrize(("constraints", "nodes", "pods", "raw", "normalized"), SCORE_CASES)
def test_score_raw_and_normalized(
    constraints: list, nodes: list, pods: list, raw: list, normalized: list
) -> None:
    handle = FakeHandle(table_of(nodes, pods, capacity=8))
    got_raw, got_normalized = run_score(
        PodTopologySpread(None, handle), handle, pod("in", constraints=constraints)
    )
    assert got_raw == raw
    assert got_normalized == normalized


def test_pre_score_skips_without_soft_constraints() -> None:
    handle = FakeHandle(table_of(four_nodes()))
    plugin = PodTopologySpread(None, handle)
    status = plugin.pre_score(
        CycleState(), pod("in", constraints=[spread()]), list(handle.snapshot.node_infos())
    )
    assert status is not None and status.is_skip


# ---------------------------------------------------------------------------- defaults


class _Store:
    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self._by_key = {f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o for o in objects}

    def get(self, key: str) -> Any | None:
        return self._by_key.get(key)

    def list(self) -> list[Any]:
        return list(self._by_key.values())


class ListerHandle(FakeHandle):
    """A handle whose listers serve the given API objects by plural resource name."""

    def __init__(self, cluster: Any = None, **objects: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(cluster)
        self._stores = {resource: _Store(items) for resource, items in objects.items()}

    def lister(self, resource: str) -> _Store:
        return self._stores[resource]  # KeyError: not watched, as the real handle


def obj(name: str, selector: Any, namespace: str = "default") -> dict[str, Any]:
    spec = {} if selector is None else {"selector": selector}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def owned_by(kind: str, name: str, api_version: str = "apps/v1", controller: bool = True) -> dict:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"u-{name}",
        "controller": controller,
    }


def owned_pod(labels: Mapping[str, str], *owners: Mapping[str, Any], node: str = "") -> Pod:
    d = pod_dict("in", labels=labels, node_name=node)
    d["metadata"]["ownerReferences"] = [dict(o) for o in owners]
    return Pod.from_dict(d)


WEB = {"app": "web", "tier": "front"}
RS_SELECTOR = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}


@pytest.mark.parametrize(
    ("objects", "owners", "expected"),
    [
        pytest.param({}, (), set(), id="no workloads and no listers give an empty selector"),
        pytest.param(
            {"services": [obj("s", {"app": "web"})]},
            (),
            {("app", "In", ("web",))},
            id="a service selecting the pod gives its selector",
        ),
        pytest.param(
            {"services": [obj("s", {"app": "web"}), obj("t", {"tier": "front"})]},
            (),
            {("app", "In", ("web",)), ("tier", "In", ("front",))},
            id="selectors of several services are merged",
        ),
        pytest.param(
            {
                "services": [
                    obj("other-ns", {"app": "web"}, namespace="other"),
                    obj("other-app", {"app": "db"}),
                    obj("headless", None),
                ]
            },
            (),
            set(),
            id="services elsewhere, not selecting the pod or without selector are ignored",
        ),
        pytest.param(
            {"services": [obj("s", {"app": "web"})], "replicasets": [obj("rs", RS_SELECTOR)]},
            (owned_by("ReplicaSet", "rs"),),
            {("app", "In", ("web",)), ("tier", "Exists", ())},
            id="a controlling replicaset adds its selector's requirements",
        ),
        pytest.param(
            {"statefulsets": [obj("ss", {"matchLabels": {"tier": "front"}})]},
            (owned_by("StatefulSet", "ss"),),
            {("tier", "In", ("front",))},
            id="a controlling statefulset gives its selector",
        ),
        pytest.param(
            {
                "services": [obj("s", {"app": "web"})],
                "replicationcontrollers": [obj("rc", {"tier": "front"})],
            },
            (owned_by("ReplicationController", "rc", api_version="v1"),),
            {("app", "In", ("web",)), ("tier", "In", ("front",))},
            id="a controlling replication controller's selector is merged with the services'",
        ),
        pytest.param(
            {"replicasets": [obj("rs", RS_SELECTOR)]},
            (owned_by("ReplicaSet", "rs", controller=False),),
            set(),
            id="an owner that is not the controller is ignored",
        ),
        pytest.param(
            {"replicasets": [obj("rs", RS_SELECTOR)]},
            (owned_by("ReplicaSet", "gone"),),
            set(),
            id="a controller missing from the lister adds nothing",
        ),
        pytest.param(
            {"replicasets": [obj("rs", RS_SELECTOR)]},
            (owned_by("Job", "rs", api_version="batch/v1"),),
            set(),
            id="other controller kinds add nothing",
        ),
        pytest.param(
            {"replicasets": [obj("rs", {"matchExpressions": [{"key": "a", "operator": "In"}]})]},
            (owned_by("ReplicaSet", "rs"),),
            set(),
            id="an invalid controller selector adds nothing",
        ),
    ],
)
def test_default_selector_comes_from_the_pods_workloads(objects: dict, owners: tuple, expected: set) -> None:
    selector = default_selector(ListerHandle(None, **objects), owned_pod(WEB, *owners))
    assert {(r.key, r.operator, tuple(sorted(r.values))) for r in selector.requirements} == expected


def test_system_defaults_need_a_workload_selector() -> None:
    handle = ListerHandle(
        table_of(four_nodes(), [pod("p-a1", "node-a", labels={"app": "web"})]),
        services=[obj("db", {"app": "db"})],
    )
    plugin = PodTopologySpread(None, handle)
    status = plugin.pre_score(
        CycleState(), pod("in", labels={"app": "web"}), list(handle.snapshot.node_infos())
    )
    assert status is not None and status.is_skip


def test_system_defaults_spread_a_workload_softly_even_over_nodes_without_zone() -> None:
    nodes = [make_node("a", labels={ZONE: "z1"}), make_node("b", labels={ZONE: "z2"}), make_node("c")]
    pods = [pod("p1", "a", labels={"app": "web"}), pod("p2", "a", labels={"app": "web"})]
    handle = ListerHandle(table_of(nodes, pods), services=[obj("web", {"app": "web"})])
    plugin = PodTopologySpread(PodTopologySpreadArgs(), handle)
    incoming = pod("in", labels={"app": "web"})
    status, _ = run_filter(plugin, handle, incoming)
    assert status is not None and status.is_skip  # system defaults are ScheduleAnyway only
    raw, normalized = run_score(plugin, handle, incoming)
    # zone domains {z1: 2, z2: 0, "": 0} weigh log(5), 3 hosts weigh log(5) too, maxSkew 3 and 5 add 2
    # and 4; node c has no zone label, so only its host term counts
    assert raw == [12, 6, 2]
    assert normalized == [16, 66, 100]


def test_list_defaults_apply_hard_constraints_with_the_workload_selector() -> None:
    args = PodTopologySpreadArgs(
        default_constraints=[{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
        defaulting_type="List",
    )
    pods = [pod("p1", "node-a", labels={"app": "web"}), pod("p2", "node-b", labels={"app": "db"})]
    rs = obj("web-1", {"matchLabels": {"app": "web"}})
    handle = ListerHandle(table_of(four_nodes(), pods), replicasets=[rs])
    incoming = owned_pod({"app": "web"}, owned_by("ReplicaSet", "web-1"))
    _, verdicts = run_filter(PodTopologySpread(args, handle), handle, incoming)
    assert [verdict(v) for v in verdicts] == [SKEW, SKEW, OK, OK]


def test_pods_with_own_constraints_ignore_the_defaults() -> None:
    args = PodTopologySpreadArgs(
        default_constraints=[{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
        defaulting_type="List",
    )
    handle = ListerHandle(
        table_of(four_nodes(), [pod("p1", "node-a", labels={"app": "web"})]),
        services=[obj("s", {"app": "web"})],
    )
    own = [spread(HOST, selector={"matchLabels": {"app": "web"}})]
    _, verdicts = run_filter(
        PodTopologySpread(args, handle), handle, pod("in", labels={"app": "web"}, constraints=own)
    )
    assert [verdict(v) for v in verdicts] == [SKEW, OK, OK, OK]


# ---------------------------------------------------------------------------- queueing hints


def hints(plugin: PodTopologySpread) -> dict[str, Any]:
    return {h.event.resource: h.hint for h in plugin.events_to_register()}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            None, pod("p", "node-a"), QueueingHint.QUEUE, id="an assigned matching pod added queues"
        ),
        pytest.param(
            None, pod("p", "node-a", labels={}), QueueingHint.SKIP, id="a non-matching pod added skips"
        ),
        pytest.param(None, pod("p"), QueueingHint.SKIP, id="an unassigned pod added skips"),
        pytest.param(
            None,
            pod("p", nominated_node_name="node-a"),
            QueueingHint.QUEUE,
            id="a matching pod nominated to a node counts as placed and queues",
        ),
        pytest.param(
            None,
            pod("p", "node-a", namespace="other"),
            QueueingHint.SKIP,
            id="a pod in another namespace skips",
        ),
        pytest.param(pod("p", "node-a"), None, QueueingHint.QUEUE, id="a matching pod deleted queues"),
        pytest.param(
            pod("p", "node-a", labels={}),
            pod("p", "node-a"),
            QueueingHint.QUEUE,
            id="a label update that starts matching queues",
        ),
        pytest.param(
            pod("p", "node-a", labels={"foo": "", "x": "1"}),
            pod("p", "node-a", labels={"foo": "", "x": "2"}),
            QueueingHint.SKIP,
            id="a label update unrelated to the selector skips",
        ),
    ],
)
def test_pod_event_hints(old: Pod | None, new: Pod | None, expected: QueueingHint) -> None:
    plugin = PodTopologySpread(None, FakeHandle())
    target = pod("in", constraints=[spread()])
    assert hints(plugin)["Pod"](target, old, new) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            None, make_node("n", labels={ZONE: "z"}), QueueingHint.QUEUE, id="a node with the key added"
        ),
        pytest.param(None, make_node("n"), QueueingHint.SKIP, id="a node without the key added"),
        pytest.param(
            make_node("n", labels={ZONE: "z1"}),
            make_node("n", labels={ZONE: "z2"}),
            QueueingHint.QUEUE,
            id="a node moved to another zone",
        ),
        pytest.param(
            make_node("n", labels={ZONE: "z1"}),
            make_node("n", labels={ZONE: "z1", "x": "y"}),
            QueueingHint.SKIP,
            id="an unrelated label change",
        ),
        pytest.param(
            make_node("n", labels={ZONE: "z"}), None, QueueingHint.QUEUE, id="a node with the key deleted"
        ),
    ],
)
def test_node_event_hints(old: Any, new: Any, expected: QueueingHint) -> None:
    plugin = PodTopologySpread(None, FakeHandle())
    assert hints(plugin)["Node"](pod("in", constraints=[spread()]), old, new) is expected


# ---------------------------------------------------------------------------- batch forms

KEYS = [ZONE, HOST, "rack"]


def random_spread_node(rng: random.Random, name: str) -> Any:
    labels = {}
    if rng.random() < 0.9:
        labels[ZONE] = rng.choice(["z1", "z2", "z3", "z4"])
    if rng.random() < 0.7:
        labels["rack"] = rng.choice(["r1", "r2"])
    if rng.random() < 0.5:
        labels["disk"] = "ssd"
    node = make_node(
        name, labels=labels, taints=[("dedicated", "x", "NoSchedule")] if rng.random() < 0.2 else ()
    )
    if rng.random() < 0.1:  # a node without even a hostname label
        raw = node_dict(name, labels=labels)
        del raw["metadata"]["labels"][HOST]
        node = Node.from_dict(raw)
    return node


def random_constraint(rng: random.Random, when: str) -> dict[str, Any]:
    selector = rng.choice([FOO, {"matchLabels": {"app": "a"}}, {"matchLabels": {"app": "b"}}])
    extra: dict[str, Any] = {}
    if rng.random() < 0.3:
        extra["minDomains"] = rng.randint(1, 5)
    if rng.random() < 0.3:
        extra["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.3:
        extra["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
    return spread(rng.choice(KEYS), rng.randint(1, 3), when, selector, **extra)


def random_spread_pod(rng: random.Random, name: str, node: str = "", constraints: Sequence[Any] = ()) -> Pod:
    labels = {k: v for k, v in (("foo", ""), ("app", rng.choice("ab"))) if rng.random() < 0.6}
    kwargs: dict[str, Any] = {}
    if not node and rng.random() < 0.3:
        kwargs["node_selector"] = {"disk": "ssd"}
    if node and rng.random() < 0.05:
        kwargs["namespace"] = "other"
    return pod(name, node, labels=labels, constraints=constraints, **kwargs)


def random_spread_cluster(rng: random.Random, count: int) -> tuple[FakeHandle, list[Node]]:
    nodes = [random_spread_node(rng, f"n{i}") for i in range(count)]
    pods = [random_spread_pod(rng, f"e{j}", rng.choice(nodes).name) for j in range(count * 2)]
    return FakeHandle(table_of(nodes, pods, capacity=8)), nodes


def filter_both_ways(
    plugin: PodTopologySpread, state: CycleState, incoming: Pod, handle: FakeHandle
) -> tuple[list, list]:
    infos = handle.snapshot.node_infos()
    per_node = [plugin.filter(state, incoming, info) for info in infos]
    slots = np.array([info.slot for info in infos], dtype=np.int64)
    batch = expand_verdicts(plugin.filter_nodes(state, incoming, handle.snapshot.table, slots), len(infos))
    return per_node, batch


@pytest.mark.parametrize("seed", range(25))
def test_batch_filter_agrees_with_the_per_node_filter_on_random_clusters(seed: int) -> None:
    rng = random.Random(seed)
    handle, _ = random_spread_cluster(rng, rng.randint(1, 30))
    plugin = PodTopologySpread(None, handle)
    rejected = 0
    for k in range(4):
        constraints = [random_constraint(rng, "DoNotSchedule") for _ in range(rng.randint(1, 3))]
        incoming = random_spread_pod(rng, f"in{k}", constraints=constraints)
        state = CycleState()
        _, status = plugin.pre_filter(state, incoming, handle.snapshot)
        assert status is None
        per_node, batch = filter_both_ways(plugin, state, incoming, handle)
        assert batch == per_node, f"seed {seed}"
        rejected += sum(s is not None for s in batch)

        # preemption's what-ifs: counts patched by RemovePod / AddPod on a cloned state
        what_if = state.clone()
        infos = handle.snapshot.node_infos()
        for info in rng.sample(list(infos), min(3, len(infos))):
            for victim in list(info.pods.values())[:2]:
                plugin.remove_pod(what_if, incoming, victim, info)
            plugin.add_pod(what_if, incoming, random_spread_pod(rng, f"new{k}", info.name), info)
        per_node, batch = filter_both_ways(plugin, what_if, incoming, handle)
        assert batch == per_node, f"seed {seed} after what-ifs"
    if seed == 0:
        assert rejected  # the cases exercise rejections, not only passes


def score_both_ways(plugin: PodTopologySpread, incoming: Pod, handle: FakeHandle, chosen: list) -> tuple:
    state = CycleState()
    status = plugin.pre_score(state, incoming, chosen)
    if status is not None:
        return status, None
    per_node = [plugin.score(state, incoming, info) for info in chosen]
    slots = np.array([info.slot for info in chosen], dtype=np.int64)
    batch = plugin.score_nodes(state, incoming, handle.snapshot.table, slots).tolist()
    return per_node, batch


@pytest.mark.parametrize("seed", range(25))
def test_batch_score_agrees_with_the_per_node_score_on_random_clusters(seed: int) -> None:
    rng = random.Random(1000 + seed)
    handle, _ = random_spread_cluster(rng, rng.randint(1, 30))
    plugin = PodTopologySpread(None, handle)
    for k in range(4):
        constraints = [random_constraint(rng, "ScheduleAnyway") for _ in range(rng.randint(1, 3))]
        incoming = random_spread_pod(rng, f"in{k}", constraints=constraints)
        infos = list(handle.snapshot.node_infos())
        chosen = rng.sample(infos, rng.randint(1, len(infos)))
        per_node, batch = score_both_ways(plugin, incoming, handle, chosen)
        assert batch == per_node, f"seed {seed}"


def test_batch_forms_follow_nodes_whose_labels_change_or_that_come_and_go() -> None:
    cluster = table_of(four_nodes(), [pod("p-a1", "node-a"), pod("p-b1", "node-b")])
    plugin = PodTopologySpread(None, FakeHandle(cluster))
    incoming = pod("in", constraints=[spread()])

    def batch_verdicts(infos: list[NodeInfo]) -> list:
        snapshot = FakeSnapshot(Cluster(cluster.table, infos))
        state = CycleState()
        plugin.pre_filter(state, incoming, snapshot)
        per_node = [plugin.filter(state, incoming, info) for info in infos]
        slots = np.array([info.slot for info in infos], dtype=np.int64)
        batch = expand_verdicts(plugin.filter_nodes(state, incoming, cluster.table, slots), len(infos))
        assert batch == per_node
        return [verdict(v) for v in batch]

    node_a, node_b, node_x, node_y = cluster.infos
    assert batch_verdicts(cluster.infos) == [SKEW, SKEW, OK, OK]
    # node-b moves to zone2: zone1 = 1, zone2 = 1, every node fits
    node_b.node = make_node("node-b", labels={ZONE: "zone2"})
    cluster.table.sync_row(node_b)
    assert batch_verdicts(cluster.infos) == [OK, OK, OK, OK]
    # node-y goes away and node-z (a new, empty zone3) joins: zone3's 0 is the minimum
    cluster.table.remove(node_y)
    node_z = NodeInfo(make_node("node-z", labels={ZONE: "zone3"}))
    cluster.table.add(node_z)
    assert batch_verdicts([node_a, node_b, node_x, node_z]) == [SKEW, SKEW, SKEW, OK]


@pytest.mark.parametrize(
    ("with_handle", "raw"),
    [
        pytest.param(True, [3, 1], id="with a cluster view, pods on every node of a domain count"),
        pytest.param(False, [1, 1], id="without one, only the candidates' pods count"),
    ],
)
def test_pre_score_counts_the_cluster_it_can_see(with_handle: bool, raw: list[int]) -> None:
    cluster = table_of(four_nodes(), [pod("p-a1", "node-a"), pod("p-b1", "node-b"), pod("p-x1", "node-x")])
    plugin = PodTopologySpread(None, FakeHandle(cluster) if with_handle else None)
    incoming = pod("in", constraints=[spread(when="ScheduleAnyway")])
    chosen = [cluster.info("node-a"), cluster.info("node-x")]
    state = CycleState()
    assert plugin.pre_score(state, incoming, chosen) is None
    slots = np.array([info.slot for info in chosen], dtype=np.int64)
    assert [plugin.score(state, incoming, info) for info in chosen] == raw
    assert plugin.score_nodes(state, incoming, cluster.table, slots).tolist() == raw


def test_domains_follow_nodes_entering_or_leaving_the_pods_node_affinity() -> None:
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    pool = {"node-a", "node-x"}
    nodes = [make_node(n, labels={ZONE: z, **({"pool": "p"} if n in pool else {})}) for n, z in zones.items()]
    cluster = table_of(nodes, [pod("p-a1", "node-a"), pod("p-b1", "node-b")])
    handle = FakeHandle(cluster)
    plugin = PodTopologySpread(None, handle)
    incoming = pod("in", constraints=[spread()], node_selector={"pool": "p"})

    def verdicts() -> list:
        state = CycleState()
        plugin.pre_filter(state, incoming, handle.snapshot)
        per_node, batch = filter_both_ways(plugin, state, incoming, handle)
        assert batch == per_node
        return [verdict(v) for v in batch]

    # domains: zone1 (node-a: 1 pod) and zone2 (node-x: 0 pods)
    assert verdicts() == [SKEW, SKEW, OK, OK]
    node_x = cluster.info("node-x")
    node_x.node = make_node("node-x", labels={ZONE: "zone2"})  # leaves the pool
    cluster.table.sync_row(node_x)
    # zone1 is the only domain left, so it is its own minimum
    assert verdicts() == [OK, OK, OK, OK]
