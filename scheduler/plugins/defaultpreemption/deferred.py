"""Evictions held back until a whole pod group is known to fit (pyscheduler's guard).

Upstream v1.36 (WorkloadAwarePreemption off) lets each member of a pod group preempt from its own
PostFilter during the pod-group cycle, so a group that then fails has evicted pods for nothing.
The pod-group cycle writes a :class:`DeferredEvictions` into each member's cycle state instead:
DefaultPreemption records there what it would evict, and the cycle carries out the evictions of
its placed members together once the group's trial succeeds, or drops them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from scheduler.api import Pod
from scheduler.framework import CycleState

# CycleState key under which the pod-group cycle hands DefaultPreemption its DeferredEvictions.
DEFERRED_EVICTIONS = "DefaultPreemption/DeferredEvictions"


# Starts the evictions of the victims given (those no earlier member of the group evicts).
Start = Callable[[list[Pod]], None]


@dataclass(slots=True)
class DeferredEvictions:
    """Preemptions members chose in one trial of their group, not carried out yet: preemptor uid
    -> (its victims, the call that starts evicting them)."""

    pending: dict[str, tuple[list[Pod], Start]] = field(default_factory=dict)

    def clone(self) -> DeferredEvictions:
        return self  # shared by the cycle and every (cloned) state of one trial

    def defer(self, uid: str, victims: list[Pod], start: Start) -> None:
        self.pending[uid] = (victims, start)

    def drop(self, uid: str) -> None:
        self.pending.pop(uid, None)

    def victims(self) -> int:
        return len({v.uid for victims, _ in self.pending.values() for v in victims})

    def commit(self, uids: Iterable[str]) -> int:
        """Start the evictions of these preemptors (the placed members), each victim once (two
        members preempting on one node may pick the same pods); the others are dropped. Returns
        how many pods are evicted."""
        evicted: set[str] = set()
        for uid in uids:
            entry = self.pending.pop(uid, None)
            if entry is None:
                continue
            victims, start = entry
            fresh = [v for v in victims if v.uid not in evicted]
            evicted.update(v.uid for v in fresh)
            if fresh:
                start(fresh)
        self.pending.clear()
        return len(evicted)


def deferred_evictions(state: CycleState) -> DeferredEvictions | None:
    value = state.get(DEFERRED_EVICTIONS)
    return value if isinstance(value, DeferredEvictions) else None
