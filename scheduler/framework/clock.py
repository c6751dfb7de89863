"""Time as the framework sees it: injectable, so Permit timeouts and backoff are testable.

Plugins and the runtime never call ``time.monotonic`` or ``loop.call_later`` directly; they use a
:class:`Clock` (``handle.clock`` for plugins). :class:`RealClock` is asyncio's monotonic time;
``scheduler.testing.FakeClock`` moves only when a test advances it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean anything)."""

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` once ``delay`` seconds have passed."""

    async def sleep(self, delay: float) -> None: ...


class RealClock:
    """The event loop's time."""

    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Timer:
        return asyncio.get_running_loop().call_later(delay, callback, *args)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)


REAL_CLOCK = RealClock()
