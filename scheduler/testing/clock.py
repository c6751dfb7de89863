"""A clock that moves only when the test says so."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Any


class _Timer:
    __slots__ = ("args", "callback", "cancelled")

    def __init__(self, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """``framework.Clock`` on virtual time: ``await clock.advance(300)`` fires what falls due, in
    order, letting the event loop run in between, without waiting."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    __call__ = now  # also usable where a plain ``() -> float`` clock is expected

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> _Timer:
        timer = _Timer(callback, args)
        heapq.heappush(self._timers, (self._now + max(0.0, delay), next(self._seq), timer))
        return timer

    async def sleep(self, delay: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        self.call_later(delay, wake)
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing due timers in deadline order."""
        target = self._now + seconds
        await _settle()
        while self._timers and self._timers[0][0] <= target:
            deadline, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, deadline)
            timer.callback(*timer.args)
            await _settle()
        self._now = target
        await _settle()


async def _settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)
