"""The example out-of-tree package (examples/plugins/pyscheduler-example-plugins) as a user gets it:
pip-installed into a directory of its own (put on PYTHONPATH), found through its entry points by
the real `pyscheduler` processes, its own tests passing against the installed copy, bad args
refused with exit 2, and both plugins' effect on the local endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from simcluster import SimCluster

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "plugins" / "pyscheduler-example-plugins"
PYSCHEDULER = str(Path(sys.executable).parent / "pyscheduler")
WINDOW = ("kube-system", "maintenance-window")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install`` of a copy of the package (the build writes into its source tree), with no
    index and no build isolation: nothing is downloaded, the virtualenv's setuptools builds it."""
    work = tmp_path_factory.mktemp("example-plugins")
    source = work / "source"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = work / "site"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps"]
    command += ["--no-build-isolation", "--target", str(target), str(source)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return target


def with_site(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site)}


def pyscheduler(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYSCHEDULER, *args], capture_output=True, text=True, env=with_site(site), timeout=60, check=False
    )


def test_pyscheduler_plugins_lists_both_from_the_distribution(site: Path) -> None:
    result = pyscheduler(site, "plugins", "-o", "json")
    assert result.returncode == 0, result.stderr
    listed = {entry["name"]: entry for entry in orjson.loads(result.stdout)}
    cost, window = listed["CostByLabel"], listed["MaintenanceWindow"]
    assert cost["origin"] == (
        "distribution pyscheduler-example-plugins 0.1.0 (pyscheduler_example_plugins.cost:CostByLabel)"
    )
    assert cost["extensionPoints"] == ["score"]
    assert {"name": "cost", "type": "dict[str, int]", "default": {"spot": 10, "on-demand": 100}} in cost[
        "args"
    ]
    assert window["extensionPoints"] == ["permit"]
    assert window["watches"] == ["v1/configmaps"]
    assert {"name": "timeoutSeconds", "type": "float", "default": 600.0} in window["args"]


def test_its_own_tests_pass_against_the_installed_copy(site: Path) -> None:
    tests = site.parent / "source" / "tests"  # src/ is not on the path: the import is the installed one
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        capture_output=True,
        text=True,
        env=with_site(site),
        cwd=tests.parent,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout


def example_config(**window_args: Any) -> dict[str, Any]:
    """The package's config.yaml, with MaintenanceWindow args overridden."""
    config = yaml.safe_load((PACKAGE / "config.yaml").read_text())
    for entry in config["profiles"][0]["pluginConfig"]:
        if entry["name"] == "MaintenanceWindow":
            entry["args"].update(window_args)
    return config


@pytest.mark.parametrize(
    ("plugin", "args", "message"),
    [
        ("CostByLabel", {"cost": {"spot": -1}}, "args.cost.spot: Invalid value: -1: must not be negative"),
        ("CostByLabel", {"colour": "red"}, "args.colour: unknown field"),
        ("MaintenanceWindow", {"configMap": "window"}, "args.configMap: Invalid value: 'window'"),
    ],
)
def test_bad_args_stop_pyscheduler_run_with_exit_2_naming_the_field(
    site: Path, tmp_path: Path, plugin: str, args: dict[str, Any], message: str
) -> None:
    config = example_config()
    entries = config["profiles"][0]["pluginConfig"]
    at = next(i for i, entry in enumerate(entries) if entry["name"] == plugin)
    entries[at]["args"] = args
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    result = pyscheduler(site, "run", "--config", str(path), "--kubeconfig", str(tmp_path / "none"))
    assert result.returncode == 2, result.stderr
    assert f"profiles[0].pluginConfig[{at}].{message}" in result.stderr


# ---------------------------------------------------------------------------- on the local endpoint


async def eventually(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.05)
    return value


def pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
                }
            ],
        },
    }


def node_of(sim: SimCluster, name: str) -> str:
    return ((sim.store.get("pods", "default", name) or {}).get("spec") or {}).get("nodeName") or ""


def events_about(sim: SimCluster, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        event
        for event in sim.store.list("events.events.k8s.io", namespace="default")
        if event.get("reason") == reason and (event.get("regarding") or {}).get("name") == name
    ]


def set_window(sim: SimCluster, state: str) -> None:
    namespace, name = WINDOW
    current = sim.store.get("configmaps", namespace, name)
    assert current is not None
    sim.api.update(sim.api.resource("configmaps"), namespace, name, {**current, "data": {"state": state}})


async def test_a_pod_waits_out_the_window_then_pods_fill_spot_nodes_before_on_demand(
    site: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(example_config(checkIntervalSeconds=0.2)))
    async with SimCluster(node_template=PACKAGE / "nodes.yaml", kubelet_delay=0.05) as sim:
        namespace, name = WINDOW
        # open before the scheduler starts: its first list of ConfigMaps sees it
        await sim.create(
            "configmaps", {"metadata": {"name": name, "namespace": namespace}, "data": {"state": "open"}}
        )
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        log = tmp_path / "scheduler.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                *(PYSCHEDULER, "run", "--config", str(config), "--kubeconfig", str(kubeconfig)),
                *("--plain-http", "--port", "0"),
                env=with_site(site),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            await sim.create("pods", pod("held"))
            (event,) = await eventually(
                lambda: events_about(sim, "held", "MaintenanceWindowOpen"), what="the Waiting event"
            )
            assert event["action"] == "Waiting"
            assert "until maintenance window kube-system/maintenance-window closes" in event["note"]
            assert not node_of(sim, "held")  # held at Permit, not bound

            set_window(sim, "closed")
            held_on = await eventually(lambda: node_of(sim, "held"), what="held bound once the window closed")
            assert held_on.startswith("spot-")

            # two spot nodes of 1 CPU take eight pods of 250m; the default scorers alone would
            # put them on the larger, emptier on-demand nodes
            for i in range(7):
                await sim.create("pods", pod(f"web-{i}"))
            await eventually(lambda: all(node_of(sim, f"web-{i}") for i in range(7)), what="seven bound")
            assert {node_of(sim, f"web-{i}") for i in range(7)} | {held_on} == {"spot-0000", "spot-0001"}
            for i in range(7, 9):
                await sim.create("pods", pod(f"web-{i}"))
            await eventually(lambda: all(node_of(sim, f"web-{i}") for i in range(7, 9)), what="two more")
            assert all(node_of(sim, f"web-{i}").startswith("on-demand-") for i in range(7, 9))
        except AssertionError as failure:
            raise AssertionError(f"{failure}\n--- scheduler log ---\n{log.read_text()[-4000:]}") from None
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            await asyncio.wait_for(process.wait(), 20)
