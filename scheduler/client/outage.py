"""One log line per round while the API server cannot be reached, instead of one per component.

When the API server goes away every informer, the lease and the writers fail at once; logging
each failure with its exception gives an operator dozens of lines per second that all say the
same thing. Components report here instead: the first failure is logged at once, then at most
one summary line per ``interval`` says what is waiting and for how long, and one line says when
the API answers again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("scheduler.outage")

SUMMARY_INTERVAL = 10.0


@dataclass(slots=True)
class _Failure:
    since: float
    error: str


class OutageLog:
    """Failures by component (``informer pods``, ``lease``, ``status writer``...)."""

    def __init__(
        self,
        interval: float = SUMMARY_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> None:
        self._interval = interval
        self._clock = clock
        self._log = logger
        self._failing: dict[str, _Failure] = {}
        self._outage_since: float | None = None
        self._last_summary = 0.0

    @property
    def failing(self) -> list[str]:
        return sorted(self._failing)

    def failed(self, component: str, error: BaseException | str) -> None:
        """``component`` could not reach the API (it retries on its own)."""
        now = self._clock()
        text = describe_error(error)
        self._log.debug("%s: %s", component, text)
        failure = self._failing.get(component)
        if failure is None:
            self._failing[component] = _Failure(now, text)
        else:
            failure.error = text
        if self._outage_since is None:
            self._outage_since = now
            self._last_summary = now
            self._log.warning("API request failed (%s: %s); retrying", component, text)
        elif now - self._last_summary >= self._interval:
            self._last_summary = now
            self._log.warning("%s", self.summary())

    def recovered(self, component: str) -> None:
        """``component`` reached the API again."""
        if self._failing.pop(component, None) is None or self._failing:
            return
        if self._outage_since is not None:
            self._log.info("API server answering again after %.0fs", self._clock() - self._outage_since)
        self._outage_since = None

    def summary(self) -> str:
        now = self._clock()
        since = self._outage_since if self._outage_since is not None else now
        names = self.failing
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        newest = max(self._failing.values(), key=lambda f: f.since, default=None)
        error = f"; last error: {newest.error}" if newest else ""
        return f"API server unreachable for {now - since:.0f}s; waiting: {shown}{error}"


def describe_error(error: BaseException | str, limit: int = 200) -> str:
    """The first line of an error, cut to ``limit`` characters."""
    text = error if isinstance(error, str) else (str(error).strip() or type(error).__name__)
    line = text.splitlines()[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."
