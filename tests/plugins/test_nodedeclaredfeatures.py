from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api import Node, Pod
from scheduler.cache import Cache
from scheduler.config import default_config
from scheduler.framework import ActionType, ClusterEvent, Code, CycleState, QueueingHint
from scheduler.framework.interface import NODE, UNSCHEDULED_POD
from scheduler.framework.messages import fit_error_message
from scheduler.plugins import in_tree_registry
from scheduler.plugins.nodedeclaredfeatures import ERR_REASON, NodeDeclaredFeatures, required_features
from scheduler.policy import available_plugins
from scheduler.runtime import Framework
from scheduler.runtime.handle import FrameworkHandle
from scheduler.schedule_one import find_nodes_that_pass_filters
from scheduler.testing.builders import FakeHandle, node_dict, per_node_and_batch_filter, pod_dict, table_of

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NET = "UserNamespacesHostNetworkSupport"


def restart_rule(action: str) -> dict[str, Any]:
    return {"action": action, "exitCodes": {"operator": "In", "values": [42]}}


def pod(
    name: str = "p",
    *,
    uid: str | None = None,
    restart_rules: Sequence[str] = (),
    init_restart_rules: Sequence[str] = (),
    host_network: bool | None = None,
    host_users: bool | None = None,
) -> Pod:
    """A pod whose spec carries the fields features are inferred from."""
    containers = [{"name": "c0", "image": "app"}]
    if restart_rules:
        containers[0] |= {
            "restartPolicy": "Never",
            "restartPolicyRules": [restart_rule(a) for a in restart_rules],
        }
    init = []
    if init_restart_rules:
        init = [
            {
                "name": "i0",
                "image": "init",
                "restartPolicy": "Never",
                "restartPolicyRules": [restart_rule(a) for a in init_restart_rules],
            }
        ]
    obj = pod_dict(name, uid=uid, containers=containers, init_containers=init)
    if host_network is not None:
        obj["spec"]["hostNetwork"] = host_network
    if host_users is not None:
        obj["spec"]["hostUsers"] = host_users
    return Pod.from_dict(obj)


def node(name: str = "n", *features: str) -> Node:
    obj = node_dict(name)
    if features:
        obj["status"]["declaredFeatures"] = list(features)
    return Node.from_dict(obj)


@pytest.mark.parametrize(
    ("case", "the_pod", "required"),
    [
        ("a plain pod requires nothing", pod(), set()),
        ("a container restart rule that restarts all containers requires its feature",
         pod(restart_rules=["RestartAllContainers"]), {RESTART_ALL}),
        ("an init container's restart-all rule counts too",
         pod(init_restart_rules=["RestartAllContainers"]), {RESTART_ALL}),
        ("a rule restarting only its own container requires nothing", pod(restart_rules=["Restart"]), set()),
        ("host networking inside a user namespace requires runtime support",
         pod(host_network=True, host_users=False), {USERNS_HOST_NET}),
        ("host networking with host users requires nothing", pod(host_network=True, host_users=True), set()),
        ("host networking with hostUsers unset requires nothing", pod(host_network=True), set()),
        ("a user namespace without host networking requires nothing", pod(host_users=False), set()),
        ("both at once require both features",
         pod(restart_rules=["Restart", "RestartAllContainers"], host_network=True, host_users=False),
         {RESTART_ALL, USERNS_HOST_NET}),
    ],
)  # fmt: skip
def test_required_features_are_inferred_from_the_pod_spec(
    case: str, the_pod: Pod, required: set[str]
) -> None:
    assert required_features(the_pod) == required


@pytest.mark.parametrize(
    ("case", "the_pod", "declared", "rejected"),
    [
        ("a node declaring the required feature admits the pod",
         pod(restart_rules=["RestartAllContainers"]), [RESTART_ALL], False),
        ("a node declaring more than required admits the pod",
         pod(restart_rules=["RestartAllContainers"]), [RESTART_ALL, USERNS_HOST_NET, "FutureFeature"], False),
        ("a node declaring nothing rejects a pod with a requirement",
         pod(restart_rules=["RestartAllContainers"]), [], True),
        ("a node declaring only other features rejects the pod",
         pod(host_network=True, host_users=False), [RESTART_ALL], True),
        ("a node missing one of two required features rejects the pod",
         pod(restart_rules=["RestartAllContainers"], host_network=True, host_users=False),
         [RESTART_ALL], True),
        ("a pod without requirements fits a node declaring nothing", pod(), [], False),
    ],
)  # fmt: skip
def test_filter(case: str, the_pod: Pod, declared: list[str], rejected: bool) -> None:
    plugin = NodeDeclaredFeatures()
    state = CycleState()
    plugin.pre_filter(state, the_pod, None)  # type: ignore[arg-type]
    cluster = table_of([node("n", *declared)])
    per_node, batch = per_node_and_batch_filter(plugin, state, the_pod, cluster)
    assert per_node == batch
    if rejected:
        assert per_node[0] is not None
        assert per_node[0].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert per_node[0].reasons == (ERR_REASON,)
    else:
        assert per_node[0] is None


def test_pre_filter_skips_a_pod_without_requirements_so_filter_never_runs() -> None:
    state = CycleState()
    result, status = NodeDeclaredFeatures().pre_filter(state, pod(), None)  # type: ignore[arg-type]
    assert result is None
    assert status is not None and status.is_skip


def test_filter_checks_the_requirements_pre_filter_stored() -> None:
    state = CycleState()
    result, status = NodeDeclaredFeatures().pre_filter(
        state,
        pod(host_network=True, host_users=False),
        None,  # type: ignore[arg-type]
    )
    assert (result, status) == (None, None)
    # Filter trusts the cycle state: the same node passes for this pod's requirement set only.
    plugin = NodeDeclaredFeatures()
    info = table_of([node("n", USERNS_HOST_NET)]).infos[0]
    assert plugin.filter(state, pod(restart_rules=["RestartAllContainers"]), info) is None


def test_batch_filter_rejects_only_the_nodes_lacking_a_feature() -> None:
    the_pod = pod(restart_rules=["RestartAllContainers"])
    cluster = table_of(
        [node("old"), node("new", RESTART_ALL), node("other", USERNS_HOST_NET), node("new2", RESTART_ALL)]
    )
    plugin = NodeDeclaredFeatures()
    state = CycleState()
    plugin.pre_filter(state, the_pod, None)  # type: ignore[arg-type]
    per_node, batch = per_node_and_batch_filter(plugin, state, the_pod, cluster)
    assert batch == per_node
    assert [s is not None for s in batch] == [True, False, True, False]


def hints() -> tuple[Any, Any]:
    node_entry, pod_entry = NodeDeclaredFeatures().events_to_register()
    return node_entry, pod_entry


@pytest.mark.parametrize(
    ("case", "old", "new", "hint"),
    [
        ("an added node queues", None, node("n"), QueueingHint.QUEUE),
        ("a node gaining a feature queues", node("n"), node("n", RESTART_ALL), QueueingHint.QUEUE),
        ("a node losing a feature queues", node("n", RESTART_ALL), node("n"), QueueingHint.QUEUE),
        (
            "a node keeping its features skips",
            node("n", RESTART_ALL),
            node("n", RESTART_ALL),
            QueueingHint.SKIP,
        ),
        ("a node without features staying so skips", node("n"), node("n"), QueueingHint.SKIP),
    ],
)
def test_node_change_hint(case: str, old: Node | None, new: Node, hint: QueueingHint) -> None:
    node_entry, _ = hints()
    assert node_entry.hint(pod(restart_rules=["RestartAllContainers"]), old, new) == hint


def test_node_events_cover_additions_and_every_kind_of_update() -> None:
    node_entry, _ = hints()
    assert ClusterEvent(NODE, ActionType.ADD).matches(node_entry.event)
    assert ClusterEvent(NODE, ActionType.UPDATE_OTHER).matches(node_entry.event)
    assert not ClusterEvent(NODE, ActionType.DELETE).matches(node_entry.event)


def test_pod_update_hint_queues_only_the_pod_itself_changing_its_requirements() -> None:
    _, pod_entry = hints()
    assert ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_OTHER).matches(pod_entry.event)
    before = pod("p", uid="u1", restart_rules=["RestartAllContainers"])
    relabelled = pod("p", uid="u1", restart_rules=["RestartAllContainers"])
    relaxed = pod("p", uid="u1", restart_rules=["Restart"])
    other = pod("q", uid="u2")
    assert pod_entry.hint(relaxed, before, relaxed) == QueueingHint.QUEUE
    assert pod_entry.hint(relabelled, before, relabelled) == QueueingHint.SKIP
    assert pod_entry.hint(before, other, pod("q", uid="u2", restart_rules=["RestartAllContainers"])) == (
        QueueingHint.SKIP
    )


def test_it_is_registered_in_tree_under_its_upstream_name() -> None:
    plugin = in_tree_registry()["NodeDeclaredFeatures"](None, FakeHandle())
    assert isinstance(plugin, NodeDeclaredFeatures)


def default_profile_cycle(the_pod: Pod, nodes: Sequence[Node]) -> tuple[CycleState, list[str], str]:
    """PreFilter and Filter of upstream's default profile over ``nodes``: the cycle state, the
    feasible node names and the FailedScheduling text the rejections would give."""
    config = default_config()
    registry = in_tree_registry()
    assert available_plugins(config, registry) == []
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    handle = FrameworkHandle("pyscheduler", None, cache.snapshot, lambda *a: None)  # type: ignore[arg-type]
    fwk = Framework(config.profiles[0], registry, handle)
    snapshot = cache.snapshot()
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, the_pod, snapshot)
    assert status is None
    search = find_nodes_that_pass_filters(fwk, state, the_pod, snapshot, snapshot.order, {})
    feasible, rejections = search.feasible, search.rejections
    names = sorted(snapshot.table.info(int(slot)).name for slot in feasible)
    return state, names, fit_error_message(len(snapshot), rejections.to_diagnosis(snapshot.table))


def test_the_default_profile_places_a_pod_only_on_nodes_declaring_its_features() -> None:
    the_pod = pod(restart_rules=["RestartAllContainers"])
    state, feasible, _ = default_profile_cycle(the_pod, [node("old"), node("new", RESTART_ALL)])
    assert feasible == ["new"]
    assert "NodeDeclaredFeatures" not in state.skip_filter_plugins


def test_the_default_profile_reports_nodes_lacking_features_in_upstreams_words() -> None:
    _, feasible, message = default_profile_cycle(
        pod(host_network=True, host_users=False), [node("a"), node("b")]
    )
    assert feasible == []
    assert message == "0/2 nodes are available: 2 node(s) didn't match Pod's required features."


def test_the_default_profile_skips_the_filter_for_a_pod_without_requirements() -> None:
    state, feasible, _ = default_profile_cycle(pod(), [node("a"), node("b", RESTART_ALL)])
    assert feasible == ["a", "b"]
    assert "NodeDeclaredFeatures" in state.skip_filter_plugins
