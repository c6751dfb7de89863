"""The safety net: members held at Permit whose gang never completes are released after upstream's
five minutes (on a fake clock), with what they reserved, and retried after a backoff."""

from __future__ import annotations

from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.build import build_scheduler
from scheduler.config import PluginRef, default_config
from scheduler.framework import CycleState, Handle, Status
from scheduler.plugins.gangscheduling import PODGROUPS
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import FakeClient, FakeClock, FakeLister, make_node, pod_dict
from tests.support.gang import GANG_GATES, pod_group


class RaceAtReserve:
    """Rejects the second Reserve of one pod: its trial passes, its real placement loses a race
    (as when something else took what it needed in between)."""

    name: ClassVar[str] = "RaceAtReserve"
    victim: ClassVar[str] = "gang-2"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.seen: set[str] = set()

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.name != self.victim:
            return None
        if pod.uid in self.seen:
            return Status.unschedulable("lost a race")
        self.seen.add(pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        pass


class Recorded:
    def __init__(self) -> None:
        self.notes: list[tuple[str, str]] = []

    def record(self, obj: Any, event_type: str, reason: str, action: str, note: str) -> None:
        self.notes.append((obj.name, note))


class NoStatus:
    def submit(self, *args: Any) -> None:
        pass

    async def write_now(self, *args: Any) -> None:
        pass


async def test_members_held_at_permit_are_released_after_the_timeout() -> None:
    config = default_config(features=GANG_GATES)
    config.profiles[0].plugins.multi_point.enabled.append(PluginRef("RaceAtReserve"))
    registry = {**in_tree_registry(), "RaceAtReserve": RaceAtReserve}
    clock = FakeClock()
    events = Recorded()
    pods = {n: Pod.from_dict(pod_dict(n, requests={"cpu": "1"})) for n in ("gang-0", "gang-1", "gang-2")}
    for pod in pods.values():
        pod.pod_group = "gang"
    listers: dict[str, Any] = {PODGROUPS: FakeLister([pod_group("gang", 3)])}
    parts = build_scheduler(
        config,
        registry,
        FakeClient(),
        events=events,
        status=NoStatus(),
        current_pod=lambda pod: pods.get(pod.name),
        listers=listers,
        clock=clock,
        features=GANG_GATES,
    )
    assert parts.pod_groups is not None
    for name in ("n0", "n1", "n2"):
        parts.cache.add_node(make_node(name, cpu="2"))
    for pod in pods.values():
        parts.pod_groups.add(pod)
        parts.queue.add(pod)
    fwk = parts.frameworks["pyscheduler"]

    await parts.scheduler.schedule_one(await parts.queue.pop())
    # the trial placed all three; for real, gang-2 lost its race and the other two wait at Permit
    assert {w.pod.name for w in fwk.waiting_pods} == {"gang-0", "gang-1"}
    assert parts.cache.assumed_count() == 2
    assert ("gang-2", "0/1 nodes are available: 1 lost a race.") in events.notes

    await clock.advance(299)
    assert len(fwk.waiting_pods) == 2
    await clock.advance(1)
    assert await parts.scheduler.wait_for_bindings(5)
    assert len(fwk.waiting_pods) == 0
    assert parts.cache.assumed_count() == 0  # what they reserved is free again
    timeout = (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin GangScheduling."
    )
    assert {name for name, note in events.notes if note == timeout} == {"gang-0", "gang-1"}
    for name in ("gang-0", "gang-1"):
        assert parts.queue.position(pods[name].uid) in ("backoff", "unschedulable")
        remaining = parts.queue.backoff_remaining(pods[name].uid)
        assert remaining is not None
