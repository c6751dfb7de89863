"""Coscheduling's part of the pod-group metrics (upstream's scheduler_podgroup_* names, shared with
the Workload API's cycle, and pyscheduler_pending_podgroups).

A group's attempt starts when one of its members first passes PreFilter and ends when Permit lets
minMember of them go (``scheduled``) or the group is released: a member fit nowhere, timed out at
Permit or failed to bind (``unschedulable``). Its duration, on the handle's clock, is how long the
gang waited to be placed whole. A group is pending from its first attempt until it is placed
whole (or deleted).
"""

from __future__ import annotations

from scheduler.framework import GroupMetrics, Handle
from scheduler.plugins.coscheduling.podgroup import PODGROUPS

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"


class GroupAttempts:
    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        # registered with the profile, as the Workload API's are with its gates
        self._metrics: GroupMetrics | None = (
            handle.metrics.pod_groups() if handle.metrics is not None else None
        )
        self._started: dict[str, float] = {}  # group key -> when its open attempt started
        self._pending: set[str] = set()  # attempted, not placed whole yet

    def started(self, key: str) -> None:
        if key not in self._started:
            self._started[key] = self._handle.clock.now()
        if key not in self._pending:
            self._pending.add(key)
            self._report_pending()

    def ended(self, key: str, result: str) -> None:
        start = self._started.pop(key, None)
        if start is None:  # no open attempt (e.g. the group's other members released with it)
            return
        if self._metrics is not None:
            duration = self._handle.clock.now() - start
            self._metrics.observe_attempt(result, self._handle.scheduler_name, duration)
        if result == SCHEDULED:
            self._pending.discard(key)
        self._report_pending()

    def _report_pending(self) -> None:
        """The pending groups, less those deleted meanwhile."""
        if self._metrics is None:
            return
        try:
            groups = self._handle.lister(PODGROUPS)
        except KeyError:
            groups = None
        if groups is not None:
            for key in [k for k in self._pending if groups.get(k) is None]:
                self._pending.discard(key)
                self._started.pop(key, None)
        self._metrics.set_pending(self._handle.scheduler_name, len(self._pending))
