"""The scheduler's writes to pods' status (PodScheduled condition, nominated node), until they land.

A pod reported unschedulable must say so in its status even if the API server was unreachable at
that moment (docs/architecture.md, Principles: "Nothing lost"). Changes are written in the
background: each pod has at most one change waiting (a newer one merges into it, the newest
condition wins), so memory stays bounded by the number of pods; a failed write is retried with
backoff, oldest pod first, until it lands, the pod is gone, or the server refuses it for good. Each
write is computed against the pod as the informer last saw it, so nothing already true is sent
again.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import Pod
from scheduler.client.outage import OutageLog
from scheduler.client.pods import STRATEGIC_MERGE, condition_patch, pod_path
from scheduler.client.rest import ApiError, TransportError, raise_for_status
from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

COMPONENT = "status writer"


@dataclass(slots=True)
class _Change:
    pod: Pod
    condition: Mapping[str, Any] | None
    nominated: str | None  # None: leave it alone, "": clear it

    def merge(self, newer: _Change) -> _Change:
        condition = newer.condition if newer.condition is not None else self.condition
        nominated = newer.nominated if newer.nominated is not None else self.nominated
        return _Change(newer.pod, condition, nominated)


class PodStatusWriter:
    """``current(pod)``: the pod as the informer has it now (None once it is gone)."""

    def __init__(
        self,
        client: ApiClient,
        current: Callable[[Pod], Pod | None],
        *,
        outage: OutageLog | None = None,
        retry_delay: float = 0.2,
        retry_cap: float = 10.0,
    ) -> None:
        self._client = client
        self._current = current
        self._outage = outage or OutageLog()
        self._retry_delay = retry_delay
        self._retry_cap = retry_cap
        self._pending: dict[str, _Change] = {}
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def submit(self, pod: Pod, condition: Mapping[str, Any] | None, nominated: str | None) -> None:
        """Write this change of ``pod``'s status soon; never blocks."""
        change = _Change(pod, condition, nominated)
        older = self._pending.pop(pod.uid, None)
        self._pending[pod.uid] = older.merge(change) if older is not None else change
        self._idle.clear()
        self._wakeup.set()

    async def write_now(self, pod: Pod, condition: Mapping[str, Any] | None, nominated: str | None) -> None:
        """One attempt, awaited (the binding cycle's nomination); raises ``ApiError`` on failure."""
        patch = condition_patch(pod, condition, nominated)
        if patch is not None:
            path = pod_path(pod) + "/status"
            raise_for_status(await self._client.request("PATCH", path, patch, content_type=STRATEGIC_MERGE))

    async def flush(self, timeout: float) -> bool:
        """Wait until every change submitted so far has landed or been given up on."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def run(self) -> None:
        """Write waiting changes until cancelled."""
        delay = 0.0
        while True:
            if not self._pending:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            uid, change = next(iter(self._pending.items()))
            done = await self._write(change)
            if self._pending.get(uid) is change:
                del self._pending[uid]
                if not done:  # keeps its turn at the front: the oldest report goes out first
                    self._pending = {uid: change, **self._pending}
            if done:
                delay = 0.0
                continue
            delay = min(max(delay * 2, self._retry_delay), self._retry_cap)
            await asyncio.sleep(delay * (0.75 + random.random() / 2))

    async def _write(self, change: _Change) -> bool:
        """One attempt; False when it should be retried."""
        current = self._current(change.pod)
        if current is None or current.uid != change.pod.uid:
            return True  # deleted (or replaced by a namesake): nothing to report
        try:
            await self.write_now(current, change.condition, change.nominated)
        except TransportError as exc:
            self._outage.failed(COMPONENT, exc)
            return False
        except ApiError as exc:
            if exc.is_not_found:
                return True
            if exc.is_retriable or exc.is_conflict:
                self._outage.failed(COMPONENT, exc)
                return False
            log.warning("status of pod %s refused, not retrying: %s", change.pod.key, exc)
            return True
        self._outage.recovered(COMPONENT)
        return True
