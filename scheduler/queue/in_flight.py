"""Pods being scheduled, and the cluster events that arrived meanwhile.

A pod rejected by a cycle must not be parked in the unschedulable pool if an event that could
have changed the verdict arrived while the cycle ran (the cycle read the older state). Events are
kept in one sequence only while some pod is in flight; each pod remembers where the sequence stood
when it was popped, and events older than the oldest pod still in flight are dropped. An event
may name a pod it must not count for (``exclude``: the pod whose own failure caused it).

A pod forced to activate while in flight is one such event, carrying that pod. GangScheduling's
Permit activates a gang's unplaced members for each member it holds, and they are all in flight
in the pod-group cycle: a force-activation of a pod already recorded after every pod in flight
started is seen by all of them, so a second one is not kept (it could not change any verdict,
see ``activated``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from scheduler.api import Pod
from scheduler.framework import ClusterEvent


class InFlight:
    __slots__ = ("_activations", "_events", "_last_start", "_pods", "_seq")

    def __init__(self) -> None:
        # uid -> sequence number at pop; insertion order == pop order, so the first is the oldest
        self._pods: dict[str, int] = {}
        self._events: deque[tuple[int, ClusterEvent, Any, Any, str]] = deque()
        self._seq = 0
        self._last_start = 0  # the sequence number of the latest pop
        self._activations: dict[str, int] = {}  # pod uid -> sequence of its force-activation kept

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def start(self, uid: str) -> None:
        self._seq += 1
        self._last_start = self._seq
        self._pods.setdefault(uid, self._seq)

    def record(self, event: ClusterEvent, old: Any, new: Any, exclude: str = "") -> bool:
        """Remember ``event`` for the pods in flight; False (nothing kept) when there are none."""
        if not self._pods:
            return False
        self._seq += 1
        self._events.append((self._seq, event, old, new, exclude))
        return True

    def activated(self, event: ClusterEvent, pod: Pod) -> None:
        """Remember the force-activation ``event`` of ``pod``, unless one is kept already that
        every pod in flight sees (recorded after the latest pop): a verdict read from the events
        is the best over them, the first to reach it naming it, so a repeat changes nothing."""
        if self._activations.get(pod.uid, -1) > self._last_start:
            return
        if self.record(event, None, pod):
            self._activations[pod.uid] = self._seq

    def events_since_start(self, uid: str) -> list[tuple[ClusterEvent, Any, Any, str]]:
        """(event, old, new, exclude) of the events since ``uid`` was popped."""
        start = self._pods.get(uid)
        if start is None:
            return []
        return [(event, old, new, exclude) for seq, event, old, new, exclude in self._events if seq > start]

    def finish(self, uid: str) -> None:
        if self._pods.pop(uid, None) is None:
            return
        oldest = next(iter(self._pods.values()), None)
        events = self._events
        while events and (oldest is None or events[0][0] < oldest):
            events.popleft()
        if len(self._activations) > len(events):  # some of theirs are gone: forget those
            first = events[0][0] if events else self._seq + 1
            self._activations = {uid: seq for uid, seq in self._activations.items() if seq >= first}
