"""A scheduling queue on a fake clock with a fixed policy (gates, registered events, gangs by
label), and the pods it is given."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api import Pod
from scheduler.api.objects import DEFAULT_SCHEDULER_NAME
from scheduler.framework import ClusterEventWithHint, QueuedPodInfo, Status
from scheduler.queue import SchedulingQueue
from scheduler.queue.gangs import Gang
from scheduler.testing import make_pod as build_pod

START = 1000.0
GATES = "SchedulingGates"
GANG = "Gang"


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class FakePolicy:
    """SchedulingGates-like PreEnqueue plus a fixed table of registered events per plugin."""

    def __init__(self, registered: Mapping[str, Sequence[ClusterEventWithHint]] | None = None) -> None:
        self.registered = dict(registered or {})

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        if pod.scheduling_gates:
            return GATES, Status.unresolvable(f"waiting for scheduling gates: {list(pod.scheduling_gates)}")
        return "", None

    def hints(self, pod: Pod) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        return self.registered

    def gang_of(self, pod: Pod) -> Gang | None:
        """Pods labelled ``gang=NAME`` form a gang of the plugin ``Gang``."""
        name = pod.labels.get("gang")
        return Gang(GANG, f"{GANG}:{name}") if name else None


def priority_sort(info: QueuedPodInfo) -> tuple[int, float]:
    return (-info.pod.priority, info.timestamp)


def make_pod(name: str, priority: int = 0, **fields: Any) -> Pod:
    """A pod of the default profile (the queue's metrics name it)."""
    return build_pod(
        name, uid=f"uid-{name}", priority=priority, scheduler_name=DEFAULT_SCHEDULER_NAME, **fields
    )


def make_queue(registered=None, metrics=None, **kwargs) -> tuple[SchedulingQueue, FakeClock]:
    clock = FakeClock()
    queue = SchedulingQueue(
        sort_key=priority_sort, policy=FakePolicy(registered), clock=clock, metrics=metrics, **kwargs
    )
    return queue, clock


async def pop_now(queue: SchedulingQueue) -> QueuedPodInfo:
    """Pop when something is known to be ready (fails instead of blocking otherwise)."""
    return await asyncio.wait_for(queue.pop(), timeout=1.0)
