"""Jittered exponential backoff for reconnect loops (client-go's 800 ms → 30 s reflector backoff)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(slots=True)
class Backoff:
    """Each ``next()`` doubles the delay up to ``cap``; jitter spreads reconnecting clients apart."""

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0  # the delay is stretched by up to this fraction, like wait.Jitter
    _current: float = field(default=0.0, init=False)

    def next(self) -> float:
        self._current = self.initial if self._current == 0 else min(self._current * self.factor, self.cap)
        return self._current * (1.0 + self.jitter * random.random())

    def reset(self) -> None:
        self._current = 0.0
