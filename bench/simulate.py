"""`pyscheduler simulate` at scale: a 5,000-node / 10,000-pod snapshot and a 100-pod `--add`.

    python -m bench.simulate [--nodes 5000] [--pods 10000] [--add 100]

Writes a snapshot file of that size (nodes in three zones, the pods already bound, two per
node), then times the command as a user runs it, in a process of its own, from reading the
file to the printed report; and, in this process, the parts: reading the file, loading it into
the local endpoint, the scheduler's start and sync, the 100 decisions and 200 copies of capacity
mode (a copy is created once the previous one is decided). Figures are printed,
never asserted (issue 17's target: within 10 s on a 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.simulate import manifests
from scheduler.simulate.engine import Simulation
from scheduler.simulate.snapshot import FORMAT_VERSION, KIND, read_snapshot

CAPACITY_COPIES = 200  # capacity mode's cost per copy, on the same snapshot


def snapshot(nodes: int, pods: int) -> dict[str, Any]:
    node_objs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{i:05d}",
                "uid": f"node-uid-{i}",
                "labels": {
                    "kubernetes.io/hostname": f"node-{i:05d}",
                    "topology.kubernetes.io/zone": f"z{i % 3}",
                },
            },
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for i in range(nodes)
    ]
    pod_objs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"running-{i}",
                "namespace": "default",
                "uid": f"pod-uid-{i}",
                "labels": {"app": f"app-{i % 50}"},
            },
            "spec": {
                "nodeName": f"node-{i % nodes:05d}",
                "schedulerName": "default-scheduler",
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                ],
            },
            "status": {"phase": "Running"},
        }
        for i in range(pods)
    ]
    namespaces = [{"metadata": {"name": ns}} for ns in ("default", "kube-system")]
    return {
        "kind": KIND,
        "formatVersion": FORMAT_VERSION,
        "objects": {"namespaces": namespaces, "nodes": node_objs, "pods": pod_objs},
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
                    ]
                },
            },
        },
    }


async def parts(snapshot_path: Path, add_path: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    start = time.perf_counter()
    objects = read_snapshot(snapshot_path)
    times["read the snapshot file"] = time.perf_counter() - start
    workloads = manifests.load(str(add_path), "pyscheduler").workloads
    mark = time.perf_counter()
    sim = Simulation(objects, default_config(), app=SchedulerApp, timeout=300)
    await sim.sim.start()
    sim.outcome.warnings += sim.sim.load(objects)
    times["load into the local endpoint"] = time.perf_counter() - mark
    await sim.sim.stop()
    mark = time.perf_counter()
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=300) as simulation:
        times["load + scheduler start and sync"] = time.perf_counter() - mark
        mark = time.perf_counter()
        outcome = await simulation.add(workloads)
        times[f"{len(outcome.placements) + len(outcome.pending)} decisions"] = time.perf_counter() - mark
        mark = time.perf_counter()
        worker = workloads[0].pods[0]
        capacity = await simulation.capacity(worker, CAPACITY_COPIES)
        times[f"--capacity, {capacity.fits} copies one at a time"] = time.perf_counter() - mark
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--add", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        snapshot_path, add_path = Path(tmp) / "cluster.json", Path(tmp) / "add.yaml"
        snapshot_path.write_text(json.dumps(snapshot(args.nodes, args.pods)))
        add_path.write_text(yaml.safe_dump(deployment(args.add)))
        size = snapshot_path.stat().st_size / 1e6
        print(f"snapshot: {args.nodes} nodes, {args.pods} pods, {size:.1f} MB; --add: {args.add} pods")
        start = time.perf_counter()
        command = [sys.executable, "-m", "scheduler", "simulate", "--snapshot", str(snapshot_path)]
        result = subprocess.run(
            [*command, "--add", str(add_path), "-o", "json"], capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - start
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            raise SystemExit(result.returncode)
        placed = len(json.loads(result.stdout)["placements"])
        print(f"pyscheduler simulate, whole command: {wall:.2f} s ({placed} of {args.add} placed)")
        for name, seconds in asyncio.run(parts(snapshot_path, add_path)).items():
            print(f"  {name}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
