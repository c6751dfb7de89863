"""A preemption workload, in process: nodes full of low-priority pods, then high-priority pods.

    python -m bench.preemption [--nodes 500 5000] [--pods 200] [--per-node 4] [--protected 0 0.9]

Every node (4 CPUs) runs ``--per-node`` pods of one CPU share each, with priorities 0..3 (on a
``--protected`` share of the nodes, 2000: nothing there may be evicted, as on nodes running only
system-critical pods, so the dry run must look further to find its candidates); then
``--pods`` pods of priority 1000 asking for 2 CPUs are scheduled with the default profile. Each
fits nowhere, so DefaultPreemption picks victims and nominates a node; the victims' deletion
reaches the cache through an in-memory API (as the pod informer would deliver it), and a
second attempt binds each preemptor. Prints the cost of a cycle that ends in preemption, the
cost of the follow-up cycle, victims per preemption and the wall time; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from bench.common import InMemoryBinder, make_node, make_pod
from scheduler.api import Pod
from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
from scheduler.cache import Cache
from scheduler.config import default_config
from scheduler.eventhandlers import ASSIGNED_POD_DELETE
from scheduler.framework import ApiResponse
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import available_plugins
from scheduler.queue import SchedulingQueue


class InMemoryApi:
    """Answers the preemption's PATCH and DELETE calls; a DELETE removes the pod from the cache."""

    def __init__(self) -> None:
        self.cache: Cache | None = None
        self.queue: SchedulingQueue | None = None
        self.pods: dict[str, Pod] = {}
        self.deleted = 0

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        if method == "DELETE":
            pod = self.pods.pop(path.rsplit("/", 1)[1], None)
            if pod is None or self.cache is None:
                return ApiResponse(404, {"kind": "Status", "reason": "NotFound"})
            self.cache.remove_pod(pod)
            if self.queue is not None:
                self.queue.on_cluster_event(ASSIGNED_POD_DELETE, pod, None)
            self.deleted += 1
        return ApiResponse(200, {})


class _Empty:
    def get(self, key: str) -> None:
        return None

    def list(self) -> list[Any]:
        return []


def _ms(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(int(len(values) * q), len(values) - 1)] * 1000 if values else 0.0


async def run(num_nodes: int, num_pods: int, per_node: int, protected: float = 0.0) -> str:
    config = default_config()
    registry = in_tree_registry()
    registry["DefaultBinder"] = InMemoryBinder
    available_plugins(config, registry)
    api = InMemoryApi()
    pending: dict[str, Pod] = {}
    parts = build_scheduler(
        config,
        registry,
        api,
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda pod: pending.get(pod.uid),
        listers={"poddisruptionbudgets": _Empty(), "pods": _Empty()},  # type: ignore[dict-item]
    )
    cache, queue, scheduler = parts.cache, parts.queue, parts.scheduler
    api.cache, api.queue = cache, queue
    fwk = parts.frameworks["pyscheduler"]
    for i in range(num_nodes):
        node = make_node(i)
        cache.add_node(node)
        shielded = int((i + 1) * protected) > int(i * protected)  # evenly spread
        for j in range(per_node):
            pod = make_pod(
                f"low-{i:05d}-{j}",
                {"app": "low"},
                node_name=node.name,
                cpu="1",
                memory="1Gi",
                priority=2000 if shielded else j % 4,
            )
            cache.add_pod(pod)
            api.pods[pod.name] = pod
    preemption = fwk.plugins["DefaultPreemption"]
    preemptors = [
        make_pod(f"urgent-{i:04d}", {"app": "urgent"}, cpu="2", memory="1Gi", priority=1000)
        for i in range(num_pods)
    ]
    for pod in preemptors:
        pending[pod.uid] = pod
        queue.add(pod)

    async def one_pass() -> list[float]:
        times = []
        for _ in range(len(pending)):
            info = await asyncio.wait_for(queue.pop(), 5)
            t0 = time.perf_counter()
            await scheduler.attempt(info)
            times.append(time.perf_counter() - t0)
            await asyncio.sleep(0)
        return times

    start = time.perf_counter()
    deleted_before = api.deleted
    first = await one_pass()
    await preemption.executor.wait()
    nominated = sum(1 for node in queue.nominated_node_names() for _ in queue.nominated_pods_for_node(node))
    queue.activate(list(pending.values()))
    second = await one_pass()
    await scheduler.wait_for_bindings(60)
    elapsed = time.perf_counter() - start
    bound = sum(1 for pod in preemptors if cache.is_assumed(pod.uid) or _placed(cache, pod))
    per_preemption = (api.deleted - deleted_before) / nominated if nominated else 0.0
    return (
        f"{num_nodes:>6} nodes x {per_node} low pods ({protected:.0%} protected), {num_pods} preemptors: "
        f"preempting cycle p50 {statistics.median(first) * 1000:.1f} ms p99 {_ms(first, 0.99):.1f} ms; "
        f"follow-up cycle p50 {statistics.median(second) * 1000:.2f} ms; "
        f"{nominated} nominated, {per_preemption:.2f} victims each, {bound} bound; "
        f"wall {elapsed:.2f} s"
    )


def _placed(cache: Cache, pod: Pod) -> bool:
    return any(pod.uid in info.pods for info in cache.snapshot().node_infos())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--per-node", type=int, default=4)
    parser.add_argument("--protected", type=float, nargs="+", default=[0.0, 0.9])
    args = parser.parse_args()
    for num_nodes in args.nodes:
        for protected in args.protected:
            print(asyncio.run(run(num_nodes, args.pods, args.per_node, protected)), flush=True)


if __name__ == "__main__":
    main()
