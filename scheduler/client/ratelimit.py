"""Client-side request throttling, as ``clientConnection.qps`` / ``burst`` configure it.

client-go throttles every non-watch request through a token bucket so a busy scheduler cannot
flood the API server; this is the same bucket: it starts full (``burst`` tokens), refills at
``qps`` tokens per second, and callers that find it empty wait their turn in arrival order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class RateLimiter:
    """A token bucket; ``qps <= 0`` disables throttling entirely."""

    __slots__ = ("_burst", "_clock", "_last", "_qps", "_sleep", "_tokens")

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._qps = float(qps)
        self._burst = float(max(1, burst))
        self._clock = clock
        self._sleep = sleep
        self._tokens = self._burst
        self._last = clock()

    @property
    def enabled(self) -> bool:
        return self._qps > 0

    def reserve(self) -> float:
        """Take one token now and return how long the caller must wait before using it.

        Reserving up front (the balance may go negative) keeps waiters in FIFO order without
        a lock: each later caller sees the debt of the earlier ones.
        """
        if self._qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
