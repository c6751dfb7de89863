"""Flags that several commands share."""

from __future__ import annotations

import argparse


def add_plugin_arguments(parser: argparse.ArgumentParser) -> None:
    """``--plugin`` and ``--feature-gates``, as every command that builds the scheduler takes them
    (run, explain, simulate)."""
    parser.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="add a plugin from a module or a file (path/to/file.py:Class); repeatable",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="Gate=true|false,...",
        help="feature gates, as kube-scheduler's flag (`pyscheduler feature-gates` lists them)",
    )
