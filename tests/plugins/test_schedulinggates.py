from __future__ import annotations

from scheduler.framework import ActionType, Code, QueueingHint
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.testing.builders import make_pod


def test_a_pod_without_gates_is_admitted() -> None:
    assert SchedulingGates().pre_enqueue(make_pod()) is None


def test_a_gated_pod_waits_with_upstreams_message() -> None:
    status = SchedulingGates().pre_enqueue(make_pod(scheduling_gates=["example.com/a", "example.com/b"]))
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [example.com/a example.com/b]"


def test_removing_the_gates_of_the_pod_itself_requeues_it() -> None:
    (event,) = SchedulingGates().events_to_register()
    assert event.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert event.hint is not None
    pod = make_pod("p", uid="u1", scheduling_gates=["g"])
    assert event.hint(pod, pod, make_pod("p", uid="u1")) == QueueingHint.QUEUE
    assert (
        event.hint(pod, make_pod("q", uid="u2", scheduling_gates=["g"]), make_pod("q", uid="u2"))
        == QueueingHint.SKIP
    )
