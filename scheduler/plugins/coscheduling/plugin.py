"""The Coscheduling plugin: QueueSort, PreFilter, PostFilter, Permit and Reserve for PodGroups.

Follows scheduler-plugins v0.35 (pkg/coscheduling):
- QueueSort keeps a group's pods together: priority first, then the group's creation time (or
  the time it last failed, so a gang that cannot fit stops holding the head of the queue; a
  pod outside any group uses its first queueing time), then the group, then the pod.
- PreFilter refuses a member while its group is backing off, has fewer than minMember pods,
  has gated pods that leave it short of minMember, or cannot find its minResources free in the
  whole cluster. These refusals are unresolvable: preemption would not help.
- Permit holds each placed member until minMember of the group are placed (waiting pods keep
  their nodes), then lets them all go; the first one waiting brings its siblings to the front
  of the queue.
- PostFilter: a member that fits nowhere rejects the group's waiting pods, so it holds nothing,
  unless the group is already complete or nearly (podGroupRejectPercentage).
- Unreserve (a member timed out at Permit or failed to bind) rejects the group's waiting pods.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Handle,
    NodeLister,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    SignFragment,
    Status,
)
from scheduler.framework.interface import POD
from scheduler.plugins.coscheduling.args import CoschedulingArgs, decode_args
from scheduler.plugins.coscheduling.capacity import describe_gap, missing_resources
from scheduler.plugins.coscheduling.metrics import SCHEDULED, UNSCHEDULABLE, GroupAttempts
from scheduler.plugins.coscheduling.podgroup import (
    POD_GROUP_LABEL,
    PODGROUPS,
    PodGroup,
    PodGroups,
    group_key,
    group_name,
)
from scheduler.plugins.coscheduling.state import GroupState

NAME = "Coscheduling"
# scheduler-plugins' fallback when neither the PodGroup nor the args give a wait
DEFAULT_WAIT_SECONDS = 60
# how long a passed minResources check is trusted when permitWaitingTimeSeconds is 0
# (scheduler-plugins' cache default)
RESOURCES_CHECK_DEFAULT_SECONDS = 3


class Coscheduling:
    name: ClassVar[str] = NAME
    args_type: ClassVar[type] = CoschedulingArgs
    watches: ClassVar[tuple[str, ...]] = (PODGROUPS,)

    def __init__(self, args: CoschedulingArgs | Mapping[str, Any] | None, handle: Handle) -> None:
        self.args = decode_args(args)
        self.handle = handle
        self.state = GroupState(handle.clock)
        self.attempts = GroupAttempts(handle)
        self._groups: PodGroups | None = None
        # queue timestamps are monotonic, PodGroup creation times are wall time
        self._wall_offset = time.time() - time.monotonic()

    # ------------------------------------------------------------------ reading groups

    def group_of(self, pod: Pod) -> PodGroup | None:
        key = group_key(pod)
        if not key:
            return None
        if self._groups is None:  # the lister exists once the informers do, not in the constructor
            self._groups = PodGroups(self.handle.lister(PODGROUPS))
        return self._groups.get(key)

    def members(self, group: PodGroup) -> list[Pod]:
        """Every pod of the group the scheduler's informer holds (pending or placed, any
        scheduler, terminating ones too; finished pods are not watched), as upstream counts."""
        pods: list[Pod] = self.handle.lister("pods").with_label(group.namespace, POD_GROUP_LABEL, group.name)
        return pods

    def placed(self, group: PodGroup) -> set[str]:
        """uids of the group's pods that are bound, binding or assumed (waiting at Permit)."""
        index = self.handle.snapshot.pod_index()
        return set(index.uids_with_label(group.namespace, POD_GROUP_LABEL, group.name))

    def wait_seconds(self, group: PodGroup) -> float:
        if group.schedule_timeout_seconds:
            return float(group.schedule_timeout_seconds)
        return float(self.args.permit_waiting_time_seconds or DEFAULT_WAIT_SECONDS)

    def gang_of(self, pod: Pod) -> str:
        """The queue keeps a PodGroup's members together (``framework.GangPlugin``)."""
        return group_key(pod)

    # ------------------------------------------------------------------ QueueSort

    def sort_key(self, pod_info: QueuedPodInfo) -> tuple[int, float, str, str]:
        pod = pod_info.pod
        group = self.group_of(pod)
        if group is None:
            queued = pod_info.initial_attempt_timestamp or pod_info.timestamp
            return (-pod.priority, queued + self._wall_offset, pod.key, "")
        failed = self.state.last_failure(group.key)
        return (-pod.priority, failed if failed is not None else group.created, group.key, pod.key)

    # ------------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        group = self.group_of(pod)
        if group is None:
            return None, None
        if group.key in self.state.backed_off:
            return None, Status.unresolvable(f"podGroup {group.key} failed recently")
        members = self.members(group)
        if len(members) < group.min_member:
            return None, Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods of PodGroup {group.key}, "
                f"current pods number: {len(members)}, minMember of group: {group.min_member}"
            )
        gated = sum(1 for p in members if p.scheduling_gates)
        if len(members) - gated < group.min_member:
            return None, Status.unresolvable(
                f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup "
                f"{group.key}: {gated} of its {len(members)} pods are gated, minMember of group: "
                f"{group.min_member}"
            )
        self.attempts.started(group.key)
        if group.min_resources is None or group.key in self.state.resources_checked:
            return None, None
        gap = missing_resources(group, nodes.node_infos())
        if gap:
            return None, Status.unresolvable(
                f"PodGroup {group.key} cannot find its minResources free in the cluster, "
                f"resource gap: {describe_gap(gap)}"
            )
        # remembered for the args' wait (not the group's), as scheduler-plugins does
        ttl = self.args.permit_waiting_time_seconds or RESOURCES_CHECK_DEFAULT_SECONDS
        self.state.resources_checked.add(group.key, ttl)
        return None, None

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """A member's answers depend on its group's other pods: it cannot be signed. Other pods
        always pass, so they keep batching in a profile with this plugin."""
        if group_key(pod):
            return (), Status.unschedulable("pods of a PodGroup depend on their siblings")
        return (), None

    # ------------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        group = self.group_of(pod)
        if group is None:
            return None, Status.unschedulable("can not find pod group")
        if group.key in self.state.backed_off:
            return None, Status(Code.UNSCHEDULABLE)  # released when the backoff began
        placed = self.placed(group)
        placed.discard(pod.uid)
        min_member = max(1, group.min_member)
        if len(placed) >= min_member:
            return None, Status(Code.UNSCHEDULABLE)
        if (min_member - len(placed)) / min_member <= self.args.pod_group_reject_percentage / 100:
            return None, Status(Code.UNSCHEDULABLE)
        why = (
            f"PodGroup {group.key} gets rejected due to Pod {pod.name} is unschedulable even after "
            f"PostFilter; {len(placed)} of the group's minMember {min_member} pods fit"
        )
        rejected = self.reject_waiting(group, f"optimistic rejection in PostFilter: {why}")
        if self.args.pod_group_backoff_seconds and len(self.members(group)) >= group.min_member:
            self.state.backed_off.add(group.key, self.args.pod_group_backoff_seconds)
        self.state.resources_checked.discard(group.key)
        self.state.mark_failure(group.key)
        self.attempts.ended(group.key, UNSCHEDULABLE)
        if rejected:
            why += f", {rejected} waiting pods released"
        return None, Status.unschedulable(why)

    def reject_waiting(self, group: PodGroup, message: str, *, keep: str = "") -> int:
        """Reject the group's pods held at Permit (but ``keep``); returns how many."""
        count = 0
        for waiting in self.handle.waiting_pods:
            member = waiting.pod
            if (
                member.uid != keep
                and member.namespace == group.namespace
                and group_name(member) == group.name
            ):
                waiting.reject(self.name, message)
                count += 1
        return count

    # ------------------------------------------------------------------ Reserve / Permit

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        group = self.group_of(pod)
        if group is None:
            return
        self.reject_waiting(
            group,
            f"rejection in Unreserve: pod {pod.name} of PodGroup {group.key} gave up its node",
            keep=pod.uid,
        )
        self.state.resources_checked.discard(group.key)
        self.state.mark_failure(group.key)
        self.attempts.ended(group.key, UNSCHEDULABLE)

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if not group_key(pod):
            return None, 0.0
        group = self.group_of(pod)
        if group is None:
            return Status.unschedulable("PodGroup not found"), 0.0
        placed = self.placed(group)
        placed.add(pod.uid)
        if len(placed) >= group.min_member:
            self.state.clear_failure(group.key)
            self.attempts.ended(group.key, SCHEDULED)
            for waiting in self.handle.waiting_pods:
                member = waiting.pod
                if member.namespace == group.namespace and group_name(member) == group.name:
                    waiting.allow(self.name)
            return None, 0.0
        if len(placed) == 1:
            # the first member placed: bring the others forward instead of after their backoff
            self.handle.activate_pods(p for p in self.members(group) if not p.node_name and p.uid != pod.uid)
        waiting_for = group.min_member - len(placed)
        return (
            Status(
                Code.WAIT,
                (
                    f"PodGroup {group.key} waits for {waiting_for} more pods "
                    f"({len(placed)} of minMember {group.min_member} placed)",
                ),
            ),
            self.wait_seconds(group),
        )

    # ------------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(PODGROUPS, ActionType.ADD | ActionType.UPDATE)),
        ]
