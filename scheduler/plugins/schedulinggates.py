"""SchedulingGates: a pod with ``spec.schedulingGates`` waits outside the active queue."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.framework import ActionType, ClusterEvent, ClusterEventWithHint, Handle, QueueingHint, Status
from scheduler.framework.interface import POD
from scheduler.plugins import names


class SchedulingGates:
    name: ClassVar[str] = names.SCHEDULING_GATES

    __slots__ = ()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """Takes no args."""

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        # upstream formats the gate list with Go's %v: "[gate-a gate-b]"
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self._after_gates_removed,
            ),
        )

    @staticmethod
    def _after_gates_removed(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.SKIP
