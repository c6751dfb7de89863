"""Shared by the simulate tests: a direct run of the real scheduler on a SimCluster, and builders."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from scheduler.app import SchedulerApp
from scheduler.cli import main
from scheduler.config import default_config
from scheduler.serving.options import ServingOptions
from scheduler.simulate.engine import key_of, unschedulable_condition
from scheduler.simulate.snapshot import read_cluster, write_snapshot
from simcluster import SimCluster
from tests.support.cluster import eventually

REPO = Path(__file__).resolve().parents[2]


def decided(pod: dict[str, Any] | None) -> bool:
    if pod is None or pod["spec"].get("nodeName"):
        return True
    return unschedulable_condition(pod) is not None and not (pod.get("status") or {}).get("nominatedNodeName")


@contextlib.asynccontextmanager
async def running_scheduler(sim: SimCluster, tmp_path: Path, seed: int = 0) -> AsyncIterator[SchedulerApp]:
    """The real scheduler (upstream defaults) against ``sim`` over HTTP, synced and scheduling."""
    config = default_config()
    config.leader_election.leader_elect = False
    app = SchedulerApp(
        config,
        kubeconfig=str(sim.write_kubeconfig(tmp_path / "direct-kubeconfig")),
        serving=ServingOptions(bind_address="127.0.0.1", port=0, plain_http=True),
        rng=random.Random(seed),
    )
    task = asyncio.create_task(app.run())
    try:
        assert await app.wait_ready(20)
        yield app
    finally:
        app.shutting_down.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def nodes_of(sim: SimCluster, keys: Iterable[str]) -> dict[str, str]:
    """Each pod's node ("" while pending) once every one of them is decided."""
    found = {key: sim.store.get("pods", *key.split("/", 1)) for key in keys}
    if not all(decided(p) for p in found.values()):
        return {}
    return {key: ((p or {}).get("spec") or {}).get("nodeName", "") for key, p in found.items()}


async def schedule_directly(
    sim: SimCluster, pods: Iterable[dict[str, Any]], tmp_path: Path, seed: int = 0
) -> dict[str, str]:
    """Create the pods once the real scheduler has synced; returns each one's node ("" pending)."""
    async with running_scheduler(sim, tmp_path, seed):
        keys = [key_of(await sim.create("pods", pod)) for pod in pods]
        placed: dict[str, str] = await eventually(lambda: nodes_of(sim, keys), timeout=20.0, interval=0.01)
        return placed


def node(name: str, cpu: str, memory: str = "8Gi", pods: str = "110", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str, cpu: str = "100m", memory: str = "64Mi", node_name: str = "", **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name.rsplit("-", 1)[0]}},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
            **spec,
        },
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    return body


def snapshot_file(tmp_path: Path, objects: dict[str, list[Any]], name: str = "cluster.json") -> Path:
    """A ClusterSnapshot file (format 1) holding ``objects``, by resource."""
    path = tmp_path / name
    path.write_text(json.dumps({"kind": "ClusterSnapshot", "formatVersion": 1, "objects": objects}))
    return path


def simulate_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """``pyscheduler simulate ... -o json`` in this process; asserts it succeeds, returns the report."""
    code = main(["simulate", *args, "-o", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    return report


def pyscheduler(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process (no interpreter start-up): exit code, stdout, stderr."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's refusals
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


ZONE = "topology.kubernetes.io/zone"


async def populate(sim: SimCluster) -> None:
    """Mixed nodes in two zones, a tainted one, and pods already running on some."""
    for name, cpu, zone, extra in (
        ("n-a", "4", "a", {}),
        ("n-b", "2", "a", {}),
        ("n-c", "8", "b", {"disk": "ssd"}),
        ("n-d", "4", "b", {}),
    ):
        await sim.create("nodes", node(name, cpu, **{ZONE: zone}, **extra))
    tainted = node("n-e", "16", **{ZONE: "b"})
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    await sim.create("nodes", tainted)
    await sim.create("pods", pod("old-1", "2", node_name="n-a"))
    await sim.create("pods", pod("old-2", "1500m", node_name="n-c"))
    await sim.create("pods", pod("old-3", "3", node_name="n-d"))


async def snapshot_of(sim: SimCluster, tmp_path: Path) -> Path:
    snapshot, skipped = await read_cluster(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    assert skipped == []
    path = tmp_path / "cluster.json"
    write_snapshot(snapshot, path)
    return path


PRIORITY = {"priorityclasses": [{"metadata": {"name": "high"}, "value": 1000}]}


def full_cluster() -> dict[str, list[dict[str, Any]]]:
    """Two 2-cpu nodes, each filled by a low-priority pod."""
    return {
        **PRIORITY,
        "namespaces": [{"metadata": {"name": "default"}}],
        "nodes": [node("n-a", "2"), node("n-b", "2")],
        "pods": [pod("low-1", "2", node_name="n-a"), pod("low-2", "2", node_name="n-b")],
    }
