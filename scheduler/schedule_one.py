"""The story of one pod: the scheduling cycle, then the binding cycle.

The scheduling cycle is synchronous: between reading the cache's snapshot and assuming the pod on
the chosen node nothing awaits, so no informer event can change the cache mid-decision and two
decisions never overbook a node (docs/architecture.md, Principles: "One decision, one picture").
The one exception is extenders (HTTP services, see ``scheduler.extender``): the cycle awaits their
answers, holding the cache meanwhile so it still decides on one unchanged picture. Binding runs as
bounded concurrent asyncio tasks; a failed binding unreserves, forgets the assumed pod and requeues
it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from scheduler import logs
from scheduler.api import Pod
from scheduler.cache import Cache
from scheduler.extender import MAX_EXTENDER_PRIORITY
from scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    Code,
    CycleState,
    Diagnosis,
    Extender,
    NodeInfo,
    NodeLister,
    NodeTable,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    Status,
)
from scheduler.framework.interface import ASSIGNED_POD, ClusterEvent
from scheduler.framework.messages import fit_error_message
from scheduler.metrics import SchedulerMetrics
from scheduler.queue import SchedulingQueue
from scheduler.runtime import Framework
from scheduler.runtime.batch import RankedNodes
from scheduler.runtime.framework import EXTENDER_NAME, nominated_pods_to_respect

log = logging.getLogger(__name__)
score_log = logging.getLogger("scheduler.scores")  # the -v=10 score trace, as the framework's

# After Reserve/Permit/binding failures the pod's nomination is void (upstream's clearNominatedNode):
# left in its status it would hold room on that node again.
CLEAR_NOMINATION = PostFilterResult("")

POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")


class EventSink(Protocol):
    def record(self, obj: Any, event_type: str, reason: str, action: str, note: str) -> None: ...


class StatusSink(Protocol):
    """Writes pods/<name>/status (see scheduler.apidispatcher): ``submit`` in the background
    until it lands, ``write_now`` once, awaited. ``nominated``: None leaves it, "" clears it."""

    def submit(self, pod: Pod, condition: dict[str, Any] | None, nominated: str | None) -> None: ...

    async def write_now(self, pod: Pod, condition: dict[str, Any] | None, nominated: str | None) -> None: ...


# Upstream's numFeasibleNodesToFind: at least this many feasible nodes are looked for...
MIN_FEASIBLE_NODES_TO_FIND = 100
# ...and, with the adaptive percentage (50% minus 1% per 125 nodes), at least this share.
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
# The search filters candidates in chunks of at least this many nodes.
MIN_FILTER_CHUNK = 256


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes are enough (percentageOfNodesToScore; 0 or None: adaptive)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class Rejections:
    """Which candidate slots were rejected, and with which status: batch filters add vectors of
    slots with indexes into ``statuses``, per-node filters add one (slot, status) at a time."""

    slots: list[np.ndarray] = field(default_factory=list)
    status_ids: list[np.ndarray] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    singles: list[tuple[int, Status]] = field(default_factory=list)

    def add(self, slots: np.ndarray, status_ids: np.ndarray, statuses: Sequence[Status], plugin: str) -> None:
        base = len(self.statuses)
        self.statuses.extend(s.with_plugin(plugin) for s in statuses)
        self.slots.append(slots)
        self.status_ids.append(status_ids.astype(np.int64) + base)

    def add_one(self, slot: int, status: Status) -> None:
        self.singles.append((slot, status))

    def count(self) -> int:
        return sum(len(s) for s in self.slots) + len(self.singles)

    def to_diagnosis(self, table: NodeTable) -> Diagnosis:
        diagnosis = Diagnosis()
        infos, statuses = table.infos, self.statuses
        node_to_status = diagnosis.node_to_status
        for slots, ids in zip(self.slots, self.status_ids, strict=True):
            # runs for every unschedulable pod over every node: plain loops, no per-item calls
            for slot, status_id in zip(slots.tolist(), ids.tolist(), strict=True):
                node_to_status[infos[slot].node.name] = statuses[status_id]
        for slot, status in self.singles:
            node_to_status[table.info(slot).node.name] = status
        for status in (*self.statuses, *(status for _, status in self.singles)):
            if status.code == Code.PENDING:
                diagnosis.pending_plugins.add(status.plugin)
            else:
                diagnosis.unschedulable_plugins.add(status.plugin)
        return diagnosis


@dataclass(slots=True)
class Search:
    """The outcome of one search for feasible nodes."""

    feasible: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rejections: Rejections = field(default_factory=Rejections)
    processed: int = 0  # candidates looked at (where the next search starts)
    error: Status | None = None


@dataclass(slots=True)
class FitError:
    """No node fits the pod."""

    num_all_nodes: int
    diagnosis: Diagnosis

    def message(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int


class PodGroupScheduler(Protocol):
    async def schedule(self, info: QueuedPodInfo) -> None:
        """One cycle for the whole pod group of the popped pod ``info``."""


class Scheduler:
    """Pops pods from the queue, decides, assumes, and hands them to binding tasks."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        frameworks: Mapping[str, Framework],
        events: EventSink,
        status: StatusSink,
        current_pod: Callable[[Pod], Pod | None],
        metrics: SchedulerMetrics | None = None,
        max_inflight_bindings: int = 256,
        rng: random.Random | None = None,
        extenders: Sequence[Extender] = (),
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.frameworks = frameworks
        self.events = events
        self.status = status
        self.current_pod = current_pod
        self.metrics = metrics
        self._binding_slots = asyncio.Semaphore(max_inflight_bindings)
        self._bindings: set[asyncio.Task[None]] = set()
        self._rng = rng or random.Random()
        self.extenders = tuple(extenders)  # shared by the profiles, ignorable ones last
        # where the next search for feasible nodes starts, so every node gets its turn
        self._next_start_index = 0
        # GenericWorkload: the pod-group cycle (scheduler.schedule_one_podgroup) schedules pods of a PodGroup
        self.pod_groups: PodGroupScheduler | None = None

    @property
    def next_start_index(self) -> int:
        """Where the next search for feasible nodes starts in the snapshot's node order (modulo
        its length): what explain's view of the next cycle starts from."""
        return self._next_start_index

    # ------------------------------------------------------------------ loop

    async def run(self) -> None:
        """Schedule pods one at a time until cancelled or the queue closes."""
        while True:
            info = await self.queue.pop()
            if info is None:
                return
            await self.attempt(info)
            # Let informer events in between decisions even when the queue is never empty.
            await asyncio.sleep(0)

    async def attempt(self, info: QueuedPodInfo) -> None:
        """One scheduling cycle for a popped pod, holding a binding slot (waits when all are busy)."""
        await self._binding_slots.acquire()
        binding = False
        try:
            binding = await self.schedule_one(info)
        except Exception:
            # Never let one pod take the loop down; the pod is retried.
            log.exception("unexpected error scheduling pod %s", info.pod.key)
            info.consecutive_errors += 1  # an error, not a rejection: backoff follows the errors
            self.queue.add_unschedulable(info, self.queue.scheduling_cycle())
        finally:
            # The slot now belongs to the binding task, or is free again.
            if not binding:
                self._binding_slots.release()

    async def wait_for_bindings(self, timeout: float) -> bool:
        """Wait for in-flight binding tasks (graceful shutdown); False if some are still running."""
        pending = set(self._bindings)
        if not pending:
            return True
        _, still = await asyncio.wait(pending, timeout=timeout)
        return not still

    # ------------------------------------------------------------------ scheduling cycle

    async def schedule_one(self, info: QueuedPodInfo) -> bool:
        """One scheduling cycle; True when a binding task was started (it then owns a binding slot).

        Only extender calls suspend it; until the pod is decided the cache is held."""
        pod = info.pod
        if pod.pod_group and self.pod_groups is not None:
            await self.pod_groups.schedule(info)  # its bindings hold no binding slot
            return False
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None or pod.is_terminating or self.cache.is_assumed(pod.uid):
            if fwk is not None and pod.is_terminating:
                self.events.record(
                    pod, "Warning", "FailedScheduling", "Scheduling", f"skip schedule deleting pod: {pod.key}"
                )
            self.queue.done(pod.uid)
            return False

        start = time.perf_counter()
        state = CycleState()
        state.record_plugin_metrics = self.metrics is not None and self.metrics.should_sample_plugins()
        cycle = self.queue.scheduling_cycle()
        post: tuple[PostFilterResult | None, Status | None] | None = None
        await self.cache.until_released()  # explain or shadow mode may hold it for extenders
        with self.cache.held():
            result = await self.schedule_pod(fwk, state, pod)
            if isinstance(result, FitError) and fwk.post_filter_plugins:
                post = await fwk.run_post_filter(state, pod, result.diagnosis)
        if isinstance(result, Status):
            self.handle_scheduling_failure(fwk, info, result, None, CLEAR_NOMINATION, start, cycle)
            return False
        if isinstance(result, FitError):
            # without PostFilter plugins nothing can nominate the pod: a nomination is void
            nominated: PostFilterResult | None = CLEAR_NOMINATION
            if post is not None:
                post_result, post_status = post
                if post_status is not None:
                    result.diagnosis.post_filter_msg = post_status.message()
                    if post_status.code == Code.ERROR:
                        log.error("PostFilter failed for pod %s: %s", pod.key, post_status.message())
                nominated = post_result
                self.record_nomination(pod, post_result)
            unschedulable = Status(Code.UNSCHEDULABLE, (result.message(),))
            self.handle_scheduling_failure(fwk, info, unschedulable, result, nominated, start, cycle)
            return False
        self._observe_algorithm(start)

        assumed = pod.on_node(result.node_name)
        self.cache.assume_pod(assumed)
        try:
            # Placed now: its nomination must stop holding room on the nominated node.
            self.queue.delete_nominated_pod(assumed)
            status = fwk.run_reserve(state, assumed, result.node_name)
            if status is None:
                status = fwk.run_permit(state, assumed, result.node_name)
        except Exception:
            self.cache.forget_pod(assumed)
            raise
        if status is not None and status.code != Code.WAIT:
            fwk.run_unreserve(state, assumed, result.node_name)
            self.cache.forget_pod(assumed)
            fit = self.single_node_fit_error(result.node_name, status) if status.is_rejected else None
            self.handle_scheduling_failure(fwk, info, status, fit, CLEAR_NOMINATION, start, cycle)
            return False

        task = asyncio.create_task(self._binding_cycle(fwk, state, info, assumed, result, start, cycle))
        self._bindings.add(task)
        task.add_done_callback(self._binding_done)
        return True

    def reject_waiting(self, uid: str) -> None:
        """A pod deleted while held at Permit gives back what it reserved at once."""
        for fwk in self.frameworks.values():
            waiting = fwk.waiting_pods.get(uid)
            if waiting is not None:
                waiting.reject("", "pod was deleted while waiting at Permit")

    def record_nomination(self, pod: Pod, result: PostFilterResult | None) -> None:
        """Follow PostFilter's verdict at once, before the API reflects the status patch: the queue
        holds room for the pod on its nominated node, or no longer does (an empty name)."""
        if result is None:
            return
        if result.nominated_node_name:
            self.queue.add_nominated_pod(pod, result.nominated_node_name)
        else:
            self.queue.delete_nominated_pod(pod)

    def nominated_to_respect(self, pod: Pod) -> dict[str, list[Pod]]:
        """Per node, the nominated pods ``pod`` must leave room for (usually none)."""
        nominated: dict[str, list[Pod]] = {}
        for node in self.queue.nominated_node_names():
            pods = nominated_pods_to_respect(pod, self.queue.nominated_pods_for_node(node))
            if pods:
                nominated[node] = pods
        return nominated

    def _binding_done(self, task: asyncio.Task[None]) -> None:
        self._binding_slots.release()
        self._unslotted_binding_done(task)

    def bind_in_background(
        self,
        fwk: Framework,
        state: CycleState,
        info: QueuedPodInfo,
        assumed: Pod,
        result: ScheduleResult,
        start: float,
        cycle: int,
    ) -> None:
        """The binding cycle of a pod the pod-group cycle placed (holding no binding slot: the
        group's members are bound together)."""
        task = asyncio.create_task(self._binding_cycle(fwk, state, info, assumed, result, start, cycle))
        self._bindings.add(task)
        task.add_done_callback(self._unslotted_binding_done)

    def _unslotted_binding_done(self, task: asyncio.Task[None]) -> None:
        self._bindings.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("binding task failed", exc_info=task.exception())

    async def schedule_pod(
        self, fwk: Framework, state: CycleState, pod: Pod
    ) -> ScheduleResult | FitError | Status:
        """Upstream's schedulePod: a host, a FitError (no node fits), or an Error status.

        It suspends only to ask extenders (the caller holds the cache); without them it never
        does, and ``run_now`` runs it without an event loop."""
        snapshot = self.cache.snapshot()
        num_nodes = len(snapshot)
        if num_nodes == 0:
            return Status.unresolvable("no nodes available to schedule pods")
        pre_result, status, plugins = fwk.run_pre_filter(state, pod, snapshot)
        if status is not None and not status.is_rejected:
            return status
        if status is not None:
            return FitError(num_nodes, pre_filter_diagnosis(status, plugins))

        batch, signature, hint = fwk.batch, None, ""
        cycle = self.queue.scheduling_cycle()
        if batch is not None:
            signature = fwk.sign_pod(state, pod)
            hint = batch.node_hint(pod, signature, state, cycle, snapshot)
        nominated = self.nominated_to_respect(pod)
        # A preemptor's nominated node, else the batch's hint, is tried first and taken if it fits.
        if pod.nominated_node_name or hint:
            name = pod.nominated_node_name or hint
            fits = await self.nominated_node_fits(fwk, state, pod, snapshot, name, nominated)
            if isinstance(fits, Status):
                log.error(
                    "evaluation failed on nominated node %s for pod %s: %s", name, pod.key, fits.message()
                )
            elif fits:  # taken without scoring; otherwise the whole cluster is searched as usual
                if batch is not None:
                    batch.store(signature, hint, name, cycle)
                return ScheduleResult(name, 1, 1)

        order = snapshot.order
        start_index = self._next_start_index % num_nodes
        candidates = np.concatenate((order[start_index:], order[:start_index])) if start_index else order
        candidates, absent_status = narrow_to_pre_filter_result(snapshot, candidates, pre_result, plugins)

        search = find_nodes_that_pass_filters(
            fwk, state, pod, snapshot, candidates, nominated, self.extenders
        )
        # one start index for the whole scheduler, moved on even after an error (as upstream)
        self._next_start_index = (self._next_start_index + search.processed) % num_nodes
        if search.error is not None:
            return search.error
        feasible, rejections = search.feasible, search.rejections
        table = snapshot.table
        # statuses of the nodes extenders filtered out, by name
        extender_statuses: dict[str, Status] = {}
        filtered_out = False
        if self.extenders and len(feasible):
            passed = await find_nodes_that_pass_extenders(self.extenders, pod, _infos(table, feasible))
            if isinstance(passed, Status):
                return passed
            nodes, extender_statuses = passed
            filtered_out = len(nodes) != len(feasible)
            feasible = np.fromiter((info.slot for info in nodes), dtype=np.int64, count=len(nodes))
        if len(feasible) == 0:
            diagnosis = no_fit_diagnosis(
                rejections, table, extender_statuses, absent_status, plugins, filtered_out
            )
            return FitError(num_nodes, diagnosis)
        evaluated = len(feasible) + rejections.count() + len(extender_statuses)
        if len(feasible) == 1:
            only = table.info(int(feasible[0])).name
            if batch is not None:
                batch.store(signature, hint, only, cycle)
            return ScheduleResult(only, evaluated, 1)
        totals, status = fwk.run_scoring(state, pod, table, feasible)
        if status is not None:
            return status
        if self.extenders:
            totals = totals + await prioritize_with_extenders(self.extenders, pod, _infos(table, feasible))
        best = table.info(int(feasible[select_host(totals, self._rng)])).name
        if batch is not None:
            scored = totals
            batch.store(
                signature,
                hint,
                best,
                cycle,
                others=len(feasible) - 1,
                ranked=lambda: RankedNodes.of(table, feasible, scored, best, self._rng),
            )
        return ScheduleResult(best, evaluated, len(feasible))

    async def nominated_node_fits(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: NodeLister,
        name: str,
        nominated: Mapping[str, list[Pod]],
        *,
        timed: bool = True,
    ) -> bool | Status:
        """Upstream's evaluateNominatedNode: whether ``pod`` passes the filters (and the extenders'
        filters) on node ``name`` alone, or the extenders' error. As upstream, a PreFilter result
        does not narrow this check. ``timed=False`` (explain) runs the filters unobserved; the
        extenders' await stays outside ``fwk.unobserved()``, which must not span a suspension."""
        info = snapshot.get(name)
        if info is None:
            return False
        with nullcontext() if timed else fwk.unobserved():
            search = find_nodes_that_pass_filters(
                fwk, state, pod, snapshot, np.array([info.slot]), nominated, self.extenders
            )
        if not len(search.feasible):
            return False
        if not self.extenders:
            return True
        passed = await find_nodes_that_pass_extenders(self.extenders, pod, [info])
        return passed if isinstance(passed, Status) else bool(passed[0])

    @staticmethod
    def single_node_fit_error(node_name: str, status: Status) -> FitError:
        """A FitError for a pod rejected on its chosen node after Filter (by Reserve, Permit or
        binding): what the failure reports as the pod's unschedulable plugins."""
        diagnosis = Diagnosis(node_to_status={node_name: status}, unschedulable_plugins={status.plugin})
        return FitError(1, diagnosis)

    # ------------------------------------------------------------------ binding cycle

    async def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        info: QueuedPodInfo,
        assumed: Pod,
        result: ScheduleResult,
        start: float,
        cycle: int,
    ) -> None:
        node = result.node_name
        pre_flight = fwk.run_pre_bind_pre_flight(state, assumed, node)
        status = None
        if pre_flight is not None and not pre_flight.is_skip:
            status = pre_flight  # an error
            fwk.discard_waiting_pod(assumed)
        elif pre_flight is None or fwk.will_wait_on_permit(assumed):
            # NominatedNodeNameForExpectation (beta, on): when binding will take a while (PreBind
            # work or a Permit wait), tell other components where the pod is going.
            await self._patch_nomination(assumed, node)
        if status is None:
            status = await fwk.wait_on_permit(assumed)
        fit = None
        if status is not None and status.is_rejected:
            fit = self.single_node_fit_error(node, status)
        if status is None:
            self.queue.done(assumed.uid)
            status = await fwk.run_pre_bind(state, assumed, node)
        if status is None:
            if self.queue.was_deleted(assumed.uid):
                status = Status.from_error(RuntimeError(f"pod {assumed.key} was deleted before binding"))
            else:
                bound, status = await extenders_binding(self.extenders, assumed, node)
                if not bound:
                    status = await fwk.run_bind(state, assumed, node)
        self.cache.finish_binding(assumed)
        if status is None:
            self.events.record(
                assumed, "Normal", "Scheduled", "Binding", f"Successfully assigned {assumed.key} to {node}"
            )
            log.debug(
                "bound %s to %s (%d feasible of %d evaluated)",
                assumed.key,
                node,
                result.feasible_nodes,
                result.evaluated_nodes,
            )
            self._observe_scheduled(fwk, info, start)
            fwk.run_post_bind(state, assumed, node)
            return
        fwk.run_unreserve(state, assumed, node)
        self.cache.forget_pod(assumed)
        # Resources the assumed pod held are free again: pods they blocked may fit now. A rejected
        # pod is parked first and left out, so the event does not undo its own rejection.
        if status.is_rejected:
            self.handle_scheduling_failure(fwk, info, status, fit, CLEAR_NOMINATION, start, cycle)
            self.queue.on_cluster_event(ASSIGNED_POD_DELETE, assumed, None, exclude=assumed.uid)
        else:
            self.queue.on_cluster_event(ASSIGNED_POD_DELETE, assumed, None)
            self.handle_scheduling_failure(fwk, info, status, fit, CLEAR_NOMINATION, start, cycle)

    # ------------------------------------------------------------------ failures

    def handle_scheduling_failure(
        self,
        fwk: Framework,
        info: QueuedPodInfo,
        status: Status,
        fit: FitError | None,
        nominated: PostFilterResult | None,
        start: float,
        cycle: int,
    ) -> None:
        """Report the failure (event + PodScheduled condition) and put the pod back in the queue
        (upstream's handleSchedulingFailure). ``fit`` is the FitError of a rejection (None for an
        error); ``nominated`` a PostFilter result to write with it (``CLEAR_NOMINATION`` clears
        the pod's nominated node, None leaves it); ``start`` and ``cycle`` are the attempt's
        ``perf_counter`` start and the queue's scheduling cycle when it popped the pod. The pod
        cycle and the pod-group cycle report every failed pod here."""
        pod = info.pod
        rejected = fit is not None or status.is_rejected
        reason = POD_REASON_UNSCHEDULABLE if rejected else POD_REASON_SCHEDULER_ERROR
        message = fit.message() if fit is not None else status.message()
        if fit is not None:
            info.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            info.pending_plugins = set(fit.diagnosis.pending_plugins)
            log.info("unable to schedule pod %s; no fit; waiting: %s", pod.key, message)
        elif rejected:  # e.g. a member of a pod group that cannot be placed whole
            info.unschedulable_plugins = {status.plugin} if status.plugin else set()
            info.pending_plugins = set()
            log.info("unable to schedule pod %s; waiting: %s", pod.key, message)
        else:
            info.unschedulable_plugins = set()
            info.pending_plugins = set()
            log.warning("error scheduling pod %s; retrying: %s", pod.key, message)
        # Backoff grows with consecutive errors while they last, else with rejections (upstream v1.36).
        info.consecutive_errors = 0 if rejected else info.consecutive_errors + 1
        self._observe_failure(fwk, reason, start)

        current = self.current_pod(pod)
        if current is not None and current.uid != pod.uid:
            # Deleted and created again under the same name: the new pod is queued on its own.
            self.queue.done(pod.uid)
            return
        if current is None or current.node_name:
            # Deleted meanwhile, or bound by someone else: nothing to retry.
            self.queue.done(pod.uid)
        else:
            info.pod = current
            self.queue.add_unschedulable(info, cycle)

        self.events.record(pod, "Warning", "FailedScheduling", "Scheduling", message)
        if current is None:
            return
        condition: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
        }
        if current.generation:
            condition["observedGeneration"] = current.generation  # PodObservedGenerationTracking (GA)
        # A PostFilter result sets the nominated node, or clears it with an empty name.
        nominated_node = nominated.nominated_node_name if nominated is not None else None
        if _condition_unchanged(current, condition) and nominated_node in (None, current.nominated_node_name):
            return
        self.status.submit(current, condition, nominated_node)

    async def _patch_nomination(self, pod: Pod, node: str) -> None:
        """Best effort: a failure only means other components learn of the placement later."""
        try:
            await self.status.write_now(pod, None, node)
        except Exception as exc:
            log.error("could not set the nominated node of pod %s to %s: %s", pod.key, node, exc)

    # ------------------------------------------------------------------ metrics

    def _observe_algorithm(self, start: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_algorithm(time.perf_counter() - start)

    def _observe_scheduled(self, fwk: Framework, info: QueuedPodInfo, start: float) -> None:
        if self.metrics is None:
            return
        self.metrics.observe_attempt("scheduled", fwk.profile_name, time.perf_counter() - start)
        sli = None
        if info.initial_attempt_timestamp is not None:
            sli = max(0.0, self.queue.now() - info.initial_attempt_timestamp)
        self.metrics.observe_pod_scheduled(info.attempts, sli)

    def _observe_failure(self, fwk: Framework, reason: str, start: float) -> None:
        if self.metrics is not None:
            result = "unschedulable" if reason == POD_REASON_UNSCHEDULABLE else "error"
            self.metrics.observe_attempt(result, fwk.profile_name, time.perf_counter() - start)


def _condition_unchanged(pod: Pod, condition: Mapping[str, Any]) -> bool:
    existing = pod.condition("PodScheduled")
    return existing is not None and all(
        existing.get(k) == condition[k] for k in ("status", "reason", "message")
    )


# ---------------------------------------------------------------------- the search for nodes


def pre_filter_diagnosis(status: Status, plugins: set[str]) -> Diagnosis:
    """Why no node fits when a PreFilter plugin rejected the pod (every node shares its status)."""
    diagnosis = Diagnosis(
        absent_nodes_status=status, pre_filter_msg=status.message(), unschedulable_plugins=plugins
    )
    if status.code == Code.PENDING:
        diagnosis.pending_plugins, diagnosis.unschedulable_plugins = plugins, set()
    return diagnosis


def narrow_to_pre_filter_result(
    snapshot: NodeLister, candidates: np.ndarray, pre_result: PreFilterResult | None, plugins: set[str]
) -> tuple[np.ndarray, Status | None]:
    """The candidates (in their order) a PreFilterResult keeps, and the status of the nodes it
    leaves out (None when it keeps them all)."""
    if pre_result is None or pre_result.node_names is None:
        return candidates, None
    wanted = [snapshot.get(name) for name in pre_result.node_names]
    wanted_slots = {info.slot for info in wanted if info is not None}
    kept = np.array([s for s in candidates.tolist() if s in wanted_slots], dtype=np.int64)
    return kept, Status.unresolvable(f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]")


def no_fit_diagnosis(
    rejections: Rejections,
    table: NodeTable,
    extender_statuses: Mapping[str, Status],
    absent_status: Status | None,
    plugins: set[str],
    filtered_out: bool,
) -> Diagnosis:
    """Why no node fits after the search: the filters' and extenders' verdicts per node, the status
    of the nodes a PreFilterResult left out, and the plugins whose events may help."""
    diagnosis = rejections.to_diagnosis(table)
    diagnosis.node_to_status.update(extender_statuses)
    diagnosis.absent_nodes_status = absent_status
    diagnosis.unschedulable_plugins |= plugins if absent_status else set()
    if filtered_out:
        # extenders register no cluster events: any event may help the pod (as upstream)
        diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
    return diagnosis


def feasible_nodes_wanted(fwk: Framework, extenders: Sequence[Extender], num_candidates: int) -> int:
    """How many feasible nodes a search looks for: numFeasibleNodesToFind, or one when nothing
    would score them and no extender filters them."""
    if not fwk.score_plugins and not any(e.is_filter() or e.is_prioritizer() for e in extenders):
        return min(1, num_candidates)
    return num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, num_candidates)


def find_nodes_that_pass_filters(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    snapshot: NodeLister,
    candidates: np.ndarray,
    nominated: Mapping[str, Sequence[Pod]],
    extenders: Sequence[Extender] = (),
    num_to_find: int | None = None,
) -> Search:
    """Feasible slots among ``candidates`` (in their order), stopping once enough are found
    (``num_to_find``, by default what percentageOfNodesToScore asks; explain asks for all).

    Candidates are taken in chunks (twice the number to find, then doubling), so a mostly
    empty cluster never pays for filtering every node. In each chunk the batch filters run
    over all its slots at once, then the other filters node by node. Nodes that hold
    nominated pods ``pod`` must leave room for skip the batch filters, which cannot see such
    pods, and run every filter per node with them added. One feasible node is enough when
    nothing would score them and no extender filters them.
    """
    started = time.perf_counter()
    table = snapshot.table
    search = Search()
    if num_to_find is None:
        num_to_find = feasible_nodes_wanted(fwk, extenders, len(candidates))
    batch_plugins, per_node = fwk.filter_plugins_in_play(state)
    every_filter = [*batch_plugins, *per_node]
    held = {info.slot for name, pods in nominated.items() if pods and (info := snapshot.get(name))}
    fwk.nominated_views.keep_only(nominated)
    is_held = np.isin(candidates, np.fromiter(held, dtype=np.int64, count=len(held))) if held else None
    positions = np.arange(len(candidates))
    found: list[np.ndarray] = []
    count = 0
    search.processed = len(candidates)
    # with every filter batched, a chunk past the nodes wanted is work the per-node path skips
    # (DynamicResources' allocation search runs per slot): the first one is only what is wanted
    start, size = 0, max(num_to_find if not per_node else 2 * num_to_find, MIN_FILTER_CHUNK)
    while start < len(candidates) and count < num_to_find:
        stop = min(start + size, len(candidates))
        alive, pos = candidates[start:stop], positions[start:stop]
        held_here: list[tuple[int, int]] = []
        if is_held is not None:
            mask = is_held[start:stop]
            held_here = list(zip(pos[mask].tolist(), alive[mask].tolist(), strict=True))
            alive, pos = alive[~mask], pos[~mask]
        for plugin in batch_plugins:
            if alive.size == 0:
                break
            verdict = fwk.run_batch_filter(plugin, state, pod, table, alive)
            if isinstance(verdict, Status):
                search.error = verdict
                break
            if verdict is None or not verdict.rejected.any():
                continue
            rejected = verdict.rejected
            search.rejections.add(
                alive[rejected], verdict.status_ids[rejected], verdict.statuses, plugin.name
            )
            keep = ~rejected
            alive, pos = alive[keep], pos[keep]
        if search.error is not None:
            break
        if not per_node and not held_here:
            taken = alive[: num_to_find - count]
            found.append(taken)
            count += len(taken)
            if count >= num_to_find and len(taken):
                search.processed = int(pos[len(taken) - 1]) + 1
        else:
            count += _filter_one_by_one(
                fwk,
                state,
                pod,
                table,
                alive,
                pos,
                held_here,
                nominated,
                per_node,
                every_filter,
                num_to_find - count,
                found,
                search,
            )
            if search.error is not None:
                break
        start, size = stop, size * 2
    search.feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    fwk.observe_extension_point("Filter", search.error, started)
    return search


def _filter_one_by_one(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    alive: np.ndarray,
    pos: np.ndarray,
    held_here: list[tuple[int, int]],
    nominated: Mapping[str, Sequence[Pod]],
    per_node: Sequence[Any],
    every_filter: Sequence[Any],
    wanted: int,
    found: list[np.ndarray],
    search: Search,
) -> int:
    """The per-node part of one chunk; returns how many feasible nodes it added to ``found``."""
    positions, slots = pos.tolist(), alive.tolist()
    held = {slot for _, slot in held_here}
    if held_here:
        merged = sorted([*zip(positions, slots, strict=True), *held_here])
        positions, slots = [p for p, _ in merged], [s for _, s in merged]
    infos = table.infos
    run_filters = fwk.run_filter_plugins
    feasible: list[int] = []
    for position, slot in zip(positions, slots, strict=True):
        info = infos[slot]
        if held and slot in held:
            status = fwk.run_filter_plugins_with(
                state, pod, info, every_filter, nominated[info.name], fwk.nominated_views
            )
        else:
            status = run_filters(state, pod, info, per_node)
        if status is None:
            feasible.append(slot)
            if len(feasible) >= wanted:
                search.processed = position + 1
                break
        elif status.code == Code.ERROR:
            search.error = status
            break
        else:
            search.rejections.add_one(slot, status)
    found.append(np.array(feasible, dtype=np.int64))
    return len(feasible)


# ---------------------------------------------------------------------- extenders


async def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender], pod: Pod, nodes: list[NodeInfo]
) -> tuple[list[NodeInfo], dict[str, Status]] | Status:
    """Upstream's findNodesThatPassExtenders: each interested extender in turn keeps some of the
    nodes the previous ones left; the ones it fails get its message as their status
    (UnschedulableAndUnresolvable winning over Unschedulable). An error fails the attempt,
    unless the extender is ignorable: then it is skipped."""
    statuses: dict[str, Status] = {}
    for extender in extenders:
        if not nodes:
            break
        if not extender.is_interested(pod):
            continue
        try:
            result = await extender.filter(pod, nodes)
        except Exception as exc:
            if extender.is_ignorable():
                log.info(
                    "skipping extender %s as it returned error and has ignorable flag set: %s",
                    extender.name,
                    exc,
                )
                continue
            return Status.from_error(exc)
        unresolvable = result.failed_and_unresolvable
        for name, message in unresolvable.items():
            statuses[name] = Status.unresolvable(message)
        for name, message in result.failed.items():
            if name not in unresolvable:
                statuses[name] = Status.unschedulable(message)
        nodes = list(result.nodes)
    return nodes, statuses


async def prioritize_with_extenders(
    extenders: Sequence[Extender], pod: Pod, nodes: list[NodeInfo]
) -> np.ndarray:
    """The extenders' part of upstream's prioritizeNodes, per node: the interested prioritizers
    are asked at once, and each adds score * weight * (MaxNodeScore / MaxExtenderPriority). A
    failed call only loses that extender's scores."""
    totals = np.zeros(len(nodes), dtype=np.int64)
    asked = [e for e in extenders if e.is_prioritizer() and e.is_interested(pod)]
    if not asked:
        return totals
    answers = await asyncio.gather(*(e.prioritize(pod, nodes) for e in asked), return_exceptions=True)
    position = {info.name: i for i, info in enumerate(nodes)}
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    trace = logs.v(10)
    for extender, answer in zip(asked, answers, strict=True):
        if isinstance(answer, BaseException):
            if logs.v(5):
                log.debug("no score given by extender %s for pod %s: %s", extender.name, pod.key, answer)
            continue
        scores, weight = answer
        for host, score in scores:
            if trace:
                score_log.debug(
                    "Extender scored node for pod pod=%s extender=%s node=%s score=%d",
                    pod.key,
                    extender.name,
                    host,
                    score,
                )
            i = position.get(host)
            if i is not None:
                totals[i] += score * weight * scale
    return totals


async def extenders_binding(
    extenders: Sequence[Extender], pod: Pod, node_name: str
) -> tuple[bool, Status | None]:
    """Upstream's extendersBinding: the first interested extender with a bind verb binds the pod
    (an ignorable one that fails is skipped); (False, None) leaves it to the Bind plugins."""
    for extender in extenders:
        if not extender.is_binder() or not extender.is_interested(pod):
            continue
        try:
            await extender.bind(pod, node_name)
        except Exception as exc:
            if extender.is_ignorable():
                log.info(
                    "skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                    extender.name,
                    exc,
                )
                continue
            return True, Status.from_error(exc)
        return True, None
    return False, None


def _infos(table: NodeTable, slots: np.ndarray) -> list[NodeInfo]:
    return [table.info(slot) for slot in slots.tolist()]


T = TypeVar("T")


def run_now(step: Coroutine[Any, Any, T]) -> T:
    """Run a cycle step that cannot suspend (no extenders) to its end without an event loop:
    how tools and the test harness decide."""
    try:
        step.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    step.close()
    raise RuntimeError("the scheduling cycle waited for an extender: run it in an event loop")


def select_host(totals: np.ndarray, rng: random.Random) -> int:
    """Index of the highest total; ties are broken uniformly at random (upstream's heap order
    among equal scores depends on its parallel filtering, which is no better than random)."""
    best = np.flatnonzero(totals == totals.max())
    return int(best[0] if len(best) == 1 else best[rng.randrange(len(best))])
