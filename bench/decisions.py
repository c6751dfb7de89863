"""Scheduling decisions per second, in process: cache + queue + framework, binder in memory.

    python -m bench.decisions [--nodes 1000 5000] [--pods 10000] [--workloads plain selector mixed]

Workloads (the default profile schedules all of them):

- ``plain``: identical pods asking for 100m CPU and 128Mi on identical nodes;
- ``selector``: the same pods with a ``nodeSelector`` on the zone label (a third of the nodes match);
- ``mixed``: a cluster with a tainted GPU pool (NoSchedule), a spot pool (PreferNoSchedule),
  cordoned nodes and nodes holding images, and a rotation of pods: plain ones, ones tolerating
  the GPU taint with a GPU-pool selector, ones with preferred node affinity for a zone, ones
  tolerating the spot taint, and ones with a required affinity on the disk label.

Prints decisions/s, the p50/p99 of one scheduling cycle and the peak RSS for each workload and
node count. Figures are printed, never asserted (timing goals live here, not in tests).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from bench.common import ZONES, Harness, Result, make_node, make_pod
from scheduler.api import Node

ZONE = "topology.kubernetes.io/zone"
MB = 1024 * 1024


def mixed_node(i: int) -> Node:
    """One node of a mixed cluster: pools by index, so every run builds the same cluster."""
    node = make_node(i)
    labels = dict(node.labels)
    raw: dict[str, Any] = {
        "metadata": {"name": node.name, "uid": node.uid, "labels": labels},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }
    if i % 10 == 0:
        labels["pool"] = "gpu"
        raw["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    elif i % 10 == 1:
        labels["pool"] = "spot"
        raw["spec"]["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
    if i % 50 == 7:
        raw["spec"]["unschedulable"] = True
    if i % 2 == 0:
        labels["disk"] = "ssd"
    if i % 3 != 0:
        raw["status"]["images"] = [
            {"names": ["nginx:latest"], "sizeBytes": 150 * MB},
            {"names": [f"app-{i % 7}:1"], "sizeBytes": 400 * MB},
        ]
    return Node.from_dict(raw)


def _preferred_zone(zone: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": term}]
        }
    }


def _required_ssd() -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _mixed_spec(i: int) -> dict[str, Any]:
    kind = i % 5
    if kind == 1:
        return {
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ],
            "nodeSelector": {"pool": "gpu"},
        }
    if kind == 2:
        return {"affinity": _preferred_zone(ZONES[i % 3])}
    if kind == 3:
        return {"tolerations": [{"key": "spot", "operator": "Exists"}]}
    if kind == 4:
        return {"affinity": _required_ssd()}
    return {}


def pods_of(workload: str, count: int) -> Iterator[Any]:
    for i in range(count):
        name = f"pod-{i:05d}"
        if workload == "plain":
            yield make_pod(name, {"app": "bench"})
        elif workload == "selector":
            yield make_pod(name, {"app": "bench"}, nodeSelector={ZONE: ZONES[i % 3]})
        else:
            yield make_pod(name, {"app": f"bench-{i % 5}"}, **_mixed_spec(i))


NODE_FACTORIES: dict[str, Callable[[int], Node]] = {
    "plain": make_node,
    "selector": make_node,
    "mixed": mixed_node,
}


async def run(num_nodes: int, num_pods: int, workload: str = "plain") -> Result:
    harness = Harness(num_nodes, NODE_FACTORIES[workload])
    return await harness.schedule(pods_of(workload, num_pods))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--workloads", nargs="+", choices=sorted(NODE_FACTORIES), default=["plain"])
    args = parser.parse_args()
    for workload in args.workloads:
        for num_nodes in args.nodes:
            print(asyncio.run(run(num_nodes, args.pods, workload)).line(workload))


if __name__ == "__main__":
    main()
