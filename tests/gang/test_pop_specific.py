"""The queue hands a group's other pending pods to the pod-group cycle (upstream's PopSpecificPod)."""

from __future__ import annotations

from tests.support.queue import make_pod, make_queue, pop_now


async def test_a_pending_pod_is_taken_from_wherever_it_waits() -> None:
    queue, _ = make_queue()
    queue.add(make_pod("leader"))
    queue.add(make_pod("parked"))
    await pop_now(queue)
    parked = await pop_now(queue)
    parked.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable(parked, queue.scheduling_cycle())  # rejected: in the unschedulable pool
    assert queue.position(parked.pod.uid) == "unschedulable"

    taken = queue.pop_specific(parked.pod)
    assert taken is parked and taken.attempts == 2
    assert queue.position(parked.pod.uid) == "" and queue.has(parked.pod.uid)  # in flight now
    assert queue.pop_specific(make_pod("unknown")) is None


async def test_a_gated_pod_stays_gated() -> None:
    queue, _ = make_queue()
    gated = make_pod("gated", scheduling_gates=("example.com/wait",))
    queue.add(gated)
    assert queue.pop_specific(gated) is None
    assert queue.position(gated.uid) == "gated"


async def test_a_taken_pod_handed_back_waits_for_its_events() -> None:
    queue, _ = make_queue()
    queue.add(make_pod("a"))
    queue.add(make_pod("b"))
    await pop_now(queue)
    other = queue.pop_specific(make_pod("b"))
    assert other is not None
    other.unschedulable_plugins = {"GangScheduling"}
    queue.add_unschedulable(other, queue.scheduling_cycle())
    assert queue.position(other.pod.uid) == "unschedulable"
