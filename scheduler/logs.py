"""Log verbosity as kube-scheduler's ``-v``: a message of level V is written when V <= ``--v``.

Levels follow upstream's habits: 2 is the default (one line per binding failure or lost lease),
4 is debugging (per-cycle decisions), 10 is tracing (every plugin's score for every node).
Messages of level 4 and above are written at ``logging.DEBUG``, the others at ``logging.INFO``
(``-v=0`` leaves only warnings and errors).
Check ``v(level)`` before building an expensive message.

``--logging-format=json`` writes one JSON object per line, shaped as kube-scheduler's JSON logs
(``ts`` in milliseconds, ``caller``, ``msg``, ``v``, ``err`` for errors) plus the record's
structured fields (``extra=``), for log pipelines that index fields.
"""

from __future__ import annotations

import logging
import sys
import traceback
from typing import Any

import orjson

DEFAULT_VERBOSITY = 2
FORMATS = ("text", "json")
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

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


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created * 1000, 3),
            "caller": f"{record.module}.py:{record.lineno}",
            "logger": record.name,
            "msg": record.getMessage(),
            "v": 0 if record.levelno >= logging.INFO else 4,
        }
        if record.levelno >= logging.WARNING:
            entry["level"] = record.levelname.lower()
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["err"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return orjson.dumps(entry, default=str).decode()


def configure(verbosity_level: int, fmt: str = "text") -> None:
    """Write logs to stderr, one line each, at the given verbosity, as text or JSON."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_for(verbosity_level))
    set_verbosity(verbosity_level)
