"""Upstream's scheduler_perf workloads, in process: the measured pods' pods/s next to upstream's threshold.

    python -m bench.scheduler_perf [--nodes 5000] [--workloads NAME ...] [--scale 1.0]

Each workload has the shape kube-scheduler v1.36.2's test/integration/scheduler_perf gives it in
its performance-config.yaml files (node template and labels, init pods, measured pods and their
templates, churn ops), at the 5000-node variant that upstream's CI runs with a ``threshold:``;
our feature gates are v1.36's defaults, so the variant quoted is the one with the same gates
(queueing hints on, SchedulerAsyncAPICalls off):

- SchedulingBasic: misc/, SchedulingBasic/5000Nodes_10000Pods_QueueingHintsEnabled: 5000 nodes,
  1000 init + 10000 measured pod-default pods (100m, 500Mi); threshold 270.
- NodeAffinity: affinity/, SchedulingNodeAffinity/5000Nodes_10000Pods_QueueingHintsEnabled: nodes
  labelled zone=zone1, 5000 init + 10000 measured pods requiring zone In (zone1, zone2); 220.
- TopologySpreading: topology_spreading/, TopologySpreading/5000Nodes_5000Pods_QueueingHintsEnabled:
  zones moon-1..3 round-robin, 5000 init pod-default, 5000 measured pods spreading color=blue
  over zones (maxSkew 5, DoNotSchedule); 85.
- PodAntiAffinity: affinity/, SchedulingPodAntiAffinity/5000Nodes_2000Pods_QueueingHintsEnabled:
  1000 init (sched-0) + 2000 measured (sched-1) pods with required anti-affinity to color=green
  on kubernetes.io/hostname over both namespaces; 60.
- PreferredPodAffinity: affinity/, SchedulingPreferredPodAffinity/5000Nodes_5000Pods_QueueingHintsEnabled:
  5000 init (sched-0) + 5000 measured (sched-1) pods preferring (weight 1) hosts with color=red; 90.
- Preemption: misc/, PreemptionAsync/5000Nodes_QueueingHintsEnabled: 4 low-priority pods of 900m
  per node (3.6 of 4 CPUs), a churn op creating a priority-10 pod of 3 CPUs every 200 ms (each
  must preempt 3 victims), 5000 measured pod-default pods; 160. (PreemptionBasic has no
  5000-node variant and no threshold.)
- Unschedulable: misc/, Unschedulable/5kNodes/100Init/10kPods_QueueingHintsEnabled: 100 init pods,
  a churn op creating a priority-10 pod of 9 CPUs (fits nowhere, preemption cannot help) every
  200 ms, 10000 measured pod-default pods; 170.
- SchedulingWithMixedChurn: misc/, SchedulingWithMixedChurn/5000Nodes_10000Pods_QueueingHintsEnabled:
  a churn op that every second alternately creates and deletes a node of capacity pods=0, a
  priority-10 pod of 9 CPUs and a Service; 10000 measured pod-default pods; 265.

How a run maps to upstream's:

- The scheduler is the real one (cache, queue with its backoff flusher, framework with the default
  profile, the DefaultBinder, DefaultPreemption, the APIDispatcher writing pod status), on one
  asyncio loop. The API server and the informers are played by ``Cluster``: objects live in dicts
  and every change (a create, the Binding, a status patch, a delete) reaches the scheduler
  through the real informer handlers (``scheduler.eventhandlers.PodEvents`` / ``NodeEvents``) on
  the next turn of the loop, as a watch event would. A preemption victim is patched
  (DisruptionTarget) and DELETEd through that API, and its deletion reaches the cache as the
  informer's delete does (``cache.remove_pod`` plus the AssignedPodDelete event that requeues the
  preemptor).
- createNodes: node-default (4 CPUs, 32Gi, 110 pods) named ``scheduler-perf-NNNNN`` with its
  kubernetes.io/hostname label, plus labelNodePrepareStrategy's label round-robin.
- createPods: an op's pods are created at once and the op waits until all are scheduled, as
  upstream's default; init pods are scheduled by the scheduler, unmeasured. Except Preemption's
  init pods, created already bound, 4 per node: 20000 pods of 900m fit on 5000 4-CPU nodes only
  as 4 per node, so that is the state upstream's init op ends in, reached in a fraction of the
  time.
- churn: a task on a wall-clock ticker, as upstream's goroutine: mode create makes one object per
  template per tick, mode recreate (number 1) creates on one tick and deletes on the next.
- pods/s: upstream's SchedulingThroughput average: the measured namespace is sampled every second
  (the first sample skipped, empty intervals merged into the next), as its throughputCollector;
  the threshold is compared to that average. A run too short for two samples prints the total
  over the elapsed time instead, marked ``~``.
- cycle p50/p99: every scheduling attempt during the measured op (churned pods' included), as
  upstream's scheduler_scheduling_attempt_duration_seconds covers every attempt.

What differs: no real API server (no request latency, no client QPS, no watch serialisation);
Events are dropped; pods carry ``schedulerName: pyscheduler``; one process on one core against
upstream's many-core CI machines. ``--scale`` multiplies every pod count (not Preemption's 4 pods
per node, which make preemption necessary); ``--nodes`` changes the node count only. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import resource
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.common import Harness
from scheduler.api import Pod
from scheduler.apidispatcher import RELEVANCES, APIDispatcher, PodStatusUpdates
from scheduler.app import PLUGIN_RESOURCES
from scheduler.testing.inmemory import InMemoryCluster

SCHEDULER = "pyscheduler"
PAUSE = "registry.k8s.io/pause:3.10.2"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
UPSTREAM_NODES = 5000  # the node count of every variant quoted here
NODE_CAPACITY = {"pods": "110", "cpu": "4", "memory": "32Gi"}  # templates/node-default.yaml
NODE_PREFIX = "scheduler-perf-"
THRESHOLD_NOTE = (
    "Thresholds are upstream's `threshold:` (performance-config.yaml, SchedulingThroughput average, "
    "v1.36.2), met by upstream's CI on many-core machines; this runs on one core of this machine, "
    "so the comparison is indicative."
)

Obj = dict[str, Any]


# ---------------------------------------------------------------------------- templates


def _container(cpu: str, memory: str = "500Mi", *, limits: bool = True) -> Obj:
    requests = {"cpu": cpu, "memory": memory}
    resources: Obj = {"requests": requests, **({"limits": dict(requests)} if limits else {})}
    return {"name": "pause", "image": PAUSE, "ports": [{"containerPort": 80}], "resources": resources}


def _pod(
    name: str, namespace: str, container: Obj, labels: Mapping[str, str] | None = None, **spec: Any
) -> Obj:
    metadata: Obj = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"schedulerName": SCHEDULER, **spec, "containers": [container]},
    }


def _term(color: str) -> Obj:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": HOSTNAME,
        "namespaces": ["sched-1", "sched-0"],
    }


def pod_default(name: str, namespace: str) -> Obj:
    """templates/pod-default.yaml (and MakePodSpec, the template of ops without one)."""
    return _pod(name, namespace, _container("100m"))


def pod_with_node_affinity(name: str, namespace: str) -> Obj:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}
        ]
    }
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return _pod(name, namespace, _container("100m"), affinity=affinity)


def pod_with_topology_spreading(name: str, namespace: str) -> Obj:
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"color": "blue"}},
    }
    return _pod(
        name, namespace, _container("100m"), {"color": "blue"}, topologySpreadConstraints=[constraint]
    )


def pod_with_pod_anti_affinity(name: str, namespace: str) -> Obj:
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("green")]}}
    return _pod(name, namespace, _container("100m"), {"color": "green"}, affinity=affinity)


def pod_with_preferred_pod_affinity(name: str, namespace: str) -> Obj:
    preferred = [{"podAffinityTerm": _term("red"), "weight": 1}]
    affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    return _pod(name, namespace, _container("100m"), {"color": "red"}, affinity=affinity)


def pod_low_priority(name: str, namespace: str) -> Obj:
    return _pod(name, namespace, _container("900m"), terminationGracePeriodSeconds=0)


def pod_high_priority(name: str, namespace: str) -> Obj:
    return _pod(name, namespace, _container("3000m"), priority=10)


def pod_high_priority_large_cpu(name: str, namespace: str) -> Obj:
    return _pod(name, namespace, _container("9", limits=False), priority=10)


@dataclass(frozen=True, slots=True)
class PodTemplate:
    prefix: str  # upstream's generateName
    build: Callable[[str, str], Obj]  # (name, namespace) -> the Pod's API JSON


POD_TEMPLATES: dict[str, PodTemplate] = {
    "pod-default": PodTemplate("pod-", pod_default),
    "pod-with-node-affinity": PodTemplate("node-affinity-", pod_with_node_affinity),
    "pod-with-topology-spreading": PodTemplate("spreading-pod-", pod_with_topology_spreading),
    "pod-with-pod-anti-affinity": PodTemplate("anti-affinity-pod-", pod_with_pod_anti_affinity),
    "pod-with-preferred-pod-affinity": PodTemplate(
        "preferred-affinity-pod-", pod_with_preferred_pod_affinity
    ),
    "pod-low-priority": PodTemplate("pod-", pod_low_priority),
    "pod-high-priority": PodTemplate("pod-high-priority-", pod_high_priority),
    "pod-high-priority-large-cpu": PodTemplate("pod-h-", pod_high_priority_large_cpu),
}


def node_name(index: int) -> str:
    return f"{NODE_PREFIX}{index:05d}"


def node_default(name: str, labels: Mapping[str, str]) -> Obj:
    """templates/node-default.yaml as the node preparer creates it: the hostname label added."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **labels}},
        "spec": {},
        "status": {
            "capacity": dict(NODE_CAPACITY),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def churn_node(name: str) -> Obj:
    """templates/churn/node-default.yaml: nothing fits on it (capacity pods=0)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "capacity": {"pods": "0"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def churn_service(name: str, namespace: str) -> Obj:
    """templates/churn/service-default.yaml."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"app": "foo"},
            "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}],
        },
    }


# ---------------------------------------------------------------------------- workloads


@dataclass(frozen=True, slots=True)
class CreatePods:
    count: int  # upstream's, at 5000 nodes (before --scale)
    template: str
    namespace: str
    measure: bool = False
    per_node: int = 0  # > 0: per_node pods on every node, created bound (Preemption's init pods)

    def size(self, nodes: int, scale: float) -> int:
        return self.per_node * nodes if self.per_node else max(1, round(self.count * scale))


@dataclass(frozen=True, slots=True)
class Churn:
    mode: str  # "create" | "recreate"
    templates: tuple[str, ...]  # "node", "service" or a pod template
    interval_ms: int
    namespace: str
    number: int = 0  # create: how many ticks (0: until the end); recreate: objects per template


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    upstream: str  # file: test case/variant
    threshold: float  # pods/s
    ops: tuple[CreatePods | Churn, ...]
    zones: tuple[str, ...] = ()  # labelNodePrepareStrategy on topology.kubernetes.io/zone, round-robin

    @property
    def init(self) -> CreatePods | None:
        return next((op for op in self.ops if isinstance(op, CreatePods) and not op.measure), None)

    @property
    def measured(self) -> CreatePods:
        return next(op for op in self.ops if isinstance(op, CreatePods) and op.measure)

    @property
    def churn(self) -> Churn | None:
        return next((op for op in self.ops if isinstance(op, Churn)), None)

    @property
    def namespaces(self) -> list[str]:
        return [op.namespace for op in self.ops]


# Namespaces as upstream names them: an op's own, else namespace-<index of the op>.
WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "SchedulingBasic",
            "misc/performance-config.yaml: SchedulingBasic/5000Nodes_10000Pods_QueueingHintsEnabled",
            270,
            (
                CreatePods(1000, "pod-default", "namespace-1"),
                CreatePods(10000, "pod-default", "namespace-2", measure=True),
            ),
        ),
        Workload(
            "NodeAffinity",
            "affinity/performance-config.yaml: "
            "SchedulingNodeAffinity/5000Nodes_10000Pods_QueueingHintsEnabled",
            220,
            (
                CreatePods(5000, "pod-with-node-affinity", "namespace-1"),
                CreatePods(10000, "pod-with-node-affinity", "namespace-2", measure=True),
            ),
            zones=("zone1",),
        ),
        Workload(
            "TopologySpreading",
            "topology_spreading/performance-config.yaml: "
            "TopologySpreading/5000Nodes_5000Pods_QueueingHintsEnabled",
            85,
            (
                CreatePods(5000, "pod-default", "namespace-1"),
                CreatePods(5000, "pod-with-topology-spreading", "namespace-2", measure=True),
            ),
            zones=("moon-1", "moon-2", "moon-3"),
        ),
        Workload(
            "PodAntiAffinity",
            "affinity/performance-config.yaml: "
            "SchedulingPodAntiAffinity/5000Nodes_2000Pods_QueueingHintsEnabled",
            60,
            (
                CreatePods(1000, "pod-with-pod-anti-affinity", "sched-0"),
                CreatePods(2000, "pod-with-pod-anti-affinity", "sched-1", measure=True),
            ),
        ),
        Workload(
            "PreferredPodAffinity",
            "affinity/performance-config.yaml: "
            "SchedulingPreferredPodAffinity/5000Nodes_5000Pods_QueueingHintsEnabled",
            90,
            (
                CreatePods(5000, "pod-with-preferred-pod-affinity", "sched-0"),
                CreatePods(5000, "pod-with-preferred-pod-affinity", "sched-1", measure=True),
            ),
        ),
        Workload(
            "Preemption",
            "misc/performance-config.yaml: PreemptionAsync/5000Nodes_QueueingHintsEnabled",
            160,
            (
                CreatePods(20000, "pod-low-priority", "namespace-1", per_node=4),
                Churn("create", ("pod-high-priority",), 200, "namespace-2"),
                CreatePods(5000, "pod-default", "namespace-3", measure=True),
            ),
        ),
        Workload(
            "Unschedulable",
            "misc/performance-config.yaml: Unschedulable/5kNodes/100Init/10kPods_QueueingHintsEnabled",
            170,
            (
                CreatePods(100, "pod-default", "namespace-1"),
                Churn("create", ("pod-high-priority-large-cpu",), 200, "namespace-2"),
                CreatePods(10000, "pod-default", "namespace-3", measure=True),
            ),
        ),
        Workload(
            "SchedulingWithMixedChurn",
            "misc/performance-config.yaml: SchedulingWithMixedChurn/5000Nodes_10000Pods_QueueingHintsEnabled",
            265,
            (
                Churn(
                    "recreate",
                    ("node", "pod-high-priority-large-cpu", "service"),
                    1000,
                    "namespace-1",
                    number=1,
                ),
                CreatePods(10000, "pod-default", "namespace-2", measure=True),
            ),
        ),
    )
}


# ---------------------------------------------------------------------------- API server + informers


class Cluster(InMemoryCluster):
    """The API server and the informers in memory (``scheduler.testing.InMemoryCluster``), with
    upstream's throughputCollector count: a pod counts once, when the informers see it get a node."""

    def __init__(self) -> None:
        super().__init__({plural: path for plural, (path, _) in PLUGIN_RESOURCES.items()})
        self.scheduled: Counter[str] = Counter()
        self.last_scheduled: dict[str, float] = {}  # by namespace: when the last one got a node
        self.on_pod_seen = self._count

    async def synced(self) -> None:
        """Until every change made so far has been delivered."""
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    def _count(self, old: Pod | None, new: Pod) -> None:
        if new.node_name and (old is None or not old.node_name):
            self.scheduled[new.namespace] += 1
            self.last_scheduled[new.namespace] = time.perf_counter()


# ---------------------------------------------------------------------------- measuring


class ThroughputCollector:
    """Upstream's throughputCollector: every second, the pods scheduled since the last sample.

    The first sample is skipped (it starts independently of the pods' creation); an interval in
    which nothing was scheduled records nothing and its successor's rate is recorded once for
    each interval it covers. Ticks a busy loop could not deliver are dropped, as a Go ticker's.
    """

    def __init__(self, scheduled: Callable[[], int], interval: float = 1.0) -> None:
        self._scheduled = scheduled
        self._interval = interval
        self.samples: list[float] = []

    async def run(self) -> None:
        started, skipped, last_count, last_time = False, 0, 0, 0.0
        next_tick = time.perf_counter() + self._interval
        while True:
            await asyncio.sleep(max(0.0, next_tick - time.perf_counter()))
            now = time.perf_counter()
            while next_tick <= now:
                next_tick += self._interval
            scheduled = self._scheduled()
            if scheduled == 0:
                continue
            if not started:
                started, last_count, last_time = True, scheduled, now
                continue
            if scheduled == last_count:
                skipped += 1
                continue
            rate = (scheduled - last_count) / (now - last_time)
            self.samples.extend([rate] * (skipped + 1))
            skipped, last_count, last_time = 0, scheduled, now

    @property
    def average(self) -> float | None:
        return sum(self.samples) / len(self.samples) if self.samples else None


@dataclass(slots=True)
class Report:
    workload: Workload
    nodes: int
    init_pods: int
    measured: int
    scheduled: int  # measured pods the informer saw scheduled
    throughput: float  # pods/s: SchedulingThroughput average, else total / elapsed
    samples: int  # 1-second throughput samples (0: the total / elapsed figure)
    seconds: float  # the measured op, from the first pod's creation to the last one scheduled
    attempts: int
    p50_ms: float
    p99_ms: float
    victims: int = 0  # pods the scheduler deleted (preemption)
    churn_created: Counter[str] = field(default_factory=Counter)  # by template
    churn_pods_bound: int = 0
    churn_pods_pending: int = 0  # churned pods that exist and have no node
    gave_up: bool = False  # no measured pod was scheduled for stall_seconds
    cluster: Cluster | None = field(default=None, repr=False)  # the end state (for tests)

    def line(self) -> str:
        w = self.workload
        rate = f"{self.throughput:7.1f}" if self.samples else f"~{self.throughput:6.1f}"
        samples = f"{self.samples} samples" if self.samples else "total/elapsed"
        text = (
            f"{w.name:<25}{self.nodes:>5} nodes, {self.init_pods:>5} init + {self.measured:>5} measured: "
            f"{rate} pods/s ({samples}), cycle p50 {self.p50_ms:.2f} ms p99 {self.p99_ms:.2f} ms, "
            f"{self.scheduled}/{self.measured} in {self.seconds:.1f} s "
            f"| upstream threshold {w.threshold:.0f} pods/s"
        )
        extra = []
        if self.gave_up:
            extra.append(f"gave up: {self.measured - self.scheduled} measured pods unschedulable")
        if self.churn_created:
            made = ", ".join(f"{n} {kind}" for kind, n in sorted(self.churn_created.items()))
            extra.append(
                f"churn created {made}; churned pods: {self.churn_pods_bound} bound, "
                f"{self.churn_pods_pending} pending"
            )
        if self.victims:
            extra.append(f"{self.victims} preemption victims deleted")
        return text + "".join(f"\n{'':<25}{line}" for line in extra)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


async def _wait_scheduled(cluster: Cluster, namespace: str, count: int, stall_seconds: float) -> bool:
    """Until ``count`` pods of ``namespace`` are scheduled; False after ``stall_seconds`` without one."""
    last, last_change = -1, time.perf_counter()
    while cluster.scheduled[namespace] < count:
        await asyncio.sleep(0.01)
        now = time.perf_counter()
        if cluster.scheduled[namespace] != last:
            last, last_change = cluster.scheduled[namespace], now
        elif now - last_change > stall_seconds:
            return False
    return True


@dataclass(slots=True)
class ChurnProgress:
    ticks: int = 0
    created: Counter[str] = field(default_factory=Counter)  # by template


async def _churn(cluster: Cluster, op: Churn, interval_scale: float, progress: ChurnProgress) -> None:
    """Upstream's churn op: on every tick, each template's object is created (mode create), or in
    mode recreate created or deleted in turn (slot ``tick % number``)."""
    interval = op.interval_ms / 1000 * interval_scale
    names = itertools.count(1)
    slots: dict[str, list[str]] = {t: [""] * max(op.number, 1) for t in op.templates}
    tick = 0
    next_tick = time.perf_counter() + interval
    while op.mode == "recreate" or op.number == 0 or tick < op.number:
        await asyncio.sleep(max(0.0, next_tick - time.perf_counter()))
        now = time.perf_counter()
        while next_tick <= now:
            next_tick += interval
        for template in op.templates:
            slot = tick % op.number if op.mode == "recreate" else 0
            existing = slots[template][slot] if op.mode == "recreate" else ""
            if existing:
                _delete(cluster, template, existing, op.namespace)
                slots[template][slot] = ""
            else:
                slots[template][slot] = _create(cluster, template, next(names), op.namespace)
                progress.created[template] += 1
        tick += 1
        progress.ticks = tick


def _create(cluster: Cluster, template: str, n: int, namespace: str) -> str:
    if template == "node":
        cluster.create_node(churn_node(f"node-churn-{n:05d}"))
        return f"node-churn-{n:05d}"
    if template == "service":
        cluster.create_object("services", churn_service(f"service-churn-{n:05d}", namespace))
        return f"service-churn-{n:05d}"
    pod_template = POD_TEMPLATES[template]
    return cluster.create_pod(pod_template.build(f"{pod_template.prefix}churn-{n:05d}", namespace)).key


def _delete(cluster: Cluster, template: str, name: str, namespace: str) -> None:
    if template == "node":
        cluster.delete_node(name)
    elif template == "service":
        cluster.delete_object("services", f"{namespace}/{name}")
    else:
        cluster.delete_pod(name)


async def run(
    workload: Workload,
    nodes: int = UPSTREAM_NODES,
    scale: float = 1.0,
    *,
    churn_interval_scale: float = 1.0,
    settle: bool = False,
    stall_seconds: float = 15.0,
) -> Report:
    """One workload on a fresh scheduler.

    For the smoke test, which must see churn happen in a run of a few dozen pods:
    ``churn_interval_scale`` shortens churn intervals, and ``settle`` lets churn tick at least
    twice before it stops, after the measured op, then waits until the scheduler has nothing left
    to do now (churned pods decided, preemptions carried out).
    """
    cluster = Cluster()
    dispatcher = APIDispatcher(cluster, RELEVANCES, "status writer")
    status = PodStatusUpdates(dispatcher, cluster, cluster.current)
    harness = Harness(
        0, client=cluster, listers=cluster.listers, current_pod=cluster.current, status=status, binder=None
    )
    queue, scheduler = harness.queue, harness.scheduler

    cluster.connect(harness.pod_events, harness.node_events)
    cycles: list[float] = []
    measuring = False

    async def schedule_loop() -> None:  # Scheduler.run, timing each attempt
        while True:
            info = await queue.pop()
            if info is None:
                return
            start = time.perf_counter()
            await scheduler.attempt(info)
            if measuring:
                cycles.append(time.perf_counter() - start)
            await asyncio.sleep(0)

    background = [
        asyncio.create_task(schedule_loop()),
        asyncio.create_task(queue.run()),
        asyncio.create_task(dispatcher.run()),
    ]
    progress = ChurnProgress()
    init_pods = 0
    report: Report | None = None
    try:
        for i in range(nodes):
            labels = {ZONE: workload.zones[i % len(workload.zones)]} if workload.zones else {}
            cluster.create_node(node_default(node_name(i), labels))
        await cluster.synced()
        for op in workload.ops:
            if isinstance(op, Churn):
                cluster.create_namespace(op.namespace)
                background.append(asyncio.create_task(_churn(cluster, op, churn_interval_scale, progress)))
                continue
            count = op.size(nodes, scale)
            template = POD_TEMPLATES[op.template]
            cluster.create_namespace(op.namespace)
            collector = ThroughputCollector(functools.partial(cluster.scheduled.__getitem__, op.namespace))
            if op.measure:
                measuring = True
                background.append(asyncio.create_task(collector.run()))
            else:
                init_pods += count
            start = time.perf_counter()
            for i in range(count):
                body = template.build(f"{template.prefix}{i:06d}", op.namespace)
                cluster.create_pod(body, node_name(i % nodes) if op.per_node else "")
            done = await _wait_scheduled(cluster, op.namespace, count, stall_seconds)
            if not op.measure:
                if not done:
                    pending = count - cluster.scheduled[op.namespace]
                    raise RuntimeError(f"gave up: {pending} of {count} init pods stay unschedulable")
                continue
            measuring = False
            background.pop().cancel()
            scheduled = cluster.scheduled[op.namespace]
            end = cluster.last_scheduled.get(op.namespace, start)
            elapsed = end - start
            average = collector.average
            report = Report(
                workload=workload,
                nodes=nodes,
                init_pods=init_pods,
                measured=count,
                scheduled=scheduled,
                throughput=average if average is not None else (scheduled / elapsed if elapsed > 0 else 0.0),
                samples=len(collector.samples),
                seconds=elapsed,
                attempts=len(cycles),
                p50_ms=statistics.median(cycles) * 1000 if cycles else 0.0,
                p99_ms=_percentile(cycles, 0.99) * 1000,
                gave_up=not done,
            )
        assert report is not None, f"{workload.name} has no measured op"
        churn = workload.churn
        if churn is not None:
            if settle:
                deadline = time.perf_counter() + 10
                while progress.ticks < 2 and time.perf_counter() < deadline:
                    await asyncio.sleep(0.001)
            for task in background[3:]:
                task.cancel()
            if settle:
                await _settle(harness)
            churned = [p for p in cluster.pods.values() if p.namespace == churn.namespace]
            report.churn_pods_bound = cluster.scheduled[churn.namespace]
            report.churn_pods_pending = sum(1 for p in churned if not p.node_name)
        report.churn_created = progress.created
        report.victims = cluster.deleted_by_request
        report.cluster = cluster
        return report
    finally:
        queue.close()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)


async def _settle(harness: Harness, timeout: float = 10.0) -> None:
    """Until nothing is left to do now: no pod active or backing off, no preemption or binding
    under way (pods that are unschedulable for good stay so)."""
    preemption: Any = harness.framework.plugins.get("DefaultPreemption")
    deadline = time.perf_counter() + timeout
    quiet = 0
    while quiet < 3 and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
        pending = harness.queue.pending()
        busy = (
            pending["active"]
            or pending["backoff"]
            or (preemption is not None and preemption.executor.running)
        )
        busy = busy or not await harness.scheduler.wait_for_bindings(0.01)
        quiet = 0 if busy else quiet + 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scheduler_perf", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=UPSTREAM_NODES)
    parser.add_argument(
        "--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS), metavar="NAME"
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="fraction of upstream's pod counts (e.g. 0.1)"
    )
    args = parser.parse_args(argv)
    print(THRESHOLD_NOTE)
    print(f"(--scale {args.scale:g}: pod counts are upstream's x {args.scale:g}; one asyncio loop, one core)")
    for name in args.workloads:
        try:
            report = asyncio.run(run(WORKLOADS[name], args.nodes, args.scale))
        except RuntimeError as exc:  # init pods that cannot all be placed (e.g. too few nodes)
            print(f"{name:<25}{exc}", flush=True)
            continue
        print(report.line(), flush=True)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss_mb:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
