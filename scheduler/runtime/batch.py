"""OpportunisticBatching (KEP-5598): the next pod of a run of alike pods skips the search.

When consecutive pods have the same signature and go one per node, the previous cycle's
scored list already says where the next one goes: its best node was just taken (the new pod no
longer fits there), so the next-best node of that list is where a fresh cycle would put it.
The framework hands it out as a hint; the cycle checks it with the Filter plugins, exactly as a
nominated node is checked, and takes it without searching or scoring. Anything that breaks the
premise (another pod in between, a different signature, the last chosen node still having
room, a list older than half a second) leaves the cycle to the full search, as upstream does.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api import Pod
from scheduler.framework import CycleState, NodeInfo, NodeLister, NodeTable, Status
from scheduler.framework.clock import Clock

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

MAX_BATCH_AGE = 0.5  # seconds a stored list may be used for (upstream's maxBatchAge)

# results of a hint request (the ``result`` label of scheduler_batch_attempts_total)
NO_HINT = "no_hint"
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"

# why a stored list could not be used (the ``reason`` label of scheduler_batch_cache_flushed_total)
POD_SKIPPED = "pod_skipped"
POD_INCOMPATIBLE = "pod_incompatible"
EXPIRED = "expired"
NODE_MISSING = "node_missing"
NODE_NOT_FULL = "node_not_full"
EMPTY_LIST = "empty_list"
POD_NOT_BATCHABLE = "pod_not_batchable"


class RankedNodes:
    """A cycle's feasible nodes not handed out yet, best total first; equal totals in a random
    order, as the host itself is picked among equals."""

    __slots__ = ("_names",)

    def __init__(self, names_best_last: list[str]) -> None:
        self._names = names_best_last

    @classmethod
    def of(
        cls, table: NodeTable, slots: np.ndarray, totals: np.ndarray, chosen: str, rng: random.Random
    ) -> RankedNodes:
        tie_breakers = np.random.default_rng(rng.getrandbits(64)).random(len(slots))
        order = np.lexsort((tie_breakers, totals))  # ascending: the best comes last
        infos = table.infos  # every feasible node's name, read straight from its row: ~400 per cycle
        names = [infos[slot].node.name for slot in slots[order].tolist()]
        names.remove(chosen)
        return cls(names)

    def pop(self) -> str:
        return self._names.pop()

    def peek(self) -> str:
        """The name ``pop`` would return, left in the list."""
        return self._names[-1]

    def __len__(self) -> int:
        return len(self._names)


@dataclass(slots=True)
class _Stored:
    signature: bytes
    nodes: RankedNodes
    created: float


class OpportunisticBatch:
    """One profile's batch: the stored list and what the last cycle chose."""

    def __init__(
        self,
        profile: str,
        filter_node: Callable[[CycleState, Pod, NodeInfo], Status | None],
        *,
        clock: Clock,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self._profile = profile
        self._filter_node = filter_node
        self._clock = clock
        self._metrics = metrics
        self._stored: _Stored | None = None
        self._last_cycle = -1
        self._last_chosen = ""
        self.batched_pods = 0  # pods placed on a hinted node

    def node_hint(
        self, pod: Pod, signature: bytes | None, state: CycleState, cycle: int, snapshot: NodeLister
    ) -> str:
        """The next node of the stored list if this pod may take it, else ""."""
        start = perf_counter()
        unusable = self._why_unusable(pod, signature, state, cycle, snapshot)
        if unusable:
            self._flushed(unusable)
        hint = self._stored.nodes.pop() if unusable is None and self._stored is not None else ""
        if self._metrics is not None:
            self._metrics.observe_node_hint(bool(hint), self._profile, perf_counter() - start)
            if not hint:
                self._metrics.batch_attempt(self._profile, NO_HINT)
        if hint:
            log.debug("batch hint %s for pod %s (cycle %d)", hint, pod.key, cycle)
        return hint

    def peek_hint(
        self, pod: Pod, signature: bytes | None, state: CycleState, cycle: int, snapshot: NodeLister
    ) -> str:
        """The node ``node_hint`` would hand out to this pod in ``cycle``, changing nothing (the
        list keeps it, no metric is counted): what explain reports."""
        if self._why_unusable(pod, signature, state, cycle, snapshot) is None and self._stored is not None:
            return self._stored.nodes.peek()
        return ""

    def store(
        self,
        signature: bytes | None,
        hinted: str,
        chosen: str,
        cycle: int,
        *,
        others: int = 0,
        ranked: Callable[[], RankedNodes] | None = None,
    ) -> None:
        """A cycle chose ``chosen`` among ``others`` + 1 feasible nodes; ``ranked`` builds the
        list of the others (called only when it is kept)."""
        start = perf_counter()
        self._last_cycle, self._last_chosen = cycle, chosen
        try:
            if hinted and hinted == chosen:
                self.batched_pods += 1
                self._count(HINT_USED)
                return  # the stored list goes on, its age unchanged
            if hinted:
                self._count(HINT_NOT_USED)
            if signature is not None and others > 0 and ranked is not None:
                self._stored = _Stored(signature, ranked(), self._clock.now())
                return
            self._flushed(EMPTY_LIST if others == 0 else POD_NOT_BATCHABLE)
            self._stored = None
        finally:
            if self._metrics is not None:
                self._metrics.observe_store_results(self._profile, perf_counter() - start)

    # ------------------------------------------------------------------ internals

    def _why_unusable(
        self, pod: Pod, signature: bytes | None, state: CycleState, cycle: int, snapshot: NodeLister
    ) -> str | None:
        """None when this pod may take the stored list's next node; else why not: a flush reason,
        or "" when there is no list to use."""
        stored = self._stored
        if stored is None or not len(stored.nodes):
            return ""
        if cycle != self._last_cycle + 1:  # a pod of another profile, or a failed one, came between
            return POD_SKIPPED
        if signature is None or signature != stored.signature:
            return POD_INCOMPATIBLE
        if self._clock.now() > stored.created + MAX_BATCH_AGE:
            return EXPIRED
        last = snapshot.get(self._last_chosen)
        if last is None:
            return NODE_MISSING
        status = self._filter_node(state, pod, last)
        if status is None or not status.is_rejected:
            # the last pod's node still has room for this one: the list cannot say where it
            # ranks now, so the cycle searches afresh
            return NODE_NOT_FULL
        return None

    def _flushed(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.batch_flushed(self._profile, reason)
        log.debug("batch of profile %s unusable: %s", self._profile, reason)

    def _count(self, result: str) -> None:
        if self._metrics is not None:
            self._metrics.batch_attempt(self._profile, result)
