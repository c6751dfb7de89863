"""GangScheduling: all or nothing for the pods of a PodGroup with a gang policy (upstream v1.36).

PreEnqueue keeps a member out of the queue until its PodGroup exists and at least ``minCount``
members do; Permit holds placed members (five minutes at most) until ``minCount`` are placed, then
lets them all go. Pods without a group, and groups with a basic policy, pass untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    QueueingHint,
    Status,
)
from scheduler.framework.interface import POD
from scheduler.plugins.gangscheduling.podgroups import (
    POD_GROUP_TRIAL,
    PODGROUPS,
    gang_min_count,
    is_member_event,
    pod_group_of,
)

NAME = "GangScheduling"
# How long placed members wait at Permit for the rest of their gang (upstream's permitTimeoutDuration).
PERMIT_TIMEOUT_SECONDS = 300.0
WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"
WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"
# PreEnqueue's answer for every member of a gang still short of minCount, once per member each time
# another member arrives: one Status made once, already naming the plugin
MEMBERS_MISSING = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_MEMBERS,), NAME)


def waiting_for_group(name: str) -> str:
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


@functools.lru_cache(maxsize=256)
def _group_missing(name: str) -> Status:
    """PreEnqueue's answer for the members of a PodGroup not seen yet (asked as often as
    ``MEMBERS_MISSING``: members usually arrive before their group's informer event)."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (waiting_for_group(name),), NAME)


class GangScheduling:
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[str, ...]] = (PODGROUPS,)

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        # A new member may complete a gang; a new (or changed) PodGroup may let its members in.
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD), self._member_added),
            ClusterEventWithHint(
                ClusterEvent(PODGROUPS, ActionType.ADD | ActionType.UPDATE), self._group_changed
            ),
        )

    @staticmethod
    def _member_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        same = isinstance(new, Pod) and new.pod_group == pod.pod_group and new.namespace == pod.namespace
        return QueueingHint.QUEUE if pod.pod_group and same else QueueingHint.SKIP

    @staticmethod
    def _group_changed(pod: Pod, old: Any, new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if is_member_event(pod, new) else QueueingHint.SKIP

    def gang_of(self, pod: Pod) -> str:
        """The queue keeps a PodGroup's members together (``framework.GangPlugin``)."""
        return f"{pod.namespace}/{pod.pod_group}" if pod.pod_group else ""

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.pod_group:
            return None
        group = pod_group_of(self.handle, pod)
        if group is None:
            return _group_missing(pod.pod_group)
        min_count = gang_min_count(group)
        if min_count is None:
            return None
        members = self.handle.pod_groups.get(pod.namespace, pod.pod_group)
        if (members.all_count if members is not None else 0) < min_count:
            return MEMBERS_MISSING
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if not pod.pod_group:
            return None, 0.0
        group = pod_group_of(self.handle, pod)
        if group is None:
            # deleted meanwhile: an error, so the pod retries once the group is back
            key = f"{pod.namespace}/{pod.pod_group}"
            not_found = f'podgroups.scheduling.k8s.io "{pod.pod_group}" not found'
            error = LookupError(f"failed to get podGroup {key}: {not_found}")
            return Status.from_error(error), 0.0
        min_count = gang_min_count(group)
        if min_count is None:
            return None, 0.0
        members = self.handle.pod_groups.get(pod.namespace, pod.pod_group)
        placed = members.scheduled_uids() if members is not None else set()
        placed.add(pod.uid)  # the pod at Permit is assumed on node_name
        if len(placed) < min_count:
            # Members still pending may have been waiting for this one: try them now. In a trial
            # of the pod-group cycle they are in that cycle already.
            if members is not None and not state.get(POD_GROUP_TRIAL):
                self.handle.activate_pods(p for p in members.unscheduled_pods() if p.uid != pod.uid)
            return Status(Code.WAIT, (WAITING_FOR_QUORUM,)), PERMIT_TIMEOUT_SECONDS
        for uid in placed:
            waiting = self.handle.waiting_pods.get(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0
