"""The whole scheduler in process on virtual time, against an in-memory API whose watch events
reach it only when the test says: what the property tests and the in-flight regression tests run.

``World`` builds the scheduler as the app does (``build_scheduler``: cache, queue, profiles, event
handlers), with a FakeClock and ``InMemoryCluster(hold=True)``; the test creates objects, lets
the scheduler pop and try pods, delivers watch events in any order, fails bindings and moves time.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from scheduler.api import Pod
from scheduler.app import PLUGIN_RESOURCES
from scheduler.build import SchedulerParts, build_scheduler
from scheduler.config import SchedulerConfiguration
from scheduler.config.load import parse_config
from scheduler.eventhandlers import ResourceEvents
from scheduler.features import DEFAULT_FEATURES, FeatureGates
from scheduler.framework import QueuedPodInfo
from scheduler.plugins.coscheduling import POD_GROUP_LABEL, CoschedulingArgs
from scheduler.plugins.coscheduling import PODGROUPS as COSCHEDULING_GROUPS
from scheduler.plugins.gangscheduling import PODGROUPS as WORKLOAD_GROUPS
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import available_plugins
from scheduler.testing import FakeClock
from scheduler.testing.inmemory import InMemoryCluster

SCHEDULER = "pyscheduler"
GANG_GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
# the other kinds the app watches: lister name -> (collection path, cluster event resource or "")
WATCHED = {
    **PLUGIN_RESOURCES,
    COSCHEDULING_GROUPS: (f"/apis/{COSCHEDULING_GROUPS}", COSCHEDULING_GROUPS),
    WORKLOAD_GROUPS: (f"/apis/{WORKLOAD_GROUPS}", WORKLOAD_GROUPS),
}


def coscheduling_config() -> SchedulerConfiguration:
    """scheduler-plugins' documented profile: Coscheduling at every point, PrioritySort off."""
    profile = {
        "schedulerName": SCHEDULER,
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
        },
    }
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    return parse_config(config, {"Coscheduling": CoschedulingArgs})


class ApiStatus:
    """Pod status writes sent to the in-memory API (as the APIDispatcher's status patch would be)."""

    def __init__(self, cluster: InMemoryCluster) -> None:
        self._cluster = cluster
        self._tasks: set[asyncio.Task[Any]] = set()

    def submit(self, pod: Pod, condition: dict[str, Any] | None, nominated: str | None) -> None:
        task = asyncio.get_running_loop().create_task(self.write_now(pod, condition, nominated))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def write_now(self, pod: Pod, condition: dict[str, Any] | None, nominated: str | None) -> None:
        status: dict[str, Any] = {}
        if condition is not None:
            status["conditions"] = [condition]
        if nominated is not None:
            status["nominatedNodeName"] = nominated
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        await self._cluster.request("PATCH", path, {"status": status})


class NoEvents:
    def record(self, *args: Any) -> None:
        pass


def node(name: str, cpu: int) -> dict[str, Any]:
    capacity = {"cpu": str(cpu), "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    cpu: int,
    *,
    priority: int = 0,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {
            "schedulerName": SCHEDULER,
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu), "memory": "1Mi"}}}],
            **spec,
        },
    }


def coscheduling_group(name: str, min_member: int, timeout: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout},
    }


def workload_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def coscheduling_member(name: str, group: str, cpu: int) -> dict[str, Any]:
    return pod(name, cpu, labels={POD_GROUP_LABEL: group})


def workload_member(name: str, group: str, cpu: int) -> dict[str, Any]:
    return pod(name, cpu, schedulingGroup={"podGroupName": group})


@dataclass(frozen=True)
class Free:
    """What a node has left, by the API's bound pods (not the scheduler's view)."""

    node: str
    cpu: float


class World:
    """One scheduler, one in-memory API, one event loop, one virtual clock."""

    def __init__(
        self, config: SchedulerConfiguration, *, features: FeatureGates = DEFAULT_FEATURES, seed: int = 0
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        self.cluster = InMemoryCluster({name: path for name, (path, _) in WATCHED.items()}, hold=True)
        self.attempts = 0  # scheduling cycles run
        registry = in_tree_registry()
        available_plugins(config, registry)
        self.parts: SchedulerParts = build_scheduler(
            config,
            registry,
            self.cluster,
            events=NoEvents(),
            status=ApiStatus(self.cluster),
            current_pod=self.cluster.current,
            listers=self.cluster.listers,
            clock=self.clock,
            rng=random.Random(seed),
            features=features,
            max_in_unschedulable=math.inf,  # no five-minute flush makes up for a lost event
        )
        queue = self.parts.queue
        self.cluster.connect(
            self.parts.pod_events,
            self.parts.node_events,
            {name: ResourceEvents(queue, resource) for name, (_, resource) in WATCHED.items() if resource},
        )

    @property
    def queue(self) -> Any:
        return self.parts.queue

    def run(self, step: Any) -> Any:
        return self.loop.run_until_complete(step)

    def close(self) -> None:
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()

    # ------------------------------------------------------------------ the scheduler's side

    async def settle(self) -> None:
        """Let binding tasks and status writes run until they wait for something."""
        for _ in range(30):
            await asyncio.sleep(0)

    async def pop_ready(self) -> QueuedPodInfo | None:
        """The pod the scheduling loop would pop now; None when it would wait."""
        popping = asyncio.ensure_future(self.queue.pop())
        await asyncio.sleep(0)
        if popping.done():
            info: QueuedPodInfo | None = popping.result()
            return info
        popping.cancel()
        return None

    async def schedule(self, limit: int) -> int:
        """Up to ``limit`` scheduling cycles, as ``Scheduler.run`` runs them (one turn of the event
        loop in between: binding tasks move on a step per cycle); how many ran."""
        ran = 0
        while ran < limit:
            info = await self.pop_ready()
            if info is None:
                break
            await self.parts.scheduler.attempt(info)
            await asyncio.sleep(0)
            ran += 1
            self.attempts += 1
        await self.settle()
        return ran

    async def advance(self, seconds: float) -> None:
        """Move time on: Permit timeouts fire, backoffs end (the queue's flusher runs)."""
        await self.clock.advance(seconds)
        self.queue.flush()
        await self.settle()

    async def quiesce(self, horizon: float, budget: int, step: float = 1.0) -> int:
        """Nothing changes any more (no fault either): deliver everything, schedule whatever is
        ready, let time pass for ``horizon`` seconds; stop early past ``budget`` scheduling
        cycles (a scheduler that never goes idle). Returns the cycles run."""
        self.cluster.refused_bindings = 0
        start, end = self.attempts, self.clock.now() + horizon
        while self.clock.now() < end and self.attempts - start <= budget:
            for _ in range(20):
                delivered = self.cluster.deliver()
                ran = await self.schedule(50)
                assert self.overcommitted() == [], "overcommitted while quiescing"
                if not delivered and not ran and not self.cluster.undelivered:
                    break
            await self.advance(step)
        self.cluster.deliver()
        await self.settle()
        return self.attempts - start

    # ------------------------------------------------------------------ what is true now

    def assumed(self) -> list[str]:
        return [p.uid for p in self.cluster.seen_pods.values() if self.parts.cache.is_assumed(p.uid)]

    def waiting(self) -> list[Pod]:
        return [w.pod for fwk in self.parts.frameworks.values() for w in fwk.waiting_pods]

    def bound(self) -> Iterator[Pod]:
        return (p for p in self.cluster.pods.values() if p.node_name)

    def pending(self) -> Iterator[Pod]:
        return (p for p in self.cluster.pods.values() if not p.node_name)

    def free(self) -> list[Free]:
        used: dict[str, float] = {}
        for p in self.bound():
            used[p.node_name] = used.get(p.node_name, 0.0) + p.requests.milli_cpu / 1000
        return [
            Free(name, n.allocatable.milli_cpu / 1000 - used.get(name, 0.0))
            for name, n in self.cluster.nodes.items()
        ]

    def overcommitted(self) -> list[str]:
        """Nodes whose pods (bound or assumed, as the cache counts them) ask more than they have;
        and nodes the API has bound more to than they hold."""
        found = []
        for info in self.parts.cache.snapshot().node_infos():
            if info.requested.milli_cpu > info.node.allocatable.milli_cpu:
                found.append(f"{info.name} in the cache")
        found += [f"{f.node} in the API" for f in self.free() if f.cpu < 0]
        return found
