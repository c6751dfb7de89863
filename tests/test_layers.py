"""The layers, as what importing a module drags in (each probe in a fresh interpreter):
commands (scheduler.cmd) above the app (scheduler.app) above the engines and the core, and the
local endpoint (simcluster, with kubernetes_asyncio) only under the commands that serve it, so
that the scheduler starts without it and the runtime image can leave it out."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import scheduler

ROOT = Path(__file__).resolve().parents[1]
LOCAL_ENDPOINT = ("simcluster", "kubernetes_asyncio", "kubernetes")
COMMANDS = ("scheduler.cmd", "scheduler.cli", "scheduler.__main__")
APP = ("scheduler.app",)
ENGINES = ("scheduler.explain", "scheduler.shadow", "scheduler.simulate")
# `pyscheduler version` and these start without kubernetes_asyncio (~0.5 s of CPU for its models)
NO_LOCAL_ENDPOINT = ("run", "explain", "snapshot", "plugins", "feature_gates")

PROBE = """
import importlib, json, sys
modules, unwanted = json.loads(sys.argv[1]), tuple(json.loads(sys.argv[2]))
for module in modules:
    importlib.import_module(module)
below = tuple(name + "." for name in unwanted)
print(json.dumps(sorted(name for name in sys.modules if name in unwanted or name.startswith(below))))
"""


def imported(modules: list[str], unwanted: tuple[str, ...]) -> list[str]:
    """Which modules of ``unwanted`` (or below them) importing ``modules`` imports."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), json.dumps(unwanted)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(result.stdout))


def modules_of(*packages: str) -> list[str]:
    """Every module of the scheduler package under ``packages`` (all of it when none)."""
    names = [info.name for info in pkgutil.walk_packages(scheduler.__path__, "scheduler.")]
    return sorted(n for n in ["scheduler", *names] if not packages or n.startswith(packages))


def test_the_app_imports_neither_the_local_endpoint_nor_a_command() -> None:
    assert imported(["scheduler.app"], LOCAL_ENDPOINT + COMMANDS) == []


def test_the_engines_import_neither_the_app_nor_a_command() -> None:
    engines = modules_of(*ENGINES)
    assert "scheduler.simulate.engine" in engines and "scheduler.explain.evaluate" in engines
    assert imported(engines, APP + COMMANDS) == []


def test_nothing_below_the_commands_imports_one() -> None:
    below = [name for name in modules_of() if not name.startswith(COMMANDS)]
    assert "scheduler.app" in below
    assert imported(below, COMMANDS) == []


@pytest.mark.parametrize(
    ("modules", "unwanted"),
    [
        (["scheduler.cli", *(f"scheduler.cmd.{name}" for name in NO_LOCAL_ENDPOINT)], LOCAL_ENDPOINT),
        # kopf logs in with kubernetes_asyncio's configuration where that is installed
        (["scheduler.cmd.podgroup_controller"], ("simcluster",)),
    ],
    ids=["cli, run, explain, snapshot, plugins, feature-gates", "podgroup-controller"],
)
def test_the_commands_that_serve_no_local_endpoint_do_not_import_it(
    modules: list[str], unwanted: tuple[str, ...]
) -> None:
    assert imported(modules, unwanted) == []


def test_the_probe_sees_what_a_command_imports() -> None:
    assert "simcluster" in imported(["scheduler.cmd.sim_cluster"], LOCAL_ENDPOINT)
