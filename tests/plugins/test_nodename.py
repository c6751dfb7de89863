from __future__ import annotations

import pytest

from scheduler.framework import ActionType, Code, CycleState
from scheduler.framework.interface import NODE
from scheduler.plugins.nodename import ERR_REASON, NodeName
from scheduler.testing.builders import make_node, make_pod, per_node_and_batch_filter, table_of


@pytest.mark.parametrize(
    ("case", "node_name", "expected_fit"),
    [
        ("a pod without spec.nodeName fits every node", "", [True, True, True]),
        ("a pod naming a node fits only that node", "b", [False, True, False]),
        ("a pod naming an absent node fits none", "z", [False, False, False]),
    ],
)
def test_filter(case: str, node_name: str, expected_fit: list[bool]) -> None:
    cluster = table_of([make_node("a"), make_node("b"), make_node("c")])
    per_node, batch = per_node_and_batch_filter(
        NodeName(), CycleState(), make_pod(node_name=node_name), cluster
    )
    assert per_node == batch
    assert [s is None for s in per_node] == expected_fit
    for status in per_node:
        if status is not None:
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert status.reasons == (ERR_REASON,)


def test_registers_node_add_without_a_hint() -> None:
    (event,) = NodeName().events_to_register()
    assert event.event.resource == NODE
    assert event.event.action == ActionType.ADD
    assert event.hint is None
