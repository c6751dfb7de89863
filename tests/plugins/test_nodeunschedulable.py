from __future__ import annotations

import pytest

from scheduler.framework import Code, CycleState, QueueingHint
from scheduler.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from scheduler.testing.builders import make_node, make_pod, per_node_and_batch_filter, table_of

UNSCHEDULABLE_TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


@pytest.mark.parametrize(
    ("case", "unschedulable", "tolerations", "rejected"),
    [
        ("a schedulable node admits any pod", False, [], False),
        ("a cordoned node rejects a pod without tolerations", True, [], True),
        (
            "a cordoned node admits a pod tolerating the unschedulable taint",
            True,
            [UNSCHEDULABLE_TOLERATION],
            False,
        ),
        ("a cordoned node admits a pod tolerating everything", True, [{"operator": "Exists"}], False),
        (
            "a cordoned node rejects a pod tolerating only NoExecute",
            True,
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
            True,
        ),
    ],
)
def test_filter(case: str, unschedulable: bool, tolerations: list, rejected: bool) -> None:
    pod = make_pod(tolerations=tolerations)
    cluster = table_of([make_node("n", unschedulable=unschedulable)])
    per_node, batch = per_node_and_batch_filter(NodeUnschedulable(), CycleState(), pod, cluster)
    assert per_node == batch
    if rejected:
        assert per_node[0] is not None
        assert per_node[0].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert per_node[0].reasons == (ERR_REASON_UNSCHEDULABLE,)
    else:
        assert per_node[0] is None


def test_batch_filter_rejects_only_the_cordoned_nodes() -> None:
    cluster = table_of([make_node("a"), make_node("b", unschedulable=True), make_node("c")])
    per_node, batch = per_node_and_batch_filter(NodeUnschedulable(), CycleState(), make_pod(), cluster)
    assert batch == per_node
    assert [s is not None for s in batch] == [False, True, False]


@pytest.mark.parametrize(
    ("case", "old", "new", "hint"),
    [
        ("an added schedulable node queues", None, False, QueueingHint.QUEUE),
        ("an added cordoned node skips", None, True, QueueingHint.SKIP),
        ("an uncordoned node queues", True, False, QueueingHint.QUEUE),
        ("a node staying schedulable skips", False, False, QueueingHint.SKIP),
        ("a node being cordoned skips", False, True, QueueingHint.SKIP),
    ],
)
def test_node_change_hint(case: str, old: bool | None, new: bool, hint: QueueingHint) -> None:
    node_event, _ = NodeUnschedulable().events_to_register()
    old_node = None if old is None else make_node("n", unschedulable=old)
    assert node_event.hint is not None
    assert node_event.hint(make_pod(), old_node, make_node("n", unschedulable=new)) == hint


def test_toleration_hint_queues_only_the_pod_itself_gaining_the_toleration() -> None:
    _, pod_event = NodeUnschedulable().events_to_register()
    assert pod_event.hint is not None
    pod = make_pod("p", uid="u1")
    tolerant = make_pod("p", uid="u1", tolerations=[UNSCHEDULABLE_TOLERATION])
    other = make_pod("q", uid="u2", tolerations=[UNSCHEDULABLE_TOLERATION])
    unrelated = make_pod("p", uid="u1", tolerations=[{"key": "x", "operator": "Exists"}])
    assert pod_event.hint(pod, pod, tolerant) == QueueingHint.QUEUE
    assert pod_event.hint(pod, other, other) == QueueingHint.SKIP
    assert pod_event.hint(pod, pod, unrelated) == QueueingHint.SKIP
