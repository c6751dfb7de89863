"""What the plugin remembers about groups between scheduling cycles.

All of it expires on the handle's clock, so tests move time by hand:
- groups in backoff after a member fit nowhere (refused at PreFilter until it ends);
- groups whose minResources check passed recently (not repeated for every member);
- when each group last failed, which moves its pods behind groups queued later, so a gang that
  cannot fit does not keep the head of the queue (the sort key reads it).
"""

from __future__ import annotations

import time

from scheduler.framework import Clock


class ExpiringKeys:
    """Keys that lapse ``ttl`` seconds after they were added (each key its own ttl)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}

    def add(self, key: str, ttl: float) -> None:
        self._until[key] = self._clock.now() + ttl

    def discard(self, key: str) -> None:
        self._until.pop(key, None)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        until = self._until.get(key)
        if until is None:
            return False
        if self._clock.now() >= until:
            del self._until[key]
            return False
        return True


class GroupState:
    def __init__(self, clock: Clock) -> None:
        self.backed_off = ExpiringKeys(clock)
        self.resources_checked = ExpiringKeys(clock)
        # group key -> wall time of its last failure (the queue order is in wall time)
        self._last_failure: dict[str, float] = {}

    def mark_failure(self, key: str) -> None:
        self._last_failure[key] = time.time()

    def clear_failure(self, key: str) -> None:
        self._last_failure.pop(key, None)

    def last_failure(self, key: str) -> float | None:
        return self._last_failure.get(key)
