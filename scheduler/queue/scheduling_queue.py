"""The scheduling queue: which pending pod is tried next, and when a failed one is tried again.

Four places hold a pending pod, as upstream's PriorityQueue (v1.36, queueing hints and
pop-from-backoffQ enabled):

- **activeQ**: ready to be tried, a heap on the QueueSort plugin's key.
- **backoffQ**: tried and failed, waiting out its backoff (``initial * 2^(failures-1)``, capped at
  ``max``). Expiries are rounded down to whole-second windows and the flusher runs on window
  boundaries, so a window's pods reach activeQ together and in priority order. While activeQ is
  empty the scheduler does not idle: it pops from backoffQ directly. Pods that failed with an
  error (no rejecting plugin), and gang members sent back by their own gang's failure, wait in a
  separate heap that is never popped early.
- **unschedulable pool**: rejected by plugins and waiting for a cluster event that a rejecting
  plugin's QueueingHint says may help, or for ``max_in_unschedulable`` to pass.
- **gated**: a PreEnqueue plugin (e.g. SchedulingGates) keeps the pod from being tried at all.

Popped pods are *in flight* until :meth:`SchedulingQueue.done` (or :meth:`add_unschedulable`);
events arriving meanwhile are remembered so a rejected pod goes straight back to backoffQ when one
of them could have changed the verdict.

The members of a gang (a pod group a plugin schedules all or nothing) wait and move as one: an
event that may help any member's rejection moves every member parked in the unschedulable pool,
and a member rejected only by the gang plugin keeps its own earlier reasons (``queue/gangs.py``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol

from scheduler.api import Pod
from scheduler.framework import ClusterEvent, ClusterEventWithHint, QueuedPodInfo, QueueingHint, Status
from scheduler.queue.events import (
    BACKOFF_COMPLETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    FORCE_ACTIVATE,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    event_label,
    is_wildcard,
    pod_update_events,
)
from scheduler.queue.gangs import Gang, GangRejections
from scheduler.queue.heap import KeyedHeap
from scheduler.queue.in_flight import InFlight
from scheduler.queue.nominator import Nominator

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"

# Backoff expiries are aligned to windows of this length (upstream's backoffQ ordering window).
BACKOFF_WINDOW = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

_ADD_LABEL = event_label(EVENT_UNSCHEDULED_POD_ADD)
_UPDATE_LABEL = event_label(EVENT_UNSCHEDULED_POD_UPDATE)


class QueuePolicy(Protocol):
    """What the queue needs from the profiles (implemented by the framework runtime)."""

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        """(name of the plugin that gates the pod, its status); ("", None) lets it in."""

    def hints(self, pod: Pod) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        """The cluster events each plugin of the pod's profile registered, by plugin name."""

    def gang_of(self, pod: Pod) -> Gang | None:
        """The gang the pod's profile schedules it with, all or nothing (None for most pods)."""


class _Strategy(IntEnum):
    SKIP = 0
    # after its backoff, waited out even while the scheduler is idle: for gang members sent back
    # by what their own gang released when it failed (else an infeasible gang retries in a loop)
    AFTER_FULL_BACKOFF = 1
    AFTER_BACKOFF = 2
    IMMEDIATELY = 3


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """``initial * 2^(attempts-1)`` capped at ``maximum``; no penalty before the first attempt."""
    if attempts <= 0:
        return 0.0
    return min(maximum, initial * 2.0 ** min(attempts - 1, 64))


def _align(t: float) -> float:
    return math.floor(t / BACKOFF_WINDOW) * BACKOFF_WINDOW


class SchedulingQueue:
    """Single-threaded: every call happens on the scheduler's event loop."""

    def __init__(
        self,
        *,
        sort_key: Callable[[QueuedPodInfo], Any],
        policy: QueuePolicy,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self._sort_key = sort_key
        self._policy = policy
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_in_unschedulable = max_in_unschedulable
        self._clock = clock
        self._metrics = metrics
        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._error_backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        self._in_flight = InFlight()
        self._gangs = GangRejections()
        # Popped and not handed back: uid -> pop time. Deleted ones move to _deleted (uid -> time),
        # which the binder consults; both are pruned after max_in_unschedulable.
        self._popped: dict[str, float] = {}
        self._deleted: dict[str, float] = {}
        self._nominator = Nominator()
        self._cycle = 0
        # The cycle during which the last cluster event arrived (for pods not tracked in flight).
        self._move_request_cycle = -1
        self._closed = False
        self._wakeup = asyncio.Event()
        self._report()

    # ------------------------------------------------------------------ informer side

    def add(self, pod: Pod) -> None:
        """A new pending pod: PreEnqueue decides between activeQ and the gated set."""
        existing = self._find(pod.uid)
        if existing is not None or pod.uid in self._in_flight:
            self.update(existing.pod if existing is not None else pod, pod)
            return
        info = QueuedPodInfo(pod=pod, timestamp=self._clock())
        self._move_to_active(info, _ADD_LABEL)
        self._report()

    def update(self, old: Pod, new: Pod) -> None:
        """Replace the queued copy wherever it is; an update may release a rejected or gated pod."""
        uid = new.uid
        if uid in self._in_flight:
            # The cycle reads the old version; remember the change in case it rejects the pod.
            for event in pod_update_events(old, new):
                self._in_flight.record(event, old, new)
            return
        for heap in (self._active, self._backoff, self._error_backoff):
            info = heap.get(uid)
            if info is not None:
                info.pod = new
                self._push(heap, info)
                self._nominator.update(old, new)
                return
        self._gangs.update(new)
        info = self._unschedulable.get(uid)
        if info is not None:
            info.pod = new
            self._nominator.update(old, new)
            for event in pod_update_events(old, new):
                strategy = self._worth_requeuing(info, event, old, new)
                if strategy is not _Strategy.SKIP:
                    self._requeue_parked(info, strategy, event_label(event))
                    break
            self._report()
            return
        info = self._gated.get(uid)
        if info is not None:
            info.pod = new
            self._try_ungate(info, _UPDATE_LABEL)
            self._report()
            return
        # Not queued anywhere (e.g. an update raced its add): treat it as new.
        self._move_to_active(QueuedPodInfo(pod=new, timestamp=self._clock()), _UPDATE_LABEL)
        self._report()

    def delete(self, pod: Pod) -> None:
        """The pod is gone (or bound): drop it everywhere; a popped one is remembered as deleted."""
        uid = pod.uid
        self._nominator.delete(uid)
        info = self._active.remove(uid) or self._backoff.remove(uid) or self._error_backoff.remove(uid)
        if info is None:
            info = self._unschedulable.pop(uid, None)
        if info is None:
            info = self._gated.pop(uid, None)
        if info is not None:
            self._count_rejections(info, -1)
        self._gangs.forget(uid)
        if self._popped.pop(uid, None) is not None:
            self._deleted[uid] = self._clock()
        self._report()

    def on_cluster_event(self, event: ClusterEvent, old: object, new: object, *, exclude: str = "") -> None:
        """Move the unschedulable (and gated) pods this event may help to backoffQ or activeQ.

        ``exclude`` names a pod uid the event must not move (the pod whose own failure caused it).
        """
        label = event_label(event)
        skipped_gangs: set[str] = set()  # gangs this event does not help: asked once, not per member
        for info in list(self._unschedulable.values()):
            uid = info.pod.uid
            if uid not in self._unschedulable:
                continue  # moved with its gang already
            gang = self._policy.gang_of(info.pod)
            if gang is None:
                if uid == exclude:
                    continue
            elif gang.key in skipped_gangs:
                continue
            strategy = self._worth_requeuing(info, event, old, new, exclude=exclude, gang=gang)
            if strategy is not _Strategy.SKIP:
                self._requeue_parked(info, strategy, label, gang)
            elif gang is not None:
                skipped_gangs.add(gang.key)
        matching: dict[int, list[ClusterEventWithHint]] = {}  # see _gate_may_open
        still_gated: set[str] = set()  # gangs whose plugin, asked again for a member, still gates it
        for info in list(self._gated.values()):
            gang = self._policy.gang_of(info.pod)
            # gated for its gang: the key the gang's verdict is kept under at this event
            key = gang.key if gang is not None and info.gated_by == gang.plugin else None
            if key is not None and key in still_gated:
                continue  # its gang's verdict, given for a sibling at this very event
            if self._gate_may_open(info, event, old, new, matching):
                self._try_ungate(info, label)
                if key is not None and gang is not None and info.gated_by == gang.plugin:
                    still_gated.add(key)
        self._move_request_cycle = self._cycle
        self._in_flight.record(event, old, new, exclude)
        self._report()

    def activate(self, pods: Iterable[Pod]) -> None:
        """Force pods waiting in backoff or the unschedulable pool into activeQ now."""
        for pod in pods:
            uid = pod.uid
            info = self._unschedulable.pop(uid, None) or self._backoff.remove(uid)
            info = info or self._error_backoff.remove(uid)
            if info is not None:
                self._move_to_active(info, FORCE_ACTIVATE)
            elif uid in self._gated:
                self._try_ungate(self._gated[uid], FORCE_ACTIVATE)
            elif uid in self._in_flight:
                # Requeue it as soon as its current cycle hands it back.
                self._in_flight.activated(EVENT_FORCE_ACTIVATE, pod)
                self._move_request_cycle = self._cycle
        self._report()

    # ------------------------------------------------------------------ scheduler side

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to try (blocking while none is ready); None once the queue is closed."""
        while True:
            info = self._active.pop()
            if info is None:
                info = self._backoff.pop()
                if info is not None:
                    self._incoming(ACTIVE, POP_FROM_BACKOFF_Q)
            if info is not None and info.pod.uid in self._in_flight:
                log.error("pod %s was queued while in flight; dropping the duplicate", info.pod.key)
                continue
            if info is not None:
                break
            if self._closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        self._cycle += 1
        self._start_attempt(info)
        return info

    def pop_specific(self, pod: Pod) -> QueuedPodInfo | None:
        """Take ``pod`` out of the queue for the running cycle, wherever it waits, as if activated
        and popped (the pod-group cycle takes a group's pending pods with the one popped); None
        when it is not queued or PreEnqueue still gates it."""
        self.activate((pod,))
        info = self._active.remove(pod.uid)
        if info is None:
            return None
        self._start_attempt(info)
        return info

    def _start_attempt(self, info: QueuedPodInfo) -> None:
        uid = info.pod.uid
        info.attempts += 1
        self._in_flight.start(uid)
        self._popped[uid] = self._clock()
        self._count_rejections(info, -1)
        info.unschedulable_plugins = set()
        info.pending_plugins = set()
        self._report()

    def done(self, uid: str) -> None:
        """The scheduling attempt of a popped pod is over (it passed Permit, or was handed back)."""
        self._in_flight.finish(uid)

    def was_deleted(self, uid: str) -> bool:
        """Whether a popped pod was deleted since; the binder then skips binding it."""
        return uid in self._deleted

    def add_unschedulable(self, info: QueuedPodInfo, scheduling_cycle: int) -> None:
        """Take back a pod whose attempt failed; also ends its in-flight period (implies done)."""
        uid = info.pod.uid
        try:
            if uid in self._deleted:
                return
            if self._find(uid) is not None:
                log.error("pod %s is handed back but is already queued", info.pod.key)
                return
            info.timestamp = self._clock()
            if not info.consecutive_errors:
                info.unschedulable_count += 1
            self._count_rejections(info, +1)
            gang = self._policy.gang_of(info.pod)
            if gang is not None:
                self._gangs.record(gang, info)
            label = SCHEDULE_ATTEMPT_FAILURE
            if uid in self._in_flight:
                strategy, label = self._strategy_from_in_flight_events(info, gang)
            else:
                # Not tracked in flight: fall back to "did any event arrive since its cycle began?"
                errored = not (info.unschedulable_plugins or info.pending_plugins)
                moved = self._move_request_cycle >= scheduling_cycle
                strategy = _Strategy.AFTER_BACKOFF if errored or moved else _Strategy.SKIP
            self._requeue(info, strategy, SCHEDULE_ATTEMPT_FAILURE)
            if gang is not None and strategy is not _Strategy.SKIP:
                # what sends this member back to be tried sends its parked siblings too
                self._requeue_members(gang, strategy, label)
        finally:
            self.done(uid)
            self._popped.pop(uid, None)
            self._report()

    def scheduling_cycle(self) -> int:
        return self._cycle

    # ------------------------------------------------------------------ flushing

    def flush(self) -> None:
        """Move pods whose backoff is over, and pods unschedulable for too long, onwards."""
        self._flush_backoff_completed()
        self._flush_unschedulable_leftover()

    async def run(self) -> None:
        """Flush backoffQ at every window boundary and the unschedulable pool every 30 s."""
        last_leftover_flush = self._clock()
        while not self._closed:
            await asyncio.sleep(BACKOFF_WINDOW - (self._clock() % BACKOFF_WINDOW))
            if self._closed:
                return
            try:
                self._flush_backoff_completed()
                if self._clock() - last_leftover_flush >= UNSCHEDULABLE_FLUSH_INTERVAL:
                    last_leftover_flush = self._clock()
                    self._flush_unschedulable_leftover()
            except Exception:
                # A failing plugin hook must not stop the flusher for every other pod.
                log.exception("flushing the scheduling queue failed; retrying at the next window")

    def now(self) -> float:
        """The queue's clock (QueuedPodInfo timestamps are on it)."""
        return self._clock()

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()

    # ------------------------------------------------------------------ inspection

    def pending(self) -> dict[str, int]:
        return {
            ACTIVE: len(self._active),
            BACKOFF: len(self._backoff) + len(self._error_backoff),
            UNSCHEDULABLE: len(self._unschedulable),
            GATED: len(self._gated),
        }

    def position(self, uid: str) -> str:
        """Where the pod waits: "active", "backoff", "unschedulable", "gated", or "" (not queued)."""
        if uid in self._active:
            return ACTIVE
        if uid in self._backoff or uid in self._error_backoff:
            return BACKOFF
        if uid in self._unschedulable:
            return UNSCHEDULABLE
        return GATED if uid in self._gated else ""

    def has(self, uid: str) -> bool:
        """Queued in any sub-queue, or in flight."""
        return uid in self._in_flight or self._find(uid) is not None

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self._nominator.pods_for_node(node_name)

    def nominated_node_names(self) -> list[str]:
        return self._nominator.nodes()

    def add_nominated_pod(self, pod: Pod, node_name: str) -> None:
        """Record a nomination made by this scheduler (preemption) before the API reflects it."""
        self._nominator.add(pod, node_name)

    def delete_nominated_pod(self, pod: Pod) -> None:
        """The pod was assumed somewhere: it no longer reserves room on its nominated node."""
        self._nominator.delete(pod.uid)

    def backoff_remaining(self, uid: str) -> float | None:
        """Seconds until the pod's backoff ends (0 when over); None when the pod is not queued."""
        info = self._find(uid)
        if info is None:
            return None
        return max(0.0, self._backoff_expiry(info) + BACKOFF_WINDOW - self._clock())

    # ------------------------------------------------------------------ moving pods

    def _move_to_active(self, info: QueuedPodInfo, event: str, *, pre_enqueue: bool = True) -> bool:
        """activeQ, unless PreEnqueue gates the pod (it then waits in the gated set)."""
        if pre_enqueue:
            self._run_pre_enqueue(info)
        if info.gated_by:
            self._add_gated(info, event)
            return False
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._clock()
        self._push(self._active, info)
        self._incoming(ACTIVE, event)
        if event in (_ADD_LABEL, _UPDATE_LABEL):
            self._nominator.add(info.pod)
        self._wakeup.set()
        return True

    def _move_to_backoff(self, info: QueuedPodInfo, event: str, *, full: bool = False) -> bool:
        """backoffQ; ``full``: the heap never popped early (as for a pod that failed with an error)."""
        # PreEnqueue runs on the way in, since a pod may be popped from backoffQ directly.
        self._run_pre_enqueue(info)
        if info.gated_by:
            self._add_gated(info, event)
            return False
        self._push(self._error_backoff if full else self._backoff_heap(info), info)
        self._incoming(BACKOFF, event)
        self._wakeup.set()
        return True

    def _requeue(self, info: QueuedPodInfo, strategy: _Strategy, event: str) -> str:
        """Put a pod taken out of the unschedulable pool (or handed back) where ``strategy`` says."""
        if strategy is _Strategy.SKIP:
            if info.pod.uid not in self._unschedulable:
                self._incoming(UNSCHEDULABLE, event)
            self._unschedulable[info.pod.uid] = info
            return UNSCHEDULABLE
        if strategy is not _Strategy.IMMEDIATELY and self._is_backing_off(info):
            full = strategy is _Strategy.AFTER_FULL_BACKOFF
            return BACKOFF if self._move_to_backoff(info, event, full=full) else GATED
        return ACTIVE if self._move_to_active(info, event) else GATED

    def _requeue_parked(
        self, info: QueuedPodInfo, strategy: _Strategy, event: str, gang: Gang | None = None
    ) -> None:
        """Take a pod out of the unschedulable pool where ``strategy`` says, with its gang."""
        del self._unschedulable[info.pod.uid]
        self._requeue(info, strategy, event)
        gang = gang or self._policy.gang_of(info.pod)
        if gang is not None:
            self._requeue_members(gang, strategy, event)

    def _requeue_members(self, gang: Gang, strategy: _Strategy, event: str) -> None:
        for uid in self._gangs.members(gang):
            member = self._unschedulable.pop(uid, None)
            if member is not None:
                self._requeue(member, strategy, event)

    def _push(self, heap: KeyedHeap[QueuedPodInfo], info: QueuedPodInfo) -> None:
        if heap is self._active:
            key: Any = self._sort_key(info)
        elif heap is self._backoff:
            # Within a window, the order activeQ would use (pods may be popped from here).
            key = (self._backoff_expiry(info), self._sort_key(info))
        else:
            key = self._backoff_expiry(info)
        heap.push(info.pod.uid, key, info)

    def _backoff_heap(self, info: QueuedPodInfo) -> KeyedHeap[QueuedPodInfo]:
        rejected = info.unschedulable_plugins or info.pending_plugins
        return self._backoff if rejected else self._error_backoff

    def _backoff_expiry(self, info: QueuedPodInfo) -> float:
        failures = info.consecutive_errors or info.unschedulable_count
        if failures <= 0:
            return -math.inf
        duration = backoff_duration(failures, self._initial_backoff, self._max_backoff)
        return _align(info.timestamp + duration)

    def _is_backing_off(self, info: QueuedPodInfo) -> bool:
        # A pod whose expiry falls in the current window waits for the window to close.
        return self._backoff_expiry(info) >= _align(self._clock())

    def _flush_backoff_completed(self) -> None:
        for heap in (self._backoff, self._error_backoff):
            while (info := heap.peek()) is not None and not self._is_backing_off(info):
                heap.pop()
                self._move_to_active(info, BACKOFF_COMPLETE, pre_enqueue=False)
        self._report()

    def _flush_unschedulable_leftover(self) -> None:
        now = self._clock()
        stale = [
            info for info in self._unschedulable.values() if now - info.timestamp > self._max_in_unschedulable
        ]
        for info in stale:
            if info.pod.uid in self._unschedulable:  # else moved with its gang already
                self._requeue_parked(info, _Strategy.AFTER_BACKOFF, event_label(EVENT_UNSCHEDULABLE_TIMEOUT))
        horizon = now - self._max_in_unschedulable
        for uid in [uid for uid, at in self._deleted.items() if at < horizon]:
            del self._deleted[uid]
        for uid in [uid for uid, at in self._popped.items() if at < horizon and uid not in self._in_flight]:
            del self._popped[uid]
        self._report()

    # ------------------------------------------------------------------ hints

    def _worth_requeuing(
        self,
        info: QueuedPodInfo,
        event: ClusterEvent,
        old: object,
        new: object,
        *,
        exclude: str = "",
        gang: Gang | None = None,
    ) -> _Strategy:
        """May ``event`` make the pod schedulable, per the hints of the plugins that rejected it?

        A gang member asks for its whole gang: the best answer over every member's rejection but
        ``exclude``'s (the pod whose own failure caused the event)."""
        gang = gang or self._policy.gang_of(info.pod)
        if gang is None:
            return self._rejection_worth(
                info.pod, info.unschedulable_plugins, info.pending_plugins, event, old, new
            )
        if not (info.unschedulable_plugins or info.pending_plugins):
            return _Strategy.AFTER_BACKOFF
        best = _Strategy.SKIP
        for rejection in self._gangs.rejections(gang, exclude=exclude):
            strategy = self._rejection_worth(
                rejection.pod, rejection.unschedulable, rejection.pending, event, old, new
            )
            if strategy is _Strategy.IMMEDIATELY:
                best = strategy
                break
            best = max(best, strategy)
        if best is not _Strategy.SKIP and exclude and self._gangs.gang_key(exclude) == gang.key:
            # what the gang itself gave back when a member failed: worth another try, not a loop
            return _Strategy.AFTER_FULL_BACKOFF
        return best

    def _rejection_worth(
        self,
        pod: Pod,
        unschedulable: Set[str],
        pending: Set[str],
        event: ClusterEvent,
        old: object,
        new: object,
    ) -> _Strategy:
        """May ``event`` help ``pod``, rejected by ``unschedulable`` and ``pending`` plugins?"""
        rejectors = unschedulable | pending
        if not rejectors:
            return _Strategy.AFTER_BACKOFF
        if is_wildcard(event):
            # A wildcard carrying a pod is meant for that pod only (e.g. ForceActivate).
            if new is not None and not (isinstance(new, Pod) and new.uid == pod.uid):
                return _Strategy.SKIP
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        registered = self._policy.hints(pod)
        for plugin in rejectors:
            for entry in registered.get(plugin, ()):
                if not event.matches(entry.event) or not self._hint_says_queue(plugin, entry, pod, old, new):
                    continue
                if plugin in pending:
                    return _Strategy.IMMEDIATELY
                if not pending:
                    return _Strategy.AFTER_BACKOFF
                strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _hint_says_queue(
        self, plugin: str, entry: ClusterEventWithHint, pod: Pod, old: object, new: object
    ) -> bool:
        if entry.hint is None:
            return True
        try:
            return entry.hint(pod, old, new) is QueueingHint.QUEUE
        except Exception:
            # A broken hint must not strand the pod: treat it as QUEUE, as upstream does.
            log.exception("queueing hint of %s failed for pod %s", plugin, pod.key)
            return True

    def _strategy_from_in_flight_events(
        self, info: QueuedPodInfo, gang: Gang | None
    ) -> tuple[_Strategy, str]:
        """Where a pod handed back goes, per the events that arrived while it was in flight, and
        the label of the event that decided it."""
        if not (info.unschedulable_plugins or info.pending_plugins):
            return _Strategy.AFTER_BACKOFF, SCHEDULE_ATTEMPT_FAILURE
        best, label = _Strategy.SKIP, SCHEDULE_ATTEMPT_FAILURE
        for event, old, new, exclude in self._in_flight.events_since_start(info.pod.uid):
            if gang is None and exclude == info.pod.uid:
                continue
            strategy = self._worth_requeuing(info, event, old, new, exclude=exclude, gang=gang)
            if strategy > best:
                best, label = strategy, event_label(event)
            if best is _Strategy.IMMEDIATELY:
                break
            if best is _Strategy.AFTER_BACKOFF and not info.pending_plugins:
                break
        return best, label

    def _gate_may_open(
        self,
        info: QueuedPodInfo,
        event: ClusterEvent,
        old: object,
        new: object,
        matching: dict[int, list[ClusterEventWithHint]],
    ) -> bool:
        """Only events registered by the gating plugin re-run PreEnqueue for a gated pod. Which
        of a plugin's registrations the event matches is found once per event (``matching``,
        by the registrations' identity), not once per gated pod: many pods wait on one plugin."""
        entries = self._policy.hints(info.pod).get(info.gated_by, ())
        found = matching.get(id(entries))
        if found is None:
            found = matching[id(entries)] = [e for e in entries if event.matches(e.event)]
        return any(self._hint_says_queue(info.gated_by, e, info.pod, old, new) for e in found)

    # ------------------------------------------------------------------ gating

    def _run_pre_enqueue(self, info: QueuedPodInfo) -> None:
        plugin, status = self._policy.pre_enqueue(info.pod)
        if status is None or status.is_success:
            info.gated_by = ""
            return
        if status.error is not None:
            log.error("PreEnqueue plugin %s failed for pod %s: %s", plugin, info.pod.key, status.message())
        info.gated_by = plugin or "PreEnqueue"
        # As upstream, a gating plugin joins the pod's rejecting plugins: it counts in the
        # unschedulable-pods gauge once, until the pod's next attempt starts or it is deleted.
        if info.gated_by not in info.unschedulable_plugins | info.pending_plugins:
            info.unschedulable_plugins.add(info.gated_by)
            self._count_plugins((info.gated_by,), info.pod, +1)

    def _add_gated(self, info: QueuedPodInfo, event: str) -> None:
        uid = info.pod.uid
        if uid not in self._gated:  # counted as upstream counts it: gated pods wait among the unschedulable
            self._incoming(UNSCHEDULABLE, event)
        self._gated[uid] = info

    def _try_ungate(self, info: QueuedPodInfo, event: str) -> None:
        """Re-run PreEnqueue for a gated pod; it moves to activeQ only if no plugin gates it now."""
        self._run_pre_enqueue(info)
        if info.gated_by:
            self._add_gated(info, event)
        else:
            del self._gated[info.pod.uid]
            self._move_to_active(info, event, pre_enqueue=False)

    # ------------------------------------------------------------------ helpers

    def _find(self, uid: str) -> QueuedPodInfo | None:
        return (
            self._active.get(uid)
            or self._backoff.get(uid)
            or self._error_backoff.get(uid)
            or self._unschedulable.get(uid)
            or self._gated.get(uid)
        )

    def _count_rejections(self, info: QueuedPodInfo, sign: int) -> None:
        self._count_plugins(info.unschedulable_plugins | info.pending_plugins, info.pod, sign)

    def _count_plugins(self, plugins: Iterable[str], pod: Pod, sign: int) -> None:
        if self._metrics is None:
            return
        gauge = self._metrics.unschedulable_pods
        for plugin in plugins:
            gauge.labels(plugin=plugin, profile=pod.scheduler_name).inc(sign)

    def _incoming(self, queue: str, event: str) -> None:
        if self._metrics is not None:
            self._metrics.incoming_pod(queue, event)

    def _report(self) -> None:
        if self._metrics is not None:
            self._metrics.set_pending(**self.pending())
