"""The APIDispatcher: the scheduler's asynchronous writes to the API server, one queue for all.

As kube-scheduler's (``backend/api_dispatcher``, KEP-5229), a write is an *API call* about one
object: at most one call per object waits, and a newer call for it is folded into the waiting
one — merged when both are of the same type (a newer status patch keeps what the older one set
and the newer one leaves alone), else the more relevant type wins (``relevances``: a binding is
never replaced by a status patch) — so memory stays bounded by the number of objects. Objects
are served oldest first, each by one call at a time, at most ``max_in_flight`` objects at once.

Unlike upstream, a call that fails for a reason a later attempt may not meet is not handed back
to its caller but kept and tried again (a pod reported unschedulable must say so even when the
API server was away at that moment): it keeps its turn, and the dispatcher waits out a jittered
exponential backoff before it sends anything more; the first success resets it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.client.backoff import Backoff
from scheduler.client.outage import OutageLog
from scheduler.client.rest import ApiError
from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

SUCCESS = "success"  # upstream's result label values
ERROR = "error"


class APICall(Protocol):
    """One write about one object (``key``: its uid, or what else names it uniquely)."""

    @property
    def call_type(self) -> str: ...

    @property
    def key(self) -> str: ...

    def merge(self, older: APICall) -> None:
        """Take over what ``older`` (same type, same object, not sent yet) would still write."""

    def is_noop(self) -> bool:
        """Nothing to write: the object is already as this call would make it."""

    async def execute(self, client: ApiClient) -> bool:
        """One attempt. True: it landed (or had nothing left to do); False: given up for good,
        with one log line saying why. Raises ``ApiError`` when a later attempt may succeed."""


class CallMetrics(Protocol):
    """``scheduler_async_api_call_*`` and ``scheduler_pending_async_api_calls``."""

    def executed(self, call_type: str, result: str, seconds: float) -> None: ...

    def pending(self, call_type: str, change: int) -> None: ...


@dataclass(slots=True)
class _Queued:
    call: APICall
    number: int  # tells a call from the newer one that took its place while it was in flight


@dataclass(slots=True)
class APIDispatcher:
    """Start ``run()`` as a task; ``add`` never blocks; ``flush`` waits until nothing is left.

    ``component`` names the writer in the outage log; ``sleep`` and ``clock`` are replaced by
    tests.
    """

    client: ApiClient
    relevances: Mapping[str, int]
    component: str
    max_in_flight: int = 16
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=0.2, cap=10.0, jitter=0.5))
    outage: OutageLog = field(default_factory=OutageLog)
    metrics: CallMetrics | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.perf_counter
    _calls: dict[str, _Queued] = field(default_factory=dict, init=False)  # waiting or in flight
    _turns: dict[str, None] = field(default_factory=dict, init=False)  # waiting keys, oldest first
    _in_flight: dict[str, asyncio.Task[None]] = field(default_factory=dict, init=False)
    _numbers: int = field(default=0, init=False)
    _pause: float = field(default=0.0, init=False)  # backoff to wait out before the next send
    _wakeup: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _idle: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    def __post_init__(self) -> None:
        self._idle.set()

    @property
    def pending(self) -> int:
        """Objects with a call waiting or in flight."""
        return len(self._calls)

    def add(self, call: APICall) -> bool:
        """Queue ``call``, folded into the one already there for its object; False when it was
        skipped (a more relevant call is there, or it has nothing to write)."""
        key = call.key
        older = self._calls.get(key)
        if older is not None:
            if self._relevance(call) < self._relevance(older.call):
                return False
            if older.call.call_type == call.call_type:
                call.merge(older.call)
        if call.is_noop() and key not in self._in_flight:
            if older is not None:  # what it would still have written is written already
                self._drop_waiting(key)
            return False
        self._numbers += 1
        self._calls[key] = _Queued(call, self._numbers)
        if older is None:
            self._turns[key] = None
            self._count_pending(call, +1)
        elif key not in self._in_flight and older.call.call_type != call.call_type:
            self._count_pending(older.call, -1)  # it takes the older call's turn
            self._count_pending(call, +1)
        self._idle.clear()
        self._wakeup.set()
        return True

    async def flush(self, timeout: float) -> bool:
        """Wait until every call added so far has landed or been given up on."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def run(self) -> None:
        """Send waiting calls until cancelled (which cancels those in flight)."""
        try:
            while True:
                if not self._turns or len(self._in_flight) >= self.max_in_flight:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                if self._pause:
                    pause, self._pause = self._pause, 0.0
                    await self.sleep(pause)
                    continue
                key = next(iter(self._turns))
                del self._turns[key]
                queued = self._calls[key]
                self._count_pending(queued.call, -1)
                self._in_flight[key] = asyncio.create_task(self._send(key, queued))
        finally:
            for task in self._in_flight.values():
                task.cancel()

    async def close(self, timeout: float) -> None:
        """Flush (bounded by ``timeout``); what is left is dropped with the process."""
        if not await self.flush(timeout):
            log.warning("%s: %d writes not sent at shutdown", self.component, self.pending)

    # ---------------------------------------------------------------------------- internals

    async def _send(self, key: str, queued: _Queued) -> None:
        call = queued.call
        start = self.clock()
        retry = False
        try:
            landed = await call.execute(self.client)
        except ApiError as exc:
            landed, retry = False, True
            self.outage.failed(self.component, exc)
        except Exception:  # a bug in one call must not stop the calls after it
            log.exception("%s: %s call for %s failed", self.component, call.call_type, key)
            landed = False
        if self.metrics is not None:
            self.metrics.executed(call.call_type, SUCCESS if landed else ERROR, self.clock() - start)
        if not retry:
            self.outage.recovered(self.component)
            self.backoff.reset()
        elif not self._pause:  # calls failing together count as one failed round
            self._pause = self.backoff.next()
        self._finish(key, queued, retry)

    def _finish(self, key: str, queued: _Queued, retry: bool) -> None:
        del self._in_flight[key]
        newest = self._calls[key]
        if newest.number == queued.number and not retry:
            del self._calls[key]
        else:  # a retry keeps its turn; a newer call (merged with this one) comes after the others
            if retry:
                self._turns = {key: None, **self._turns}
            else:
                self._turns[key] = None
            self._count_pending(newest.call, +1)
        if not self._calls:
            self._idle.set()
        self._wakeup.set()

    def _drop_waiting(self, key: str) -> None:
        queued = self._calls.pop(key)
        self._turns.pop(key, None)
        self._count_pending(queued.call, -1)
        if not self._calls:
            self._idle.set()

    def _relevance(self, call: APICall) -> int:
        return self.relevances[call.call_type]

    def _count_pending(self, call: APICall, change: int) -> None:
        if self.metrics is not None:
            self.metrics.pending(call.call_type, change)
