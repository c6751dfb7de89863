"""Shadow decisions on the event loop, one pod at a time, each when the scheduling loop has no
pod ready: the way with extenders, whose HTTP answers are awaited on the loop's connections (a
forked child cannot use them). A decision costs tens of milliseconds on thousands of nodes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence

from scheduler.api import Pod
from scheduler.runtime import Framework
from scheduler.schedule_one import Scheduler
from scheduler.shadow.decision import Outcome, evaluate

log = logging.getLogger(__name__)
BUSY_POLL = 0.01  # seconds between looks at a busy scheduling loop


class InProcessDecider:
    batch_size = 1

    def __init__(self, scheduler: Scheduler, fwk: Framework, busy: Callable[[], bool]) -> None:
        """``busy``: the scheduling loop has pods ready."""
        self._scheduler, self._fwk, self._busy = scheduler, fwk, busy

    async def ready(self) -> None:
        while self._busy():
            await asyncio.sleep(BUSY_POLL)

    async def decide(self, pods: Sequence[Pod]) -> AsyncIterator[tuple[str, Outcome]]:
        for pod in pods:
            try:
                outcome = await evaluate(self._scheduler, self._fwk, pod)
            except Exception:
                log.exception("shadow decision failed for pod %s", pod.key)
                continue
            yield pod.uid, outcome
            await asyncio.sleep(0)  # informer events and the loop's own pods in between
