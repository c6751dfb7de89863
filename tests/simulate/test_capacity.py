"""Capacity mode: how many more copies fit equals brute force (all copies at once through the real
scheduler), it stops at its limit, and it never preempts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.simulate.engine import Simulation
from scheduler.simulate.snapshot import parse_snapshot
from simcluster import SimCluster
from tests.support.simulate import (
    full_cluster,
    node,
    pod,
    run_cli,
    schedule_directly,
    snapshot_of,
)


@pytest.mark.parametrize(
    ("nodes", "existing", "copy", "stopped_by"),
    [
        # cpu runs out: 4 + 2 - 1 (in use) = 5 copies of 1 cpu
        (
            [node("n-a", "4"), node("n-b", "2")],
            [pod("old-1", "1", node_name="n-a")],
            pod("w", "1"),
            "Insufficient cpu",
        ),
        # the pod count runs out before cpu does
        ([node("n-a", "8", pods="3"), node("n-b", "8", pods="2")], [], pod("w", "100m"), "Too many pods"),
        # one host port per node
        (
            [node("n-a", "8"), node("n-b", "8"), node("n-c", "8")],
            [],
            pod(
                "w",
                "100m",
                containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            ),
            "didn't have free ports",
        ),
    ],
    ids=["cpu", "pod-count", "host-port"],
)
async def test_capacity_equals_brute_force(
    tmp_path: Path,
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    copy: dict[str, Any],
    stopped_by: str,
) -> None:
    # brute force: far more copies than can fit, all at once, through the real scheduler
    async with SimCluster(nodes=0, kubelet=False, controllers=False) as sim:
        for n in nodes:
            await sim.create("nodes", n)
        for p in existing:
            await sim.create("pods", p)
        path = await snapshot_of(sim, tmp_path)
        copies = []
        for i in range(20):
            body = json.loads(json.dumps(copy))
            body["metadata"]["name"] = f"brute-{i}"
            copies.append(body)
        placed = await schedule_directly(sim, copies, tmp_path)
    brute = Counter(node for node in placed.values() if node)
    objects = parse_snapshot(json.loads(path.read_text()), str(path))
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        capacity = await simulation.capacity(copy, limit=50)
    assert capacity.fits == sum(brute.values())
    assert capacity.per_node == dict(brute)
    assert not capacity.limit_reached
    assert stopped_by in capacity.stopped_by
    assert capacity.stopped_by.startswith(f"0/{len(nodes)} nodes are available:")


async def test_capacity_stops_at_its_limit(tmp_path: Path) -> None:
    objects = {"nodes": [node("n-a", "64")]}
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        capacity = await simulation.capacity(pod("w", "100m"), limit=3)
    assert (capacity.fits, capacity.limit_reached, capacity.stopped_by) == (3, True, "")


def test_the_cli_reports_capacity_and_utilization_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(
        json.dumps(
            {
                "kind": "ClusterSnapshot",
                "formatVersion": 1,
                "objects": {"nodes": [node("n-a", "2", memory="4Gi"), node("n-b", "1", memory="4Gi")]},
            }
        )
    )
    worker = tmp_path / "worker.yaml"
    worker.write_text(yaml.safe_dump(pod("worker", "500m", "1Gi")))
    code, out, err = run_cli(capsys, "simulate", "--snapshot", str(snapshot), "--capacity", str(worker))
    assert code == 0, err
    lines = out.splitlines()
    assert "capacity: 6 more copies of default/worker fit" in lines
    assert "  n-a: 4" in lines and "  n-b: 2" in lines
    assert any(line.startswith("the next one: 0/2 nodes are available:") for line in lines)
    (row,) = [line for line in lines if line.startswith("n-a ")]
    assert row.split() == ["n-a", "0m", "(0%)", "2000m", "(100%)", "0", "(0%)", "4Gi", "(100%)"]


async def test_capacity_never_preempts() -> None:
    async with Simulation(full_cluster(), default_config(), app=SchedulerApp, timeout=30) as simulation:
        capacity = await simulation.capacity(pod("urgent", "1", priorityClassName="high"), limit=10)
        left = {p["metadata"]["name"] for p in simulation.sim.store.list("pods")}
    assert capacity.fits == 0
    assert "2 Insufficient cpu" in capacity.stopped_by
    assert left == {"low-1", "low-2"}
