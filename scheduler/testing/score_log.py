"""Turning on the framework's -v=10 score records for a test or a benchmark that reads them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from scheduler import logs

HandlerT = TypeVar("HandlerT", bound=logging.Handler)


@contextmanager
def score_records_to(handler: HandlerT) -> Iterator[HandlerT]:
    """Send the "scheduler.scores" records (verbosity 10) to ``handler`` only, for the duration;
    the logger's level, propagation and the verbosity are restored after."""
    score_log = logging.getLogger("scheduler.scores")
    saved = score_log.level, score_log.propagate, logs.verbosity()
    score_log.addHandler(handler)
    score_log.setLevel(logging.DEBUG)
    score_log.propagate = False
    logs.set_verbosity(10)
    try:
        yield handler
    finally:
        score_log.removeHandler(handler)
        score_log.setLevel(saved[0])
        score_log.propagate = saved[1]
        logs.set_verbosity(saved[2])
