"""Shadow mode (``pyscheduler run --shadow SCHEDULER_NAME``): another scheduler's pods, decided
but never acted on.

When a pod of that scheduler appears pending (and again at each update while it stays pending),
it joins a bounded backlog (beyond its limit the oldest pod is dropped, counted in
``pyscheduler_shadow_dropped_total``: the informer's handler never waits). A background task
takes the backlog in batches and has a decider decide them with the first profile and explain's
evaluation (``scheduler.shadow.decision``: the real framework, every node, no preemption): no
assume, reserve, permit, bind, event or status write, and the pod never enters the scheduling
queue (it names no profile of ours). A decision costs tens of milliseconds on thousands of
nodes, so it is made off the scheduling loop, in a child process forked with the scheduler's
memory as it is (``scheduler.shadow.forked``); with extenders, whose answers are awaited on the
loop's connections, on the loop one pod at a time while it has no pod ready
(``scheduler.shadow.inprocess``).

When the other scheduler binds the pod, the decision is compared: the same node, another node of
our top-score set, a different node, or one where we would have left it pending. A pod bound
while its batch is being decided is compared when its decision arrives (made on the cluster as it
was before that binding). Counted in ``pyscheduler_shadow_decisions_total{result}``; a pod bound
before its batch began counts in ``pyscheduler_shadow_undecided_total`` instead.
``/debug/shadow`` reports the totals and the recent disagreements.

Memory is bounded: a decision keeps its chosen node and its top set (a sorted tuple of names); the
per-node detail (each plugin's scores, each rejection, encoded) only for the latest ``DETAILED``
decisions.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from scheduler.api import Pod
from scheduler.client.informer import EventHandler
from scheduler.runtime import Framework
from scheduler.schedule_one import Scheduler, run_now
from scheduler.shadow.backlog import Backlog
from scheduler.shadow.decision import Decider, Decision, Detail, Outcome, evaluate
from scheduler.shadow.forked import ForkedDecider
from scheduler.shadow.inprocess import InProcessDecider

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
FAILED_BATCH_PAUSE = 1.0  # seconds before the next batch after one failed


class ShadowMode:
    """Decisions for the pods of ``scheduler_name``, made with ``fwk`` on ``scheduler``'s cache:
    ``forked`` (the default without extenders, where the platform forks), or on the loop while
    ``busy()`` (the scheduling loop has pods ready) is false."""

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
        forked: bool | None = None,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.scheduler = scheduler
        self.fwk = fwk
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
            "Shadow mode: pods another scheduler bound before pyscheduler had begun deciding them.",
            registry=registry,
        )
        self.dropped = Counter(
            "pyscheduler_shadow_dropped",
            "Shadow mode: pods never decided because more were waiting than the backlog holds.",
            registry=registry,
        )
        self.totals = dict.fromkeys(RESULTS, 0)
        self.undecided_total = 0
        self.backlog = Backlog(max_tracked, on_drop=self.dropped.inc)
        self.tracked: OrderedDict[str, Decision] = OrderedDict()  # pod uid -> our latest decision
        self._details: OrderedDict[str, Detail] = OrderedDict()  # the latest DETAILED ones
        self.disagreements: deque[dict[str, Any]] = deque(maxlen=recent)
        self._max_tracked = max_tracked
        # the batch being decided: uid -> None, or the bound pod when bound meanwhile
        self._deciding: dict[str, Pod | None] = {}
        self._abandoned: set[str] = set()  # of those, deleted meanwhile
        if forked is None:
            forked = not scheduler.extenders and hasattr(os, "fork")
        self._decider = self._forked_decider(busy) if forked else self._in_process_decider(busy)
        # Until the informers have synced the cache is incomplete: pods are decided from then on.
        self.ready = False

    def _forked_decider(self, busy: Callable[[], bool]) -> Decider:
        scheduler, fwk = self.scheduler, self.fwk
        return ForkedDecider(lambda pod: run_now(evaluate(scheduler, fwk, pod)), busy)

    def _in_process_decider(self, busy: Callable[[], bool]) -> Decider:
        return InProcessDecider(self.scheduler, self.fwk, busy)

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
        """Decide the backlog in batches, oldest pods first, until cancelled."""
        while True:
            await self.backlog.wait()
            await self._decider.ready()
            if not len(self.backlog):  # bound or deleted meanwhile
                continue
            batch = self.backlog.pop_oldest(self._decider.batch_size)
            self._deciding = dict.fromkeys((pod.uid for pod in batch), None)
            try:
                async for uid, outcome in self._decider.decide(batch):
                    self._decided(uid, outcome)
            except Exception:  # e.g. no fork (out of memory or processes): the batch is lost
                log.exception("shadow decisions of %d pod(s) failed", len(batch))
                await asyncio.sleep(FAILED_BATCH_PAUSE)
            finally:
                for bound in self._deciding.values():
                    if bound is not None:  # its decision failed or never came
                        self._count_undecided()
                self._deciding, self._abandoned = {}, set()

    def _decided(self, uid: str, outcome: Outcome) -> None:
        if uid not in self._deciding:
            return
        bound = self._deciding.pop(uid)
        if uid in self._abandoned:
            return
        if bound is not None:
            self._compare(bound, outcome.decision, outcome.detail)
            return
        _put_newest(self.tracked, uid, outcome.decision, self._max_tracked)
        _put_newest(self._details, uid, outcome.detail, DETAILED)

    def forget(self, pod: Pod) -> None:
        """The pod is gone or finished: nothing of it is kept."""
        self.tracked.pop(pod.uid, None)
        self._details.pop(pod.uid, None)
        self.backlog.discard(pod.uid)
        if pod.uid in self._deciding:
            self._abandoned.add(pod.uid)

    # ------------------------------------------------------------------ comparing

    def bound(self, pod: Pod) -> str | None:
        """The other scheduler bound ``pod``: the result, None when we had not decided it (yet:
        a pod of the batch being decided is compared when its decision arrives)."""
        waiting = self.backlog.discard(pod.uid)  # a newer version waiting for the next batch
        ours = self.tracked.pop(pod.uid, None)
        detail = self._details.pop(pod.uid, None)
        if pod.uid in self._deciding:
            if self._deciding[pod.uid] is None:
                self._deciding[pod.uid] = pod
            return None
        if ours is None:
            if waiting:
                self._count_undecided()
            return None
        return self._compare(pod, ours, detail)

    def _count_undecided(self) -> None:
        self.undecided.inc()
        self.undecided_total += 1

    def _compare(self, pod: Pod, ours: Decision, detail: Detail | None) -> str:
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
            "deciding": len(self._deciding),
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


def _disagreement(pod: Pod, result: str, ours: Decision, detail: Detail | None) -> dict[str, Any]:
    """A disagreement as /debug/shadow shows it: with each plugin's scores on our node and on
    theirs when the decision still has its detail."""
    node = pod.node_name
    entry: dict[str, Any] = {"pod": pod.key, "result": result, "boundTo": node, "ours": ours.chosen}
    if not ours.chosen:
        entry["message"] = ours.message
    if detail is None:
        entry["ourVerdictOnBoundNode"] = f"not kept (only the latest {DETAILED} decisions keep it)"
        return entry
    entry["ourVerdictOnBoundNode"], entry["scores"] = detail.report((ours.chosen, node), ours.best)
    return entry


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
