"""One shadow decision: where pyscheduler would put a pod, and its verdict on every node.

A decision is made with explain's evaluation over every node (no preemption, no suggestions,
the node chosen among every feasible node: another scheduler's start index and batch are not
ours). Its per-node detail is kept encoded: it is read only when the other scheduler disagrees,
so it is decoded then.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from scheduler.api import Pod
from scheduler.explain.evaluate import explain_pod
from scheduler.explain.model import Explanation
from scheduler.runtime import Framework
from scheduler.schedule_one import Scheduler


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

    def encode(self) -> bytes:
        return orjson.dumps([self.chosen, self.top, self.best, self.message])

    @classmethod
    def decode(cls, data: bytes) -> Decision:
        chosen, top, best, message = orjson.loads(data)
        return cls(chosen, tuple(top), best, message)


class Detail:
    """Our verdict on each node, as bytes: the feasible ones with each plugin's score and the
    total, the rejected ones with the plugin that said no and why (each verdict once, with the
    nodes it names: a few hundred KiB at 5,000 nodes)."""

    __slots__ = ("encoded",)

    def __init__(self, encoded: bytes) -> None:
        self.encoded = encoded

    @classmethod
    def of(cls, explanation: Explanation) -> Detail:
        plugins = explanation.score_plugins
        scores = {row.node: [*(row.plugins[p] for p in plugins), row.total] for row in explanation.scores}
        rejected: dict[str, list[str]] = {}
        for v in explanation.rejected:
            rejected.setdefault(f"rejected by {v.plugin}: {', '.join(v.reasons)}", []).append(v.node)
        return cls(orjson.dumps({"plugins": plugins, "scores": scores, "rejected": rejected}))

    def report(self, nodes: Sequence[str], best: int) -> tuple[str, dict[str, Any]]:
        """Our verdict on ``nodes[-1]`` (the node the other scheduler chose), and the scores of
        those of ``nodes`` we found feasible."""
        data = orjson.loads(self.encoded)
        plugins, scores, node = data["plugins"], data["scores"], nodes[-1]
        found = {
            name: {**dict(zip(plugins, scores[name], strict=False)), "total": scores[name][-1]}
            for name in nodes
            if name in scores
        }
        if node in found:
            return f"feasible, total score {found[node]['total']} (ours: {best})", found
        verdict = next((v for v, names in data["rejected"].items() if node in names), "not in our snapshot")
        return verdict, found


@dataclass(frozen=True, slots=True)
class Outcome:
    decision: Decision
    detail: Detail


async def evaluate(scheduler: Scheduler, fwk: Framework, pod: Pod) -> Outcome:
    """The decision for ``pod`` on the cache as it is (suspends only to ask extenders)."""
    explanation = await explain_pod(scheduler, fwk, pod, preemption=False, suggestions=False, cycle=False)
    return Outcome(Decision.of(explanation), Detail.of(explanation))


class Decider(Protocol):
    """Decides a batch of pods, yielding (uid, outcome) as each is decided; a pod whose decision
    failed is left out (and logged)."""

    batch_size: int

    async def ready(self) -> None:
        """Until a batch may begin."""

    def decide(self, pods: Sequence[Pod]) -> AsyncIterator[tuple[str, Outcome]]: ...
