"""`pyscheduler feature-gates`: the known gates, their defaults and what pyscheduler honours, as
a table. Exit code 0."""

from __future__ import annotations

import argparse

from scheduler.features import KNOWN, go_bool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options: the command prints every known gate."""


def main(args: argparse.Namespace) -> int:
    rows = [("NAME", "DEFAULT", "STAGE", "PYSCHEDULER", "NOT YET")]
    for name in sorted(KNOWN):
        gate = KNOWN[name]
        honoured = "both values" if gate.switchable else f"only {go_bool(gate.default)}"
        rows.append((name, go_bool(gate.default), gate.stage or "GA", honoured, gate.gap))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0
