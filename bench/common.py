"""The in-process harness the decision benchmarks share: cache + queue + framework, binder in memory.

Nodes carry hostname and zone labels (three zones, round-robin); existing pods can be placed in
the cache directly (as the informer would), then the measured pods go through the real
scheduling cycle one at a time. Figures are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import Node, Pod
from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
from scheduler.config import PluginRef, SchedulerConfiguration, default_config
from scheduler.features import DEFAULT_FEATURES, FeatureGates
from scheduler.framework import ApiClient, CycleState, ObjectLister, Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import available_plugins
from scheduler.schedule_one import StatusSink

ZONES = ("zone-a", "zone-b", "zone-c")


class NoApi:
    """The benchmarks run without an API server: the binder works in memory."""

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        raise RuntimeError(f"no API server in the benchmark ({method} {path})")


class InMemoryBinder:
    """Stands in for DefaultBinder: a bind costs nothing, so the figures are the decisions' own."""

    name = "DefaultBinder"

    def __init__(self, args: Any, handle: Any) -> None:
        self.bound = 0

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.bound += 1
        return None


def make_node(i: int, cpu: str = "4", memory: str = "16Gi", pods: int = 110) -> Node:
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
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)}},
        }
    )


def make_pod(
    name: str,
    labels: Mapping[str, str],
    *,
    node_name: str = "",
    cpu: str = "100m",
    memory: str = "128Mi",
    **spec: Any,
) -> Pod:
    """A pod of ``pyscheduler`` in ``default``; ``spec`` adds PodSpec fields (camelCase)."""
    body: dict[str, Any] = {
        "schedulerName": "pyscheduler",
        "containers": [
            {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
        **spec,
    }
    if node_name:
        body["nodeName"] = node_name
    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": dict(labels)},
            "spec": body,
        }
    )


@dataclass(slots=True)
class Result:
    nodes: int
    pods: int
    decisions_per_s: float
    p50_ms: float
    p99_ms: float
    bound: int

    def line(self, label: str = "") -> str:
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        prefix = f"{label:<22}" if label else ""
        return (
            f"{prefix}{self.nodes:>6} nodes {self.pods:>6} pods: "
            f"{self.decisions_per_s:8.0f} decisions/s, "
            f"cycle p50 {self.p50_ms:.2f} ms, p99 {self.p99_ms:.2f} ms, peak RSS {rss_mb:.0f} MiB"
        )


class Harness:
    """A scheduler for the default profile over ``num_nodes`` simulated nodes, without an API server.

    By default the binder works in memory and nothing else talks to an API. A benchmark that
    plays the API server and the informers itself (``bench.scheduler_perf``) passes ``client``
    (what the real DefaultBinder, the preemption and ``status`` talk to), ``listers``,
    ``current_pod`` (the informer's copy of a pod), ``status`` (where pod status writes go) and
    ``binder=None`` (keep the real DefaultBinder).
    """

    def __init__(
        self,
        num_nodes: int,
        node_factory: Any = make_node,
        *,
        extra_plugins: Iterable[Any] = (),
        percentage_of_nodes_to_score: int | None = None,
        config: SchedulerConfiguration | None = None,
        features: FeatureGates = DEFAULT_FEATURES,
        client: ApiClient | None = None,
        listers: Mapping[str, ObjectLister] | None = None,
        current_pod: Callable[[Pod], Pod | None] | None = None,
        status: StatusSink | None = None,
        binder: Callable[[Any, Any], Any] | None = InMemoryBinder,
    ) -> None:
        config = config or default_config()
        registry = in_tree_registry()
        if binder is not None:
            registry["DefaultBinder"] = binder
        for plugin in extra_plugins:  # enabled in the profile after the defaults, weight 1
            registry[plugin.name] = plugin
            config.profiles[0].plugins.multi_point.enabled.append(PluginRef(plugin.name))
        if percentage_of_nodes_to_score is not None:
            config.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        available_plugins(config, registry)
        self.num_nodes = num_nodes
        self._pods: dict[str, Pod] = {}
        parts = build_scheduler(
            config,
            registry,
            client if client is not None else NoApi(),
            events=DiscardEvents(),
            status=status if status is not None else DiscardStatus(),
            current_pod=current_pod if current_pod is not None else (lambda pod: self._pods.get(pod.uid)),
            listers=listers,
            features=features,
        )
        self.cache, self.queue, self.scheduler = parts.cache, parts.queue, parts.scheduler
        self.pod_events, self.node_events = parts.pod_events, parts.node_events
        self.framework = parts.frameworks["pyscheduler"]
        for i in range(num_nodes):
            self.cache.add_node(node_factory(i))

    def place(self, pods: Iterable[Pod]) -> None:
        """Existing pods, bound already (``nodeName`` set): straight into the cache."""
        for pod in pods:
            self.cache.add_pod(pod)

    async def schedule(self, pods: Iterable[Pod]) -> Result:
        """Queue ``pods`` and run one scheduling cycle per pod, timing each; bindings run in memory."""
        count = 0
        for pod in pods:
            self._pods[pod.uid] = pod
            self.queue.add(pod)
            count += 1
        assumed_before = self.cache.assumed_count()
        cycle_times: list[float] = []
        start = time.perf_counter()
        for _ in range(count):
            info = await self.queue.pop()
            t0 = time.perf_counter()
            await self.scheduler.attempt(info)
            cycle_times.append(time.perf_counter() - t0)
            await asyncio.sleep(0)
        await self.scheduler.wait_for_bindings(60)
        elapsed = time.perf_counter() - start
        cycle_times.sort()
        return Result(
            nodes=self.num_nodes,
            pods=count,
            decisions_per_s=count / elapsed if elapsed else float("inf"),
            p50_ms=statistics.median(cycle_times) * 1000 if cycle_times else 0.0,
            p99_ms=cycle_times[int(len(cycle_times) * 0.99)] * 1000 if cycle_times else 0.0,
            bound=self.cache.assumed_count() - assumed_before,
        )


async def until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> None:
    """Poll ``condition`` every ``interval`` seconds; TimeoutError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        await asyncio.sleep(interval)


def bound_on_endpoint(sim: Any, name: str, namespace: str = "default") -> bool:
    """Has the local endpoint's pod ``namespace/name`` a node?"""
    return bool(((sim.store.get("pods", namespace, name) or {}).get("spec") or {}).get("nodeName"))
