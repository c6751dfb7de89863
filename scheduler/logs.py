"""Log verbosity as kube-scheduler's ``-v``: a message of level V is written when V <= ``--v``.

Levels follow upstream's habits: 2 is the default (one line per binding failure or lost lease),
4 is debugging (per-cycle decisions), 10 is tracing (every plugin's score for every node).
Messages of level 4 and above are written at ``logging.DEBUG``, the others at ``logging.INFO``
(``-v=0`` leaves only warnings and errors).
Check ``v(level)`` before building an expensive message.
"""

from __future__ import annotations

import logging
import sys

DEFAULT_VERBOSITY = 2

_verbosity = DEFAULT_VERBOSITY


def v(level: int) -> bool:
    """Is a message of verbosity ``level`` written?"""
    return level <= _verbosity


def verbosity() -> int:
    return _verbosity


def set_verbosity(level: int) -> None:
    """Change which levels ``v()`` lets through (``configure`` also sets the loggers' level)."""
    global _verbosity
    _verbosity = level


def level_for(verbosity_level: int) -> int:
    """The ``logging`` level that lets messages of ``verbosity_level`` through."""
    if verbosity_level >= 4:
        return logging.DEBUG
    return logging.INFO if verbosity_level >= 1 else logging.WARNING


def configure(verbosity_level: int) -> None:
    """Write logs to stderr, one line each, at the given verbosity."""
    logging.basicConfig(
        level=level_for(verbosity_level),
        stream=sys.stderr,
        format="%(asctime)s %(levelname).1s %(name)s: %(message)s",
    )
    set_verbosity(verbosity_level)
