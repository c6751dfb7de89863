"""Shadow mode (``pyscheduler run --shadow SCHEDULER_NAME``): another scheduler's pods, decided
but never acted on.

When a pod of that scheduler appears pending (and again at each update while it stays pending),
it joins a backlog; a background task decides the backlog's pods one at a time with the first
profile, against the cache's snapshot of the moment it decides, with explain's evaluation (the
real framework, every node, no preemption): no assume, reserve, permit, bind, event or status
write, and the pod never enters the scheduling queue (it names no profile of ours). A decision
costs tens of milliseconds on thousands of nodes, so it is never made in the informer's handler
and waits while the scheduling loop has pods ready to pop: pyscheduler's own pods go first.

When the other scheduler binds the pod, the decision is compared: the same node, another node of
our top-score set, a different node, or one where we would have left it pending. Counted in
``pyscheduler_shadow_decisions_total{result}``; a pod bound before we got to it counts in
``pyscheduler_shadow_undecided_total`` instead. ``/debug/shadow`` reports the totals and the
recent disagreements.

Memory is bounded: a decision keeps its chosen node and its top set (a sorted tuple of names); the
per-node detail (each plugin's scores, each rejection) only for the latest ``DETAILED`` decisions.
"""

from __future__ import annotations

import asyncio
import logging
from bisect import bisect_left
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from scheduler.api import Pod
from scheduler.client.informer import EventHandler
from scheduler.explain.evaluate import explain_pod
from scheduler.explain.model import Explanation
from scheduler.runtime import Framework
from scheduler.schedule_one import Scheduler
from scheduler.shadow.backlog import Backlog

log = logging.getLogger(__name__)
V = TypeVar("V")

SAME_NODE, SAME_TOP_SET, DIFFERENT, WOULD_BE_PENDING = (
    "same_node",
    "same_top_set",
    "different",
    "would_be_pending",
)
RESULTS = (SAME_NODE, SAME_TOP_SET, DIFFERENT, WOULD_BE_PENDING)
MAX_TRACKED = 5_000  # pending pods decided or waiting; beyond, the oldest go first
DETAILED = 16  # latest decisions keeping their per-node detail for the disagreement report
RECENT = 50  # disagreements /debug/shadow shows
BUSY_POLL = 0.01  # seconds between looks at a busy scheduling loop


@dataclass(frozen=True, slots=True)
class Decision:
    """Where we would put a pod: what a binding is compared with."""

    chosen: str  # "" when we would leave it pending
    top: tuple[str, ...]  # the nodes sharing the highest total, sorted
    best: int  # that total
    message: str  # the FailedScheduling message when pending

    @classmethod
    def of(cls, explanation: Explanation) -> Decision:
        best = explanation.scores[0].total if explanation.scores else 0
        return cls(explanation.chosen, tuple(explanation.top), best, explanation.message)

    def in_top(self, node: str) -> bool:
        at = bisect_left(self.top, node)
        return at < len(self.top) and self.top[at] == node


class ShadowMode:
    """Decisions for the pods of ``scheduler_name``, made with ``fwk`` on ``scheduler``'s cache,
    while ``busy()`` (the scheduling loop has pods ready) is false."""

    def __init__(
        self,
        scheduler_name: str,
        scheduler: Scheduler,
        fwk: Framework,
        registry: CollectorRegistry,
        *,
        busy: Callable[[], bool] = lambda: False,
        recent: int = RECENT,
        max_tracked: int = MAX_TRACKED,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.scheduler = scheduler
        self.fwk = fwk
        self._busy = busy
        self.decisions = Counter(
            "pyscheduler_shadow_decisions",
            "Shadow mode: how another scheduler's bindings compare with where pyscheduler would have "
            "put the pods, by result (same_node, same_top_set, different, would_be_pending).",
            ["result"],
            registry=registry,
        )
        for result in RESULTS:
            self.decisions.labels(result)
        self.undecided = Counter(
            "pyscheduler_shadow_undecided",
            "Shadow mode: pods another scheduler bound before pyscheduler had decided them (its "
            "decisions wait while its own pods are ready to schedule).",
            registry=registry,
        )
        self.totals = dict.fromkeys(RESULTS, 0)
        self.undecided_total = 0
        self.backlog = Backlog(max_tracked)
        self.tracked: OrderedDict[str, Decision] = OrderedDict()  # pod uid -> our latest decision
        self._details: OrderedDict[str, Explanation] = OrderedDict()  # the latest DETAILED ones
        self.disagreements: deque[dict[str, Any]] = deque(maxlen=recent)
        self._max_tracked = max_tracked
        self._deciding = ""  # the uid being decided (awaiting extenders)
        self._abandoned = False  # it was bound or deleted meanwhile
        # Until the informers have synced the cache is incomplete: pods are decided from then on.
        self.ready = False

    def is_shadowed(self, pod: Pod) -> bool:
        return pod.scheduler_name == self.scheduler_name

    # ------------------------------------------------------------------ deciding

    def start(self, pods: Iterable[Pod]) -> None:
        """The informers have synced: the shadowed pods pending now join the backlog, and each
        one after (``run()`` decides them)."""
        self.ready = True
        for pod in pods:
            if self.is_shadowed(pod) and not pod.node_name and not pod.is_terminal:
                self.decide(pod)

    def decide(self, pod: Pod) -> None:
        """Decide ``pod`` (its latest version) as soon as ``run()`` gets to it."""
        self.backlog.put(pod)

    async def run(self) -> None:
        """Decide the backlog's pods one at a time, each when the scheduling loop has nothing
        ready, yielding to the event loop between decisions."""
        while True:
            await self.backlog.wait()
            while self._busy():
                await asyncio.sleep(BUSY_POLL)
            if not len(self.backlog):  # bound or deleted while we waited
                continue
            pod = self.backlog.pop()
            self._deciding, self._abandoned = pod.uid, False
            try:
                explanation = await self._evaluate(pod)
            finally:
                self._deciding = ""
            if explanation is not None and not self._abandoned:
                self._keep(pod, explanation)
            await asyncio.sleep(0)

    async def _evaluate(self, pod: Pod) -> Explanation | None:
        try:
            return await explain_pod(
                self.scheduler, self.fwk, pod, preemption=False, suggestions=False, cycle=False
            )
        except Exception:
            log.exception("shadow decision failed for pod %s", pod.key)
            return None

    def _keep(self, pod: Pod, explanation: Explanation) -> None:
        _put_newest(self.tracked, pod.uid, Decision.of(explanation), self._max_tracked)
        _put_newest(self._details, pod.uid, explanation, DETAILED)

    def forget(self, pod: Pod) -> None:
        """The pod is gone or finished: nothing of it is kept."""
        self.tracked.pop(pod.uid, None)
        self._details.pop(pod.uid, None)
        self.backlog.discard(pod.uid)
        if pod.uid == self._deciding:
            self._abandoned = True

    # ------------------------------------------------------------------ comparing

    def bound(self, pod: Pod) -> str | None:
        """The other scheduler bound ``pod``: the result, None when we had not decided it."""
        waiting = self.backlog.discard(pod.uid) or pod.uid == self._deciding
        if pod.uid == self._deciding:
            self._abandoned = True
        ours = self.tracked.pop(pod.uid, None)
        detail = self._details.pop(pod.uid, None)
        if ours is None:
            if waiting:
                self.undecided.inc()
                self.undecided_total += 1
            return None
        node = pod.node_name
        if not ours.chosen:
            result = WOULD_BE_PENDING
        elif node == ours.chosen:
            result = SAME_NODE
        elif ours.in_top(node):
            result = SAME_TOP_SET
        else:
            result = DIFFERENT
        self.decisions.labels(result).inc()
        self.totals[result] += 1
        if result in (DIFFERENT, WOULD_BE_PENDING):
            self.disagreements.append(_disagreement(pod, result, ours, detail))
        return result

    # ------------------------------------------------------------------ reporting

    def report(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler_name,
            "profile": self.fwk.profile_name,
            "decisions": dict(self.totals),
            "undecided": self.undecided_total,
            "pending": len(self.tracked),
            "waiting": len(self.backlog),
            "dropped": self.backlog.dropped,  # never decided: more than max_tracked were waiting
            "recentDisagreements": list(self.disagreements),
        }

    async def handle(self, request: web.Request) -> web.Response:
        """``/debug/shadow``"""
        return web.Response(body=orjson.dumps(self.report()), content_type="application/json")


def _put_newest(kept: OrderedDict[str, V], key: str, value: V, limit: int) -> None:
    """``value`` as the newest entry of ``kept``, the oldest dropped beyond ``limit``."""
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > limit:
        kept.popitem(last=False)


def _disagreement(pod: Pod, result: str, ours: Decision, detail: Explanation | None) -> dict[str, Any]:
    """A disagreement as /debug/shadow shows it: with each plugin's scores on our node and on
    theirs when the decision still has its detail."""
    node = pod.node_name
    entry: dict[str, Any] = {"pod": pod.key, "result": result, "boundTo": node, "ours": ours.chosen}
    if not ours.chosen:
        entry["message"] = ours.message
    if detail is None:
        entry["ourVerdictOnBoundNode"] = f"not kept (only the latest {DETAILED} decisions keep it)"
        return entry
    scores = {row.node: row for row in detail.scores}
    entry["ourVerdictOnBoundNode"] = _verdict_on(detail, node, ours.best)
    entry["scores"] = {
        name: {**scores[name].plugins, "total": scores[name].total}
        for name in (ours.chosen, node)
        if name in scores
    }
    return entry


def _verdict_on(ours: Explanation, node: str, best: int) -> str:
    """What our decision said about the node the other scheduler chose."""
    for score in ours.scores:
        if score.node == node:
            return f"feasible, total score {score.total} (ours: {best})"
    for verdict in ours.rejected:
        if verdict.node == node:
            return f"rejected by {verdict.plugin}: {', '.join(verdict.reasons)}"
    return "not in our snapshot"


class ShadowPodEvents:
    """The pod informer's handler in shadow mode: shadowed pods go to ``shadow``, every pod (those
    included, which then count on their node once bound) to ``inner``, the usual handler."""

    def __init__(self, shadow: ShadowMode, inner: EventHandler[Pod]) -> None:
        self.shadow = shadow
        self.inner = inner

    def on_add(self, pod: Pod) -> None:
        if self.shadow.ready and self.shadow.is_shadowed(pod) and not pod.node_name and not pod.is_terminal:
            self.shadow.decide(pod)
        self.inner.on_add(pod)

    def on_update(self, old: Pod, new: Pod) -> None:
        if self.shadow.is_shadowed(new) and not old.node_name:
            if new.node_name:
                self.shadow.bound(new)
            elif new.is_terminal or new.is_terminating:
                self.shadow.forget(new)
            elif self.shadow.ready:
                self.shadow.decide(new)
        self.inner.on_update(old, new)

    def on_delete(self, pod: Pod) -> None:
        if self.shadow.is_shadowed(pod):
            self.shadow.forget(pod)
        self.inner.on_delete(pod)
