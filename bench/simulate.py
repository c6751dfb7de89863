"""`pyscheduler simulate` at scale: a 5,000-node / 10,000-pod snapshot, a 100-pod `--add`, a
drain and `--fit`.

    python -m bench.simulate [--nodes 5000] [--pods 10000] [--add 100] [--runs 3]

Writes a snapshot file of that size (nodes in three zones and racks of 50, the pods already
bound, two per node, Running and Ready, owned by 50 ReplicaSets), then times commands as a user
runs them, each in a process of its own, from reading the file to the printed report, ``--runs``
times (min and median printed):

- ``--add``: a 100-replica Deployment;
- ``--drain-selector rack=r0``: 50 nodes cordoned, their 100 pods evicted and placed elsewhere;
- ``--fit --node-template``: a 20-replica Deployment of 4-cpu pods that only the template's
  nodes (label ``pool: new``) take: 10 new 8-cpu nodes, found by real runs.

Then, in this process, the parts: reading the file, loading it into the local endpoint, the
scheduler's start and sync, the 100 decisions and 200 copies of capacity mode (a copy is created
once the previous one is decided). Figures are printed, never asserted (targets: issue 17's
--add and issue 24's drain and --fit, each within 10 s on a 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
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
from scheduler.testing import deployment_dict

CAPACITY_COPIES = 200  # capacity mode's cost per copy, on the same snapshot
APPS = 50
RACK = 50  # nodes per rack: --drain-selector rack=r0 drains this many
FIT_REPLICAS, FIT_CPU = 20, "4"  # on 8-cpu template nodes: 10 of them


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
                    "rack": f"r{i // RACK}",
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
                "labels": {"app": f"app-{i % APPS}"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": f"app-{i % APPS}",
                        "uid": f"rs-uid-{i % APPS}",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "nodeName": f"node-{i % nodes:05d}",
                "schedulerName": "pyscheduler",  # drained pods come back to our profile
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                ],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for i in range(pods)
    ]
    replicasets = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": f"app-{k}", "namespace": "default", "uid": f"rs-uid-{k}"},
            "spec": {
                "replicas": len(range(k, pods, APPS)),
                "selector": {"matchLabels": {"app": f"app-{k}"}},
                "template": {"metadata": {"labels": {"app": f"app-{k}"}}, "spec": {"containers": []}},
            },
        }
        for k in range(APPS)
    ]
    namespaces = [{"metadata": {"name": ns}} for ns in ("default", "kube-system")]
    return {
        "kind": KIND,
        "formatVersion": FORMAT_VERSION,
        "objects": {
            "namespaces": namespaces,
            "nodes": node_objs,
            "pods": pod_objs,
            "replicasets": replicasets,
        },
    }


def template_node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "pool-new", "labels": {"pool": "new", "topology.kubernetes.io/zone": "z0"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
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


def timed(command: list[str], runs: int) -> tuple[list[float], dict[str, Any]]:
    """Wall-clock seconds of ``runs`` runs of the command, and its last JSON report."""
    seconds, report = [], {}
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run([*command, "-o", "json"], capture_output=True, text=True, check=False)
        seconds.append(time.perf_counter() - start)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            raise SystemExit(result.returncode)
        report = json.loads(result.stdout)
    return seconds, report


def figures(seconds: list[float]) -> str:
    shown = ", ".join(f"{s:.2f}" for s in seconds)
    return f"min {min(seconds):.2f} s, median {statistics.median(seconds):.2f} s ({shown})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--add", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        snapshot_path, add_path = Path(tmp) / "cluster.json", Path(tmp) / "add.yaml"
        fit_path, template_path = Path(tmp) / "fit.yaml", Path(tmp) / "template.yaml"
        snapshot_path.write_text(json.dumps(snapshot(args.nodes, args.pods)))
        add_path.write_text(
            yaml.safe_dump(
                deployment_dict("web", args.add, requests={"cpu": "1", "memory": "2Gi"}, scheduler_name=None)
            )
        )
        fit_path.write_text(
            yaml.safe_dump(
                deployment_dict(
                    "batch",
                    FIT_REPLICAS,
                    requests={"cpu": FIT_CPU, "memory": "2Gi"},
                    scheduler_name=None,
                    nodeSelector={"pool": "new"},
                )
            )
        )
        template_path.write_text(yaml.safe_dump(template_node()))
        size = snapshot_path.stat().st_size / 1e6
        print(f"snapshot: {args.nodes} nodes, {args.pods} pods, {size:.1f} MB; {args.runs} runs each")
        command = [sys.executable, "-m", "scheduler", "simulate", "--snapshot", str(snapshot_path)]

        seconds, report = timed([*command, "--add", str(add_path)], args.runs)
        print(f"--add {args.add} pods: {figures(seconds)}; {len(report['placements'])} placed")

        seconds, report = timed([*command, "--drain-selector", "rack=r0"], args.runs)
        evicted = sum(1 for e in report["evictions"] if e["result"] == "replaced")
        print(
            f"--drain-selector rack=r0 ({len(report['drained'])} nodes): {figures(seconds)}; "
            f"{evicted} pods evicted, {len(report['placements'])} placed, {len(report['pending'])} pending"
        )

        fit_command = [*command, "--add", str(fit_path), "--fit", "--node-template", str(template_path)]
        seconds, report = timed(fit_command, args.runs)
        fit = report["fit"]
        print(
            f"--fit ({fit['pods']} pending {FIT_CPU}-cpu pods): {figures(seconds)}; "
            f"{fit['nodes']} nodes, {len(fit['tried'])} counts tried"
        )
        for name, seconds_ in asyncio.run(parts(snapshot_path, add_path)).items():
            print(f"  {name}: {seconds_:.2f} s")


if __name__ == "__main__":
    main()
