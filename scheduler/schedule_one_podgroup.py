"""The pod-group scheduling cycle (upstream v1.36's schedule_one_podgroup.go, GenericWorkload).

When a member of a scheduling.k8s.io/v1alpha2 PodGroup is popped, the group's other pending pods
are taken out of the queue with it and the whole group is decided on one picture of the cluster,
while the cache is held: each pod, in priority then arrival order, goes through the usual
scheduling algorithm and is *tried* on its node (assumed, reserved, asked at Permit without being
held), so the next members see it placed. The group is schedulable when Permit allows one of them
(GangScheduling allows the member that completes ``minCount``). Every trial is taken back before
deciding; only then, for a schedulable group, are the members placed for real and bound. An
unschedulable group reserves nothing: its members go back to the queue with upstream's messages,
and the PodGroup's ``PodGroupScheduled`` condition says what happened.

With TopologyAwareWorkloadScheduling the group is tried within each placement (e.g. each zone) the
placement generators propose, and the placement scorers pick among those where it fits.

This is the Scheduler's own cycle in another shape: it reports and binds its pods through the
Scheduler's failure handler and binding cycle.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scheduler.api import Pod
from scheduler.cache.pod_groups import PodGroupMembers
from scheduler.framework import (
    EVERY_NODE,
    PLACEMENT_KEY,
    Code,
    CycleState,
    ObjectLister,
    Placement,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    PostFilterResult,
    QueuedPodInfo,
    Status,
)
from scheduler.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, WAITING_ON_PREEMPTION, PodGroupMetrics
from scheduler.plugins.defaultpreemption.deferred import DEFERRED_EVICTIONS, DeferredEvictions
from scheduler.plugins.gangscheduling import PODGROUPS
from scheduler.plugins.gangscheduling.plugin import NAME as GANG_SCHEDULING
from scheduler.plugins.gangscheduling.podgroups import POD_GROUP_TRIAL
from scheduler.runtime import Framework
from scheduler.schedule_one import CLEAR_NOMINATION, FitError, Scheduler, ScheduleResult

log = logging.getLogger(__name__)

GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"
CONDITION = "PodGroupScheduled"
UNSCHEDULABLE_GROUP = Status(Code.UNSCHEDULABLE, (GROUP_UNSCHEDULABLE,))


@dataclass(slots=True)
class PodAttempt:
    """One member's trial in this cycle."""

    info: QueuedPodInfo
    state: CycleState
    result: ScheduleResult | None = None  # where the trial placed it (None: nowhere)
    failure: Status | None = None  # why it could not be placed
    fit: FitError | None = None
    nominated: PostFilterResult | None = None
    permit: Status | None = None  # Permit's trial answer: None (allowed) or WAIT
    needs_preemption: bool = False  # placed on the node its preemption nominated


@dataclass(slots=True)
class GroupOutcome:
    attempts: list[PodAttempt] = field(default_factory=list)
    # None: schedulable; UNSCHEDULABLE: no member may go; ERROR: the attempt failed
    status: Status | None = UNSCHEDULABLE_GROUP
    waiting_on_preemption: bool = False
    # what the members' preemptions would evict; carried out only for a group that then fits
    evictions: DeferredEvictions = field(default_factory=DeferredEvictions)


class PodGroupCycle:
    """Schedules whole pod groups for a Scheduler (``Scheduler.pod_groups``)."""

    def __init__(
        self,
        scheduler: Scheduler,
        members: PodGroupMembers,
        listers: Mapping[str, ObjectLister],
        client: Any,
        *,
        topology_aware: bool = False,
        metrics: PodGroupMetrics | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.members = members
        self._listers = listers  # filled once the informers exist
        self._client = client
        self._topology_aware = topology_aware
        self._metrics = metrics
        self._rng = rng or random.Random()
        self._writes: set[asyncio.Task[None]] = set()
        self._pending: dict[str, set[tuple[str, str]]] = {}  # profile -> groups not placed yet

    # ------------------------------------------------------------------ the cycle

    async def schedule(self, info: QueuedPodInfo) -> None:
        """One cycle for the group of the popped pod ``info``."""
        sched = self.scheduler
        pod = info.pod
        infos = [info, *self._take_members(pod)]
        cycle = sched.queue.scheduling_cycle()
        start = time.perf_counter()
        names = {i.pod.scheduler_name for i in infos}
        if len(names) > 1:
            first, other = pod.scheduler_name, next(n for n in sorted(names) if n != pod.scheduler_name)
            error = ValueError(
                "all pods in a single pod group should have the same .spec.schedulerName set, "
                f'got: "{other}" and "{first}"'
            )
            for member in infos:
                fwk = sched.frameworks.get(member.pod.scheduler_name)
                if fwk is None:
                    sched.queue.done(member.pod.uid)
                else:
                    sched.handle_scheduling_failure(
                        fwk, member, Status.from_error(error), None, CLEAR_NOMINATION, start, cycle
                    )
            return
        fwk = sched.frameworks.get(pod.scheduler_name)
        if fwk is None:
            for member in infos:
                sched.queue.done(member.pod.uid)
            return
        infos = self._skip_members(fwk, infos)
        if not infos:
            return
        infos.sort(key=_member_order)
        group = self._pod_group(pod.namespace, pod.pod_group)
        await sched.cache.until_released()
        with sched.cache.held():
            try:
                outcome = await self._algorithm(fwk, infos, group)
            except Exception as exc:  # never strand the members taken out of the queue
                log.exception("unexpected error scheduling pod group %s/%s", pod.namespace, pod.pod_group)
                outcome = GroupOutcome(status=Status.from_error(exc))
            if self._metrics is not None:
                self._metrics.observe_algorithm(time.perf_counter() - start)
            self._carry_out_preemption(outcome, pod)
            placed = self._place_for_real(fwk, outcome, start, cycle) if outcome.status is None else []
        self._report(fwk, infos, outcome, placed, start, cycle)
        self._set_condition(fwk, pod, outcome, start)

    def _carry_out_preemption(self, outcome: GroupOutcome, pod: Pod) -> None:
        """The members' evictions, all together, for a group that fits once they are done; none
        for a group that does not fit even with them (pyscheduler's guard: upstream's members
        evict from their own PostFilter whatever becomes of the group)."""
        evictions = outcome.evictions
        if not evictions.pending or outcome.status is None:  # placed without them
            evictions.commit(())
            return
        if outcome.waiting_on_preemption:
            placed = [a.info.pod.uid for a in outcome.attempts if a.result is not None and a.needs_preemption]
            count = evictions.commit(placed)
            log.info("pod group %s/%s fits by preempting %d pod(s)", pod.namespace, pod.pod_group, count)
            return
        log.info(
            "pod group %s/%s does not fit even with preemption: none of %d victim(s) evicted",
            pod.namespace,
            pod.pod_group,
            evictions.victims(),
        )
        evictions.commit(())
        for attempt in outcome.attempts:  # no victim goes, so no nomination stays
            if attempt.needs_preemption or attempt.nominated is not None:
                attempt.nominated = CLEAR_NOMINATION

    def _take_members(self, pod: Pod) -> list[QueuedPodInfo]:
        """The group's other pending pods, out of the queue (upstream's PopSpecificPod)."""
        group = self.members.get(pod.namespace, pod.pod_group)
        taken: list[QueuedPodInfo] = []
        for member in group.unscheduled_pods() if group is not None else ():
            if member.uid == pod.uid:
                continue
            info = self.scheduler.queue.pop_specific(member)
            if info is not None:
                taken.append(info)
        return taken

    def _skip_members(self, fwk: Framework, infos: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        """Members being deleted or already assumed are not tried (upstream's skipPodSchedule)."""
        sched = self.scheduler
        kept = []
        for info in infos:
            pod = info.pod
            if pod.is_terminating or sched.cache.is_assumed(pod.uid):
                if pod.is_terminating:
                    note = f"skip schedule deleting pod: {pod.key}"
                    sched.events.record(pod, "Warning", "FailedScheduling", "Scheduling", note)
                sched.queue.done(pod.uid)
                continue
            kept.append(info)
        return kept

    # ------------------------------------------------------------------ the algorithm

    async def _algorithm(
        self, fwk: Framework, infos: list[QueuedPodInfo], group: Mapping[str, Any] | None
    ) -> GroupOutcome:
        generators = [p for p in fwk.plugins.values() if isinstance(p, PlacementGeneratePlugin)]
        if not self._topology_aware or not generators or group is None:
            return await self._try_group(fwk, infos, EVERY_NODE)
        members = self.members.get(infos[0].pod.namespace, infos[0].pod.pod_group)
        snapshot = self.scheduler.cache.snapshot()
        placements: list[Placement] = [EVERY_NODE]
        for generator in generators:
            proposed: list[Placement] = []
            for parent in placements:
                found, status = generator.generate_placements(group, members, snapshot)
                if status is not None:
                    return GroupOutcome(status=status)
                proposed += [_within(p, parent) for p in found]
            placements = proposed
        fitting: list[tuple[Placement, GroupOutcome]] = []
        first: GroupOutcome | None = None
        for placement in placements:
            outcome = await self._try_group(fwk, infos, placement)
            if outcome.status is not None and outcome.status.code == Code.ERROR:
                return outcome
            first = first or outcome
            if outcome.status is None or outcome.waiting_on_preemption:
                fitting.append((placement, outcome))
        if not fitting:
            first = first or GroupOutcome()
            message = (
                f"0/{len(placements)} placements are available, first placement status: {GROUP_UNSCHEDULABLE}"
            )
            first.status = Status.unschedulable(message)
            return first
        if len(fitting) == 1:
            return fitting[0][1]
        return self._best_placement(fwk, fitting, members)

    def _best_placement(
        self, fwk: Framework, fitting: list[tuple[Placement, GroupOutcome]], members: Any
    ) -> GroupOutcome:
        """The placement the placement scorers like best; ties broken at random, as upstream."""
        totals = [0] * len(fitting)
        for scorer in (p for p in fwk.plugins.values() if isinstance(p, PlacementScorePlugin)):
            proposed = [sum(a.result is not None for a in outcome.attempts) for _, outcome in fitting]
            scores = [scorer.score_placement(members, count) for count in proposed]
            status = scorer.normalize_placement_scores(scores)
            if status is not None:
                return GroupOutcome(status=status)
            totals = [total + score for total, score in zip(totals, scores, strict=True)]
        best = max(range(len(fitting)), key=lambda i: (totals[i], self._rng.random()))
        return fitting[best][1]

    async def _try_group(
        self, fwk: Framework, infos: list[QueuedPodInfo], placement: Placement
    ) -> GroupOutcome:
        """Each member through the algorithm in turn, the placed ones left placed for the next; all
        of it taken back before returning."""
        sched = self.scheduler
        outcome = GroupOutcome()
        trials: list[tuple[CycleState, Pod]] = []
        preempting = False
        try:
            for info in infos:
                attempt = await self._try_pod(fwk, info, placement, trials, outcome.evictions)
                outcome.attempts.append(attempt)
                if attempt.failure is not None and attempt.failure.code == Code.ERROR:
                    error = f"failed to schedule other pod from a pod group: {attempt.failure.message()}"
                    outcome.status = Status(Code.ERROR, (error,), attempt.failure.plugin)
                    outcome.waiting_on_preemption = False
                    break
                if attempt.result is None:
                    continue
                preempting = preempting or attempt.needs_preemption
                if attempt.permit is None:  # Permit allowed it: the group may go
                    if preempting:
                        reasons = (GROUP_UNSCHEDULABLE, WAITING_FOR_PREEMPTION)
                        outcome.status = Status(Code.UNSCHEDULABLE, reasons)
                        outcome.waiting_on_preemption = True
                    else:
                        outcome.status = None
        finally:
            for state, assumed in reversed(trials):
                fwk.run_unreserve(state, assumed, assumed.node_name)
                sched.cache.undo_assume(assumed)
        return outcome

    async def _try_pod(
        self,
        fwk: Framework,
        info: QueuedPodInfo,
        placement: Placement,
        trials: list[tuple[CycleState, Pod]],
        evictions: DeferredEvictions,
    ) -> PodAttempt:
        sched = self.scheduler
        pod = info.pod
        state = CycleState()
        state.write(POD_GROUP_TRIAL, True)
        state.write(DEFERRED_EVICTIONS, evictions)
        if placement.nodes is not None:
            state.write(PLACEMENT_KEY, placement)
        attempt = PodAttempt(info, state)
        result = await sched.schedule_pod(fwk, state, pod)
        if isinstance(result, Status):
            attempt.failure = result
            return attempt
        if isinstance(result, FitError):
            attempt.fit = result
            if not fwk.post_filter_plugins:
                attempt.nominated = CLEAR_NOMINATION
                attempt.failure = Status(Code.UNSCHEDULABLE, (result.message(),))
                return attempt
            post_result, post_status = await fwk.run_post_filter(state, pod, result.diagnosis)
            if post_status is not None:
                result.diagnosis.post_filter_msg = post_status.message()
            attempt.failure = Status(Code.UNSCHEDULABLE, (result.message(),))
            attempt.nominated = post_result
            sched.record_nomination(pod, post_result)
            if post_result is None or not post_result.nominated_node_name:
                return attempt
            # Preemption frees a node: the next members must see this one there already.
            attempt.needs_preemption = True
            result = ScheduleResult(post_result.nominated_node_name, 1, 1)
        assumed = pod.on_node(result.node_name)
        sched.cache.assume_pod(assumed)
        status = fwk.run_reserve(state, assumed, result.node_name)
        if status is None:
            status = fwk.run_permit(state, assumed, result.node_name, hold=False)
        if status is not None and status.code != Code.WAIT:
            fwk.run_unreserve(state, assumed, result.node_name)
            sched.cache.undo_assume(assumed)
            if attempt.needs_preemption:  # not placed: its preemption is not carried out
                evictions.drop(pod.uid)
                attempt.nominated = CLEAR_NOMINATION
            attempt.failure = status
            attempt.fit = (
                sched.single_node_fit_error(result.node_name, status) if status.is_rejected else None
            )
            attempt.needs_preemption = False
            return attempt
        trials.append((state, assumed))
        attempt.result = result
        attempt.permit = status
        if not attempt.needs_preemption:
            attempt.failure = attempt.fit = None
        return attempt

    def _place_for_real(
        self, fwk: Framework, outcome: GroupOutcome, start: float, cycle: int
    ) -> list[PodAttempt]:
        """A schedulable group: its placed members assumed, reserved and past Permit (the first
        ones held there until the one completing the gang lets them all go), then bound."""
        sched = self.scheduler
        placed: list[PodAttempt] = []
        for attempt in outcome.attempts:
            if attempt.result is None:
                continue
            node = attempt.result.node_name
            attempt.state.delete(POD_GROUP_TRIAL)
            attempt.state.delete(DEFERRED_EVICTIONS)
            assumed = attempt.info.pod.on_node(node)
            sched.cache.assume_pod(assumed)
            sched.queue.delete_nominated_pod(assumed)
            status = fwk.run_reserve(attempt.state, assumed, node)
            if status is None:
                status = fwk.run_permit(attempt.state, assumed, node)
            if status is not None and status.code != Code.WAIT:
                fwk.run_unreserve(attempt.state, assumed, node)
                sched.cache.undo_assume(assumed)
                fit = sched.single_node_fit_error(node, status) if status.is_rejected else None
                sched.handle_scheduling_failure(
                    fwk, attempt.info, status, fit, CLEAR_NOMINATION, start, cycle
                )
                continue
            sched.bind_in_background(fwk, attempt.state, attempt.info, assumed, attempt.result, start, cycle)
            placed.append(attempt)
        return placed

    # ------------------------------------------------------------------ reporting

    def _report(
        self,
        fwk: Framework,
        infos: list[QueuedPodInfo],
        outcome: GroupOutcome,
        placed: list[PodAttempt],
        start: float,
        cycle: int,
    ) -> None:
        """Members that are not bound go back to the queue with what stopped them."""
        sched = self.scheduler
        bound = {id(a) for a in placed}
        gang = GANG_SCHEDULING if GANG_SCHEDULING in fwk.plugins else ""
        for attempt in outcome.attempts:
            if id(attempt) in bound:
                continue
            info = attempt.info
            if outcome.status is None:  # schedulable group: only this member failed
                if attempt.result is None:
                    status = attempt.failure or Status.unschedulable(GROUP_UNSCHEDULABLE)
                    sched.handle_scheduling_failure(
                        fwk, info, status, attempt.fit, attempt.nominated or CLEAR_NOMINATION, start, cycle
                    )
                continue  # failed for real while being placed: reported already
            if outcome.status.code == Code.ERROR:
                own = (
                    attempt.failure
                    if attempt.failure is not None and attempt.failure.code == Code.ERROR
                    else None
                )
                sched.handle_scheduling_failure(
                    fwk, info, own or outcome.status, None, CLEAR_NOMINATION, start, cycle
                )
                continue
            if attempt.result is not None and outcome.waiting_on_preemption:
                nominated = PostFilterResult(attempt.result.node_name)
                sched.record_nomination(info.pod, nominated)
                sched.handle_scheduling_failure(fwk, info, outcome.status, None, nominated, start, cycle)
            elif attempt.result is not None:
                # placed, but the group as a whole is not: the member waits with Permit's reason
                message = ", ".join(
                    (GROUP_UNSCHEDULABLE, *(attempt.permit.reasons if attempt.permit else ()))
                )
                status = Status(Code.UNSCHEDULABLE, (message,), gang)
                sched.handle_scheduling_failure(fwk, info, status, None, CLEAR_NOMINATION, start, cycle)
            else:
                status = attempt.failure or Status.unschedulable(GROUP_UNSCHEDULABLE)
                sched.handle_scheduling_failure(
                    fwk, info, status, attempt.fit, attempt.nominated or CLEAR_NOMINATION, start, cycle
                )
        # members never tried (an error stopped the group first) share the group's status
        tried = {a.info.pod.uid for a in outcome.attempts}
        for info in infos:
            if info.pod.uid not in tried:
                status = outcome.status or Status.unschedulable(GROUP_UNSCHEDULABLE)
                sched.handle_scheduling_failure(fwk, info, status, None, CLEAR_NOMINATION, start, cycle)

    def _set_condition(self, fwk: Framework, pod: Pod, outcome: GroupOutcome, start: float) -> None:
        duration = time.perf_counter() - start
        if outcome.status is None:
            condition = {"type": CONDITION, "status": "True", "reason": "Scheduled", "message": ""}
            result = SCHEDULED
            log.info("scheduled pod group %s/%s", pod.namespace, pod.pod_group)
        elif outcome.status.code == Code.ERROR:
            condition = {
                "type": CONDITION,
                "status": "False",
                "reason": "SchedulerError",
                "message": outcome.status.message(),
            }
            result = ERROR
            log.error(
                "error scheduling pod group %s/%s: %s", pod.namespace, pod.pod_group, outcome.status.message()
            )
        else:
            condition = {
                "type": CONDITION,
                "status": "False",
                "reason": "Unschedulable",
                "message": outcome.status.message(),
            }
            result = WAITING_ON_PREEMPTION if outcome.waiting_on_preemption else UNSCHEDULABLE
            log.info(
                "unable to schedule pod group %s/%s: %s",
                pod.namespace,
                pod.pod_group,
                outcome.status.message(),
            )
        if self._metrics is not None:
            self._metrics.observe_attempt(result, fwk.profile_name, duration)
            self._count_pending(fwk.profile_name, pod, waiting=result != SCHEDULED)
        group = self._pod_group(pod.namespace, pod.pod_group)
        if group is None:
            return
        conditions = set_condition(group, condition)
        if conditions is None:
            return
        task = asyncio.create_task(self._patch_status(pod.namespace, pod.pod_group, conditions))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def _count_pending(self, profile: str, pod: Pod, *, waiting: bool) -> None:
        """pyscheduler_pending_podgroups: groups whose last attempt did not place them, less
        those deleted since."""
        if self._metrics is None:
            return
        pending = self._pending.setdefault(profile, set())
        key = (pod.namespace, pod.pod_group)
        if waiting:
            pending.add(key)
        else:
            pending.discard(key)
        pending -= {k for k in pending if self._pod_group(*k) is None}
        self._metrics.set_pending(profile, len(pending))

    async def _patch_status(self, namespace: str, name: str, conditions: list[dict[str, Any]]) -> None:
        path = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups/{name}/status"
        try:
            response = await self._client.request(
                "PATCH",
                path,
                {"status": {"conditions": conditions}},
                content_type="application/merge-patch+json",
            )
        except Exception as exc:
            log.error("could not update the status of pod group %s/%s: %s", namespace, name, exc)
            return
        if response.status >= 300 and response.status != 404:
            log.error(
                "could not update the status of pod group %s/%s: HTTP %d", namespace, name, response.status
            )

    def _pod_group(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        lister = self._listers.get(PODGROUPS)
        return lister.get(f"{namespace}/{name}") if lister is not None else None


def set_condition(group: Mapping[str, Any], condition: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The group's conditions with ``condition`` set (upstream's SetStatusCondition), or None when
    nothing changes, or when it would turn a True PodGroupScheduled back to False."""
    meta = group.get("metadata") or {}
    conditions = [dict(c) for c in (group.get("status") or {}).get("conditions") or ()]
    condition = {**condition, "observedGeneration": int(meta.get("generation") or 0)}
    existing = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if existing is None:
        conditions.append({**condition, "lastTransitionTime": _now()})
        return conditions
    if existing.get("status") == "True" and condition["status"] != "True":
        return None
    changed = False
    if existing.get("status") != condition["status"]:
        existing["lastTransitionTime"] = _now()
        changed = True
    for key in ("status", "reason", "message", "observedGeneration"):
        if existing.get(key) != condition[key]:
            existing[key] = condition[key]
            changed = True
    return conditions if changed else None


def _within(placement: Placement, parent: Placement) -> Placement:
    if parent.nodes is None:
        return placement
    nodes = parent.nodes if placement.nodes is None else placement.nodes & parent.nodes
    return Placement(placement.name, nodes)


def _member_order(info: QueuedPodInfo) -> tuple[int, float]:
    """Higher priority first, then the longer waiting (upstream's order within a group)."""
    started = info.initial_attempt_timestamp
    return (-info.pod.priority, started if started is not None else math.inf)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
