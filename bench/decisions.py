"""Scheduling decisions per second, in process: cache + queue + framework, binder in memory.

    python -m bench.decisions [--nodes 1000 5000] [--pods 10000]

Prints decisions/s, the p50/p99 of one scheduling cycle and the peak RSS for each node count.
Figures are printed, never asserted (timing goals live here, not in tests).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time
from typing import Any

from scheduler.api import Node, Pod
from scheduler.app import available_plugins
from scheduler.cache import Cache
from scheduler.config import default_config
from scheduler.framework import CycleState, Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.queue import ProfilesPolicy, SchedulingQueue
from scheduler.runtime import Framework
from scheduler.runtime.handle import FrameworkHandle
from scheduler.schedule_one import Scheduler

ZONES = ("zone-a", "zone-b", "zone-c")


class InMemoryBinder:
    """Stands in for DefaultBinder: a bind costs nothing, so the figures are the decisions' own."""

    name = "DefaultBinder"

    def __init__(self, args: Any, handle: Any) -> None:
        self.bound = 0

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.bound += 1
        return None


def make_node(i: int) -> Node:
    return Node.from_dict(
        {
            "metadata": {
                "name": f"node-{i:05d}",
                "uid": f"n{i}",
                "labels": {
                    "kubernetes.io/hostname": f"node-{i:05d}",
                    "topology.kubernetes.io/zone": ZONES[i % 3],
                },
            },
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
        }
    )


def make_pod(i: int) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {
                "name": f"pod-{i:05d}",
                "namespace": "default",
                "uid": f"p{i}",
                "labels": {"app": "bench"},
            },
            "spec": {
                "schedulerName": "pyscheduler",
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            },
        }
    )


class _NoEvents:
    def record(self, *args: Any) -> None:
        pass


async def run(num_nodes: int, num_pods: int) -> dict[str, float]:
    config = default_config()
    registry = in_tree_registry()
    registry["DefaultBinder"] = InMemoryBinder
    available_plugins(config, registry)
    cache = Cache()
    for i in range(num_nodes):
        cache.add_node(make_node(i))
    handle = FrameworkHandle("pyscheduler", None, cache.snapshot, lambda *a: None)  # type: ignore[arg-type]
    fwk = Framework(config.profiles[0], registry, handle)
    queue = SchedulingQueue(sort_key=fwk.sort_key, policy=ProfilesPolicy({"pyscheduler": fwk}))
    pods = {}
    for i in range(num_pods):
        pod = make_pod(i)
        pods[pod.uid] = pod
        queue.add(pod)

    async def patch(*args: Any) -> None:
        return None

    scheduler = Scheduler(
        cache=cache,
        queue=queue,
        frameworks={"pyscheduler": fwk},
        events=_NoEvents(),
        patch_status=patch,
        current_pod=lambda pod: pods.get(pod.uid),
    )
    cycle_times: list[float] = []
    start = time.perf_counter()
    for _ in range(num_pods):
        info = await queue.pop()
        await scheduler._binding_slots.acquire()
        t0 = time.perf_counter()
        scheduler.schedule_one(info)
        cycle_times.append(time.perf_counter() - t0)
        await asyncio.sleep(0)
    await scheduler.wait_for_bindings(60)
    elapsed = time.perf_counter() - start
    cycle_times.sort()
    return {
        "nodes": num_nodes,
        "pods": num_pods,
        "decisions_per_s": num_pods / elapsed,
        "p50_ms": statistics.median(cycle_times) * 1000,
        "p99_ms": cycle_times[int(len(cycle_times) * 0.99)] * 1000,
        "bound": cache.assumed_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods", type=int, default=10000)
    args = parser.parse_args()
    for num_nodes in args.nodes:
        result = asyncio.run(run(num_nodes, args.pods))
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{result['nodes']:>6} nodes {result['pods']:>6} pods: "
            f"{result['decisions_per_s']:8.0f} decisions/s, "
            f"cycle p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms, peak RSS {rss_mb:.0f} MiB"
        )


if __name__ == "__main__":
    main()
