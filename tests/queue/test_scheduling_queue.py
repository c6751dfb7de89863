"""SchedulingQueue behaviour with a fake clock: ordering, backoff, hints, gating, in-flight events."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence

import pytest
from prometheus_client import CollectorRegistry

from scheduler.api import Pod
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueuedPodInfo,
    QueueingHint,
    Status,
)
from scheduler.framework.interface import NODE, PERSISTENT_VOLUME, POD, WILDCARD
from scheduler.metrics import SchedulerMetrics
from scheduler.queue import SchedulingQueue, backoff_duration
from tests.support.queue import (
    GANG,
    GATES,
    START,
    FakeClock,
    FakePolicy,
    make_pod,
    make_queue,
    pop_now,
    priority_sort,
)

FIT = "NodeResourcesFit"
NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
PV_ADD = ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD)


def always(hint: QueueingHint) -> Callable[[Pod, object, object], QueueingHint]:
    return lambda pod, old, new: hint


async def reject(queue: SchedulingQueue, *plugins: str, pending: Sequence[str] = ()) -> QueuedPodInfo:
    """Pop the next pod and hand it back rejected by ``plugins`` (no event in between)."""
    info = await pop_now(queue)
    cycle = queue.scheduling_cycle()
    info.unschedulable_plugins = set(plugins)
    info.pending_plugins = set(pending)
    queue.add_unschedulable(info, cycle)
    return info


def where(queue: SchedulingQueue) -> str:
    """The only non-empty sub-queue."""
    busy = [name for name, count in queue.pending().items() if count]
    assert len(busy) == 1, queue.pending()
    return busy[0]


# ---------------------------------------------------------------------------- ordering


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        ([0, 10, 5], ["p1", "p2", "p0"]),
        ([3, 3, 3], ["p0", "p1", "p2"]),
        ([1, 5, 1, 5], ["p1", "p3", "p0", "p2"]),
        ([-5, 0], ["p1", "p0"]),
    ],
    ids=["highest priority first", "fifo among equals", "fifo within each priority", "negative priority"],
)
async def test_active_queue_pops_by_priority_then_arrival(priorities, expected):
    queue, _ = make_queue()
    for i, priority in enumerate(priorities):
        queue.add(make_pod(f"p{i}", priority))
    popped = [(await pop_now(queue)).pod.name for _ in priorities]
    assert popped == expected
    assert queue.scheduling_cycle() == len(priorities)


async def test_adding_the_same_pod_twice_queues_it_once():
    queue, _ = make_queue()
    queue.add(make_pod("a"))
    queue.add(make_pod("a"))
    assert queue.pending() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    await pop_now(queue)
    assert queue.pending()["active"] == 0


async def test_an_update_replaces_the_queued_copy_and_reorders_it():
    queue, _ = make_queue()
    old = make_pod("a", 0)
    queue.add(old)
    queue.add(make_pod("b", 5))
    new = make_pod("a", 10)
    queue.update(old, new)
    first = await pop_now(queue)
    assert first.pod is new
    assert queue.pending()["active"] == 1


async def test_pop_waits_for_a_pod_and_returns_none_once_closed():
    queue, _ = make_queue()
    waiting = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    assert not waiting.done()
    queue.add(make_pod("a"))
    assert (await asyncio.wait_for(waiting, 1.0)).pod.name == "a"
    waiting = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    queue.close()
    assert await asyncio.wait_for(waiting, 1.0) is None


async def test_run_returns_when_the_queue_closes():
    queue, _ = make_queue()
    runner = asyncio.create_task(queue.run())
    await asyncio.sleep(0)
    queue.close()
    await asyncio.wait_for(runner, 2.0)


# ---------------------------------------------------------------------------- delete


@pytest.mark.parametrize("place", ["active", "backoff", "unschedulable", "gated"])
async def test_delete_removes_a_pod_from_any_sub_queue(place):
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    pod = make_pod("a", scheduling_gates=("g",) if place == "gated" else ())
    queue.add(pod)
    if place == "backoff":
        await reject(queue, FIT)
        queue.on_cluster_event(NODE_ADD, None, None)
    elif place == "unschedulable":
        await reject(queue, FIT)
    assert where(queue) == place
    queue.delete(pod)
    assert sum(queue.pending().values()) == 0
    assert not queue.has(pod.uid)
    assert not queue.was_deleted(pod.uid)


async def test_a_pod_deleted_in_flight_is_reported_and_not_requeued():
    queue, _ = make_queue()
    pod = make_pod("a")
    queue.add(pod)
    info = await pop_now(queue)
    assert queue.has(pod.uid)
    queue.delete(pod)
    assert queue.was_deleted(pod.uid)
    info.unschedulable_plugins = {FIT}
    queue.add_unschedulable(info, queue.scheduling_cycle())
    assert sum(queue.pending().values()) == 0
    assert not queue.has(pod.uid)


async def test_a_pod_deleted_after_done_but_before_binding_is_still_reported():
    queue, _ = make_queue()
    pod = make_pod("a")
    queue.add(pod)
    await pop_now(queue)
    queue.done(pod.uid)
    queue.delete(pod)
    assert queue.was_deleted(pod.uid)


# ---------------------------------------------------------------------------- backoff


@pytest.mark.parametrize(
    ("attempts", "seconds"), [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (60, 10)]
)
def test_backoff_doubles_from_one_second_up_to_ten(attempts, seconds):
    assert backoff_duration(attempts, 1.0, 10.0) == seconds


@pytest.mark.parametrize("attempts", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("rejected", [True, False], ids=["rejected by a plugin", "failed with an error"])
async def test_a_failed_pod_leaves_backoff_when_the_window_holding_its_expiry_closes(attempts, rejected):
    """Backoff grows with consecutive errors while there are any, else with rejections."""
    queue, clock = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("a"))
    info = await pop_now(queue)
    info.unschedulable_plugins = {FIT} if rejected else set()
    if rejected:  # this hand-back counts the last rejection
        info.unschedulable_count = attempts - 1
    else:
        info.consecutive_errors = attempts
    queue.add_unschedulable(info, queue.scheduling_cycle())
    if rejected:  # a plugin rejection parks it; an event sends it to backoffQ
        assert where(queue) == "unschedulable"
        queue.on_cluster_event(NODE_ADD, None, None)
    assert where(queue) == "backoff"
    duration = backoff_duration(attempts, 1.0, 10.0)
    clock.now = START + duration + 0.999  # expiry START+duration lies in the current window
    queue.flush()
    assert where(queue) == "backoff"
    assert queue.backoff_remaining(info.pod.uid) == pytest.approx(0.001)
    clock.now = START + duration + 1.0
    queue.flush()
    assert where(queue) == "active"
    assert queue.backoff_remaining(info.pod.uid) == 0


async def test_an_empty_active_queue_pops_from_backoff_but_never_from_error_backoff():
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("rejected", priority=1))
    queue.add(make_pod("errored"))
    await reject(queue, FIT)
    await reject(queue)  # no plugin: an error
    queue.on_cluster_event(NODE_ADD, None, None)
    assert queue.pending()["backoff"] == 2
    assert (await pop_now(queue)).pod.name == "rejected"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.pop(), timeout=0.01)


# ---------------------------------------------------------------------------- hints


def reg(event: ClusterEvent, hint=None) -> list[ClusterEventWithHint]:
    return [ClusterEventWithHint(event, hint)]


ANY = ClusterEvent(WILDCARD, ActionType.ALL)
QUEUE, SKIP = always(QueueingHint.QUEUE), always(QueueingHint.SKIP)


@pytest.mark.parametrize(
    ("registered", "event", "rejectors", "pending", "expected"),
    [
        ({FIT: reg(NODE_ADD, QUEUE)}, NODE_ADD, [FIT], [], "backoff"),
        ({FIT: reg(NODE_ADD)}, NODE_ADD, [FIT], [], "backoff"),
        ({FIT: reg(NODE_ADD, SKIP)}, NODE_ADD, [FIT], [], "unschedulable"),
        ({FIT: reg(NODE_ADD)}, PV_ADD, [FIT], [], "unschedulable"),
        ({"Other": reg(NODE_ADD)}, NODE_ADD, [FIT], [], "unschedulable"),
        ({FIT: reg(ClusterEvent(NODE, ActionType.ALL))}, NODE_ADD, [FIT], [], "backoff"),
        ({FIT: reg(ANY)}, NODE_ADD, [FIT], [], "backoff"),
        ({}, ANY, [FIT], [], "backoff"),
        ({"Vol": reg(PV_ADD)}, PV_ADD, [], ["Vol"], "active"),
        ({FIT: reg(NODE_ADD, lambda pod, old, new: 1 / 0)}, NODE_ADD, [FIT], [], "backoff"),
        ({FIT: reg(ClusterEvent(POD, ActionType.DELETE))}, ClusterEvent("AssignedPod", ActionType.DELETE),
         [FIT], [], "backoff"),
    ],
    ids=[
        "hint QUEUE moves it",
        "no hint function means QUEUE",
        "hint SKIP keeps it",
        "an unregistered event keeps it",
        "an event only a non-rejecting plugin registered keeps it",
        "a registration for all node actions matches NodeAdd",
        "a wildcard registration matches anything",
        "a wildcard event moves any pod",
        "QUEUE from a pending plugin skips backoff",
        "a failing hint counts as QUEUE",
        "Pod registrations match assigned pod events",
    ],
)  # fmt: skip
async def test_cluster_events_move_unschedulable_pods_only_when_a_rejecting_plugin_says_so(
    registered, event, rejectors, pending, expected
):
    queue, _ = make_queue(registered)
    queue.add(make_pod("a"))
    await reject(queue, *rejectors, pending=pending)
    assert where(queue) == "unschedulable"
    queue.on_cluster_event(event, None, None)
    assert where(queue) == expected


async def test_a_hint_sees_the_pod_and_the_event_objects():
    seen = []

    def hint(pod, old, new):
        seen.append((pod.name, old, new))
        return QueueingHint.QUEUE

    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD, hint)]})
    queue.add(make_pod("a"))
    await reject(queue, FIT)
    queue.on_cluster_event(NODE_ADD, None, "node-object")
    assert seen == [("a", None, "node-object")]


async def test_an_unschedulable_pod_moves_to_active_when_its_backoff_is_already_over():
    queue, clock = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("a"))
    await reject(queue, FIT)
    clock.now += 60
    queue.on_cluster_event(NODE_ADD, None, None)
    assert where(queue) == "active"


async def test_an_update_that_may_help_moves_an_unschedulable_pod():
    label_change = ClusterEvent(POD, ActionType.UPDATE_POD_LABEL)
    queue, _ = make_queue({"InterPodAffinity": [ClusterEventWithHint(label_change)]})
    old = make_pod("a", labels={"app": "x"})
    queue.add(old)
    await reject(queue, "InterPodAffinity")
    queue.update(old, dataclasses.replace(old, annotations={"note": "1"}))
    assert where(queue) == "unschedulable"
    queue.update(old, dataclasses.replace(old, labels={"app": "y"}))
    assert where(queue) == "backoff"


async def test_unschedulable_pods_are_flushed_after_five_minutes():
    queue, clock = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("a"))
    await reject(queue, FIT)
    clock.now = START + 299
    queue.flush()
    assert where(queue) == "unschedulable"
    clock.now = START + 301
    queue.flush()
    assert where(queue) == "active"


async def test_activate_forces_a_waiting_pod_into_the_active_queue():
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    pod = make_pod("a")
    queue.add(pod)
    await reject(queue, FIT)
    queue.activate([pod, make_pod("unknown")])
    assert where(queue) == "active"


# ---------------------------------------------------------------------------- in flight


@pytest.mark.parametrize(
    ("event", "expected"),
    [(NODE_ADD, "backoff"), (PV_ADD, "unschedulable")],
    ids=["a helpful event", "an unrelated event"],
)
async def test_events_during_the_cycle_decide_where_a_rejected_pod_goes(event, expected):
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("a"))
    info = await pop_now(queue)
    cycle = queue.scheduling_cycle()
    queue.on_cluster_event(event, None, None)  # nothing unschedulable yet: only remembered
    info.unschedulable_plugins = {FIT}
    queue.add_unschedulable(info, cycle)
    assert where(queue) == expected


async def test_events_before_the_pop_or_seen_only_by_other_pods_do_not_count():
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("early"))
    first = await pop_now(queue)
    queue.on_cluster_event(NODE_ADD, None, None)  # while "early" is in flight
    queue.add(make_pod("late"))
    second = await pop_now(queue)  # popped after the event
    for info in (first, second):
        info.unschedulable_plugins = {FIT}
        queue.add_unschedulable(info, queue.scheduling_cycle())
    assert queue.pending()["backoff"] == 1
    assert queue.pending()["unschedulable"] == 1
    assert queue.backoff_remaining("uid-early") is not None and queue.has("uid-late")


async def test_an_update_of_a_pod_in_flight_is_remembered_for_its_verdict():
    label_change = ClusterEvent(POD, ActionType.UPDATE_POD_LABEL)
    queue, _ = make_queue({"InterPodAffinity": [ClusterEventWithHint(label_change)]})
    old = make_pod("a")
    queue.add(old)
    info = await pop_now(queue)
    queue.update(old, dataclasses.replace(old, labels={"new": "label"}))
    assert sum(queue.pending().values()) == 0  # not queued twice
    info.unschedulable_plugins = {"InterPodAffinity"}
    queue.add_unschedulable(info, queue.scheduling_cycle())
    assert where(queue) == "backoff"


async def test_activating_a_pod_in_flight_requeues_it_when_it_comes_back():
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    pod = make_pod("a")
    queue.add(pod)
    info = await pop_now(queue)
    queue.activate([pod])
    info.unschedulable_plugins = {FIT}
    queue.add_unschedulable(info, queue.scheduling_cycle())
    assert where(queue) == "backoff"


async def test_events_are_forgotten_once_no_pod_is_in_flight():
    queue, _ = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]})
    queue.add(make_pod("a"))
    info = await pop_now(queue)
    queue.done(info.pod.uid)
    queue.on_cluster_event(NODE_ADD, None, None)
    queue.add(make_pod("b"))
    other = await pop_now(queue)
    other.unschedulable_plugins = {FIT}
    queue.add_unschedulable(other, queue.scheduling_cycle())
    assert where(queue) == "unschedulable"


# ---------------------------------------------------------------------------- gangs

GANG_EVENTS = {
    FIT: [ClusterEventWithHint(NODE_ADD)],
    GANG: [ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD))],
}


def member(name: str, gang: str = "g") -> Pod:
    return make_pod(name, labels={"gang": gang})


async def hand_back(queue: SchedulingQueue, info: QueuedPodInfo, *plugins: str) -> None:
    info.unschedulable_plugins = set(plugins)
    queue.add_unschedulable(info, queue.scheduling_cycle())


async def test_an_event_that_helps_one_member_moves_the_whole_gang():
    queue, _ = make_queue(GANG_EVENTS)
    for name in ("g-0", "g-1", "g-2"):
        queue.add(member(name))
    queue.add(make_pod("loner"))
    first, second, third, loner = [await pop_now(queue) for _ in range(4)]
    await hand_back(queue, first, GANG)  # released because a sibling failed
    await hand_back(queue, second, GANG)
    await hand_back(queue, third, FIT)  # the one that found no node
    await hand_back(queue, loner, GANG)  # rejected by the same plugin, but in no gang
    assert queue.pending()["unschedulable"] == 4
    queue.on_cluster_event(NODE_ADD, None, None)
    assert {queue.position(f"uid-g-{i}") for i in range(3)} == {"backoff"}
    assert queue.position("uid-loner") == "unschedulable"


async def test_a_member_rejected_by_its_gang_alone_keeps_its_own_reasons():
    queue, _ = make_queue(GANG_EVENTS)
    queue.add(member("g-0"))
    queue.add(member("g-1"))
    first, other = await pop_now(queue), await pop_now(queue)
    await hand_back(queue, first, FIT)
    queue.activate([first.pod])  # e.g. a sibling placed first brings it forward
    again = await pop_now(queue)
    assert again.pod.uid == first.pod.uid
    # placed this time, then released at Permit because its sibling gave up its node
    await hand_back(queue, again, GANG)
    await hand_back(queue, other, GANG)
    assert queue.pending()["unschedulable"] == 2
    queue.on_cluster_event(NODE_ADD, None, None)  # what the gang was really waiting for
    assert queue.pending()["unschedulable"] == 0


async def test_an_event_seen_in_flight_by_a_released_member_sends_back_its_parked_siblings():
    queue, _ = make_queue(GANG_EVENTS)
    queue.add(member("g-0"))
    queue.add(member("g-1"))
    waiting = await pop_now(queue)  # held at Permit, in flight
    failed = await pop_now(queue)
    await hand_back(queue, failed, FIT)
    queue.activate([failed.pod])
    retried = await pop_now(queue)  # placed, held at Permit too
    queue.on_cluster_event(NODE_ADD, None, None)  # both are in flight: nothing parked to move
    await hand_back(queue, waiting, GANG)  # released by the other's Unreserve: the node add counts
    await hand_back(queue, retried, GANG)
    assert queue.pending()["unschedulable"] == 0
    assert queue.pending()["backoff"] == 2


async def test_an_event_caused_by_a_members_own_release_is_judged_on_its_siblings_reasons():
    node_freed = ClusterEvent(POD, ActionType.DELETE)
    queue, _ = make_queue({FIT: [ClusterEventWithHint(node_freed)], GANG: []})
    queue.add(member("g-0"))
    queue.add(member("g-1"))
    released, failed = await pop_now(queue), await pop_now(queue)
    await hand_back(queue, failed, FIT)
    await hand_back(queue, released, GANG)
    # the released member's node is free: its sibling may fit now, and the gang goes together
    queue.on_cluster_event(node_freed, released.pod, None, exclude=released.pod.uid)
    assert queue.pending()["unschedulable"] == 0


async def test_a_gang_no_event_helps_stays_parked_and_a_deleted_member_is_forgotten():
    queue, _ = make_queue(GANG_EVENTS)
    queue.add(member("g-0"))
    queue.add(member("g-1"))
    first, second = await pop_now(queue), await pop_now(queue)
    await hand_back(queue, first, FIT)
    await hand_back(queue, second, GANG)
    queue.on_cluster_event(PV_ADD, None, None)
    assert queue.pending()["unschedulable"] == 2
    queue.delete(first.pod)  # the member that needed a node is gone: node adds no longer help
    queue.on_cluster_event(NODE_ADD, None, None)
    assert queue.position("uid-g-1") == "unschedulable"


# ---------------------------------------------------------------------------- gating


async def test_gated_pods_wait_until_an_update_removes_their_gates():
    queue, _ = make_queue()
    gated = make_pod("a", scheduling_gates=("example.com/wait",))
    queue.add(gated)
    assert where(queue) == "gated"
    still = dataclasses.replace(gated, labels={"x": "y"})
    queue.update(gated, still)
    assert where(queue) == "gated"
    opened = dataclasses.replace(still, scheduling_gates=())
    queue.update(still, opened)
    assert where(queue) == "active"
    assert (await pop_now(queue)).pod is opened


async def test_a_gated_pod_is_rechecked_on_events_its_gating_plugin_registered():
    checks = []

    class CountingPolicy(FakePolicy):
        def pre_enqueue(self, pod):
            checks.append(pod.name)
            return super().pre_enqueue(pod)

    registered = {GATES: [ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE))]}
    queue = SchedulingQueue(sort_key=priority_sort, policy=CountingPolicy(registered), clock=FakeClock())
    queue.add(make_pod("a", scheduling_gates=("g",)))
    queue.on_cluster_event(NODE_ADD, None, None)
    assert checks == ["a"]
    queue.on_cluster_event(ClusterEvent("AssignedPod", ActionType.UPDATE_POD_LABEL), None, None)
    assert checks == ["a", "a"]
    assert where(queue) == "gated"


# ---------------------------------------------------------------------------- nominations


async def test_nominated_pods_are_listed_per_node_until_deleted():
    queue, _ = make_queue()
    nominated = make_pod("a", nominated_node_name="n1")
    queue.add(nominated)
    queue.add(make_pod("b"))
    assert queue.nominated_pods_for_node("n1") == [nominated]
    queue.add_nominated_pod(make_pod("b"), "n1")
    assert {p.name for p in queue.nominated_pods_for_node("n1")} == {"a", "b"}
    queue.delete(nominated)
    queue.delete_nominated_pod(make_pod("b"))
    assert queue.nominated_pods_for_node("n1") == []


async def test_an_update_keeps_the_schedulers_own_nomination():
    queue, _ = make_queue()
    pod = make_pod("a")
    queue.add(pod)
    queue.add_nominated_pod(pod, "n1")
    newer = dataclasses.replace(pod, labels={"v": "2"})
    queue.update(pod, newer)
    assert queue.nominated_pods_for_node("n1") == [newer]


# ---------------------------------------------------------------------------- metrics


def make_metrics() -> tuple[SchedulerMetrics, CollectorRegistry]:
    metrics = SchedulerMetrics()
    return metrics, metrics.registry


async def test_metrics_track_pending_pods_and_incoming_events_with_upstream_labels():
    metrics, registry = make_metrics()
    queue, clock = make_queue({FIT: [ClusterEventWithHint(NODE_ADD)]}, metrics=metrics)

    def pending(name: str) -> float:
        return registry.get_sample_value("scheduler_pending_pods", {"queue": name})

    def incoming(name: str, event: str) -> float | None:
        return registry.get_sample_value(
            "scheduler_queue_incoming_pods_total", {"queue": name, "event": event}
        )

    queue.add(make_pod("a"))
    queue.add(make_pod("g", scheduling_gates=("x",)))
    assert (pending("active"), pending("gated")) == (1, 1)
    assert incoming("active", "UnschedulablePodAdd") == 1
    # upstream counts a gated pod's arrival under queue="unschedulable" ("gated" is only a pending gauge)
    assert incoming("unschedulable", "UnschedulablePodAdd") == 1
    assert incoming("gated", "UnschedulablePodAdd") is None

    await reject(queue, FIT)
    assert (pending("active"), pending("unschedulable")) == (0, 1)
    assert incoming("unschedulable", "ScheduleAttemptFailure") == 1
    labels = {"plugin": FIT, "profile": "default-scheduler"}
    assert registry.get_sample_value("scheduler_unschedulable_pods", labels) == 1

    queue.on_cluster_event(NODE_ADD, None, None)
    assert incoming("backoff", "NodeAdd") == 1
    clock.now += 5
    queue.flush()
    assert incoming("active", "BackoffComplete") == 1
    await pop_now(queue)
    assert registry.get_sample_value("scheduler_unschedulable_pods", labels) == 0
    assert (pending("active"), pending("backoff"), pending("unschedulable"), pending("gated")) == (0, 0, 0, 1)


async def test_an_error_after_rejections_backs_off_by_the_error_count_alone():
    queue, _ = make_queue()
    queue.add(make_pod("a"))
    info = await pop_now(queue)
    info.unschedulable_count = 4  # four earlier rejections
    info.consecutive_errors = 1  # then one bind error
    queue.add_unschedulable(info, queue.scheduling_cycle())
    assert info.unschedulable_count == 4
    assert queue.backoff_remaining(info.pod.uid) == pytest.approx(1.0 + 1.0, abs=1.0)


class TwoGatesPolicy(FakePolicy):
    """Plugin ``GateA`` holds pods labelled ``a``; once it lets one pass, ``GateB`` holds pods
    labelled ``b``."""

    def pre_enqueue(self, pod):
        for plugin, label in (("GateA", "a"), ("GateB", "b")):
            if label in pod.labels:
                return plugin, Status.unresolvable(f"held by {plugin}")
        return "", None


async def test_the_unschedulable_pods_gauge_counts_every_gating_plugin_until_the_pod_is_popped():
    """As upstream: a plugin that gated the pod counts for it (once) until its next attempt
    starts, even after another plugin took over the gating or the pod was let through."""
    metrics, registry = make_metrics()
    queue = SchedulingQueue(
        sort_key=priority_sort, policy=TwoGatesPolicy(), clock=FakeClock(), metrics=metrics
    )

    def gauge(plugin: str) -> float | None:
        labels = {"plugin": plugin, "profile": "default-scheduler"}
        return registry.get_sample_value("scheduler_unschedulable_pods", labels)

    pod = make_pod("p", labels={"a": "", "b": ""})
    queue.add(pod)
    assert (gauge("GateA"), gauge("GateB")) == (1, None)
    held_by_b = dataclasses.replace(pod, labels={"b": ""})
    queue.update(pod, held_by_b)
    assert where(queue) == "gated"
    assert (gauge("GateA"), gauge("GateB")) == (1, 1)
    queue.update(held_by_b, dataclasses.replace(held_by_b, labels={"b": "", "x": ""}))
    assert (gauge("GateA"), gauge("GateB")) == (1, 1)  # B again: not counted twice
    free = dataclasses.replace(held_by_b, labels={})
    queue.update(held_by_b, free)
    assert where(queue) == "active"
    assert (gauge("GateA"), gauge("GateB"), gauge("")) == (1, 1, None)
    await pop_now(queue)
    assert (gauge("GateA"), gauge("GateB")) == (0, 0)


async def test_deleting_a_pod_gated_by_two_plugins_in_turn_drops_both_from_the_gauge():
    metrics, registry = make_metrics()
    queue = SchedulingQueue(
        sort_key=priority_sort, policy=TwoGatesPolicy(), clock=FakeClock(), metrics=metrics
    )
    pod = make_pod("p", labels={"a": "", "b": ""})
    queue.add(pod)
    held_by_b = dataclasses.replace(pod, labels={"b": ""})
    queue.update(pod, held_by_b)
    queue.delete(held_by_b)
    for plugin in ("GateA", "GateB"):
        labels = {"plugin": plugin, "profile": "default-scheduler"}
        assert registry.get_sample_value("scheduler_unschedulable_pods", labels) == 0
    assert queue.pending()["gated"] == 0


class GangGate(FakePolicy):
    """The gang plugin's PreEnqueue: a member waits until ``size`` members are in the queue's
    care (as GangScheduling counts them); counts how often it is asked."""

    def __init__(self, size: int) -> None:
        super().__init__({GANG: [ClusterEventWithHint(POD_ADD)]})
        self.size = size
        self.members: set[str] = set()
        self.asked = 0

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        plugin, status = super().pre_enqueue(pod)  # scheduling gates first, as in a profile
        if status is not None:
            return plugin, status
        self.asked += 1
        if len(self.members) < self.size:
            return GANG, Status.unresolvable("waiting for minCount pods from a gang")
        return "", None


POD_ADD = ClusterEvent(POD, ActionType.ADD)


async def test_a_gang_arriving_one_by_one_is_asked_once_per_member_and_event():
    size = 50
    policy = GangGate(size)
    queue = SchedulingQueue(sort_key=priority_sort, policy=policy, clock=FakeClock())
    gated = make_pod(
        "g-gated", labels={"gang": "g"}, scheduling_gates=("hold",)
    )  # its own gate, not the gang
    policy.members.add(gated.uid)
    queue.add(gated)
    for i in range(size - 2):
        pod = member(f"g-{i}")
        policy.members.add(pod.uid)  # counted before the queue hears of the pod, as the informer does
        queue.add(pod)
        queue.on_cluster_event(POD_ADD, None, pod)
        assert queue.pending()["gated"] == i + 2 and queue.pending()["active"] == 0
    # each member asked when added, and at each add one waiting member asked for the whole gang
    assert policy.asked == 2 * (size - 2)
    last = member("g-last")  # completes the gang: every member goes in but the one with a gate
    policy.members.add(last.uid)
    queue.add(last)
    queue.on_cluster_event(POD_ADD, None, last)
    assert queue.pending()["active"] == size - 1 and queue.position(gated.uid) == "gated"
    assert policy.asked == 2 * (size - 2) + 1 + (size - 2)
