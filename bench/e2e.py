"""The real scheduler process end to end through the API: cost per pod, bind rate, memory.

    python -m bench.e2e [--nodes 1000] [--pods 5000] [--live] [--qps 0] [--profile] [--workload NAME]
    python -m bench.e2e --workload dra [--partitioned] --nodes 500 --pods 2000

The local endpoint runs in its own process (``pyscheduler sim-cluster --no-kubelet``, as on a real
API server where no kubelet runs), so its CPU is not counted; ``--nodes`` nodes of 8 cpu / 32Gi.
Without ``--live`` the ``--pods`` pods (100m / 128Mi) exist before the scheduler starts; with it
they are created while it runs. Then ``pyscheduler run --plain-http`` starts and the script waits
until every pod is bound. Printed:

- start → all bound, and the bind rate from the first binding to the last;
- CPU per bound pod: the scheduler process's user+sys CPU seconds from its start (imports, the
  initial LIST and all) to the last binding, divided by the pods bound;
- the scheduler's peak RSS;
- with ``--profile``: where the CPU went, by component (the scheduler runs under cProfile).

``--workload NAME`` runs one of bench.scheduler_perf's upstream workloads (SchedulingBasic,
NodeAffinity, TopologySpreading, PodAntiAffinity) instead of the plain pods, from the same
definitions: the nodes are upstream's node-default (4 cpu / 32Gi / 110 pods) with the workload's
zone labels, written into the node template (``zones:``, round-robin as upstream's
labelNodePrepareStrategy); the workload's init pods, as many per node as upstream's 5000-node
variant has, are created already bound (round-robin, the placement the scheduler gives these
identical pods on identical empty nodes) in their own namespace; the ``--pods`` measured pods
are the workload's template, posted to its measured namespace, and are what the figures count.

Two more shapes (``--workload preemption`` / ``wffc``):

- preemption: upstream's PreemptionBasic (misc/performance-config.yaml, 1000Nodes: 4,000 init
  pods, 1,000 measured): node-default nodes, each full with 4 low-priority pods of 900m (created
  bound), then ``--pods`` priority-10 pods of 3 CPUs; each preempts 3 victims (deleted through the
  API, at once: no kubelet) and binds on its nominated node once they are gone.
- wffc: WaitForFirstConsumer local volumes: a StorageClass without provisioner, two local PVs
  (1Gi, node affinity to one node's hostname) per measured pod spread round-robin over the
  nodes, one claim per pod; VolumeBinding finds a free PV on each node it filters and PreBind
  binds it (the endpoint's PV controller completes the claim).

``--workload dra`` runs pods with a DRA claim each instead (``bench.e2e_dra``): every node has 8
GPUs, every pod its own claim for one, the claims made before the scheduler starts (with
``--partitioned``, each claim asks for half of a partitionable GPU).

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench import e2e_dra
from bench.scheduler_perf import NODE_CAPACITY, NODE_PREFIX, POD_TEMPLATES, UPSTREAM_NODES, WORKLOADS

NODE_TEMPLATE = """\
nodeGroups:
  - namePrefix: node-
    count: {count}
    capacity: {{cpu: "8", memory: 32Gi, pods: "110"}}
"""
# --workload: upstream's node-default, the workload's zones round-robin (none: no zone label)
WORKLOAD_NODE_TEMPLATE = """\
nodeGroups:
  - namePrefix: {prefix}
    count: {count}
    capacity: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}"}}
    zones: [{zones}]
"""
# the workloads whose init pods can be placed up front as upstream's scheduler would place them
UPSTREAM_E2E_WORKLOADS = ("SchedulingBasic", "NodeAffinity", "TopologySpreading", "PodAntiAffinity")
PREEMPTION, WFFC, DRA = "preemption", "wffc", "dra"
E2E_WORKLOADS = (*UPSTREAM_E2E_WORKLOADS, PREEMPTION, WFFC, DRA)
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
PREEMPTION_VICTIMS_PER_NODE = 4  # PreemptionBasic: 4,000 init pods on 1,000 nodes
PVS_PER_POD = 2
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}, qps: {qps}, burst: {burst}}}
leaderElection: {{leaderElect: false}}
"""
# where a profile's time goes, by the file the function lives in (first match wins)
COMPONENTS = (
    ("decode", ("orjson", "scheduler/api/", "json/")),
    ("informers", ("scheduler/client/informer.py", "scheduler/eventhandlers.py")),
    ("cache & queue", ("scheduler/cache/", "scheduler/queue/")),
    ("DRA", ("scheduler/dra/", "scheduler/plugins/dynamicresources.py")),
    ("scheduling cycle", ("scheduler/schedule_one.py", "scheduler/runtime/", "scheduler/plugins/", "numpy")),
    ("events & status", ("scheduler/apidispatcher/",)),
    ("HTTP client", ("scheduler/client/transport.py", "scheduler/client/rest.py", "ssl.py")),
    ("event loop", ("asyncio", "selectors")),
    ("logging", ("logging",)),
)


@dataclass(slots=True)
class Figures:
    nodes: int
    pods: int
    bound: int
    seconds_to_all_bound: float
    bind_rate: float
    cpu_per_pod_ms: float
    peak_rss_mb: float
    profile: str = ""
    workload: str = ""  # --workload
    init_pods: int = 0  # --workload: placed before the start, not counted

    def describe(self) -> str:
        label = f"{self.workload} ({self.init_pods} init pods placed): " if self.workload else ""
        lines = [
            f"{label}{self.nodes} nodes, {self.pods} pods: "
            f"{self.bound} bound in {self.seconds_to_all_bound:.1f}s "
            f"from the scheduler's start; {self.bind_rate:.0f} pods/s from the first binding to the last",
            f"scheduler CPU per bound pod: {self.cpu_per_pod_ms:.2f} ms; peak RSS {self.peak_rss_mb:.0f} MB",
        ]
        if self.profile:
            lines.append(self.profile)
        return "\n".join(lines)


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process (and its reaped children: none here)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pod(i: int) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "labels": {"app": f"app-{i % 50}"}},
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


@dataclass(frozen=True, slots=True)
class PodSource:
    """What pods to post where: the plain pods in ``bench``, or a workload's."""

    namespace: str = "bench"
    body: Callable[[int], bytes] = pod


@dataclass(frozen=True, slots=True)
class Objects:
    """``count`` objects posted to ``path`` before the scheduler starts (``body(i)`` each)."""

    path: str
    count: int
    body: Callable[[int], bytes]


@dataclass(frozen=True, slots=True)
class Shape:
    """A run's cluster: the node template, the measured pods, what exists before the start."""

    node_template: str
    measured: PodSource
    before: tuple[Objects, ...] = ()
    init_pods: int = 0  # pods among ``before``, for the report


def namespace(name: str) -> Objects:
    return Objects("/api/v1/namespaces", 1, lambda _: orjson.dumps({"metadata": {"name": name}}))


def bound_pods(
    namespace: str, count: int, build: Callable[[str, str], dict[str, Any]], prefix: str, nodes: int
) -> Objects:
    """``count`` pods of a template, bound round-robin to sim-cluster's workload nodes."""

    def body(i: int) -> bytes:
        obj = build(f"{prefix}{i:06d}", namespace)
        obj["spec"]["nodeName"] = f"{NODE_PREFIX}{i % nodes:04d}"  # sim-cluster's node names
        return orjson.dumps(obj)

    return Objects(f"/api/v1/namespaces/{namespace}/pods", count, body)


def workload_node_template(nodes: int, zones: tuple[str, ...] = ()) -> str:
    return WORKLOAD_NODE_TEMPLATE.format(
        prefix=NODE_PREFIX, count=nodes, zones=", ".join(zones), **NODE_CAPACITY
    )


def workload_shape(name: str, nodes: int, pods: int, partitioned: bool = False) -> Shape:
    """The cluster of a ``--workload`` run (see the module docstring)."""
    if name == DRA:
        return dra_shape(nodes, pods, partitioned)
    if name == PREEMPTION:
        return preemption_shape(nodes)
    if name == WFFC:
        return wffc_shape(nodes, pods)
    workload = WORKLOADS[name]
    measured = workload.measured
    template = POD_TEMPLATES[measured.template]

    def measured_body(i: int) -> bytes:
        return orjson.dumps(template.build(f"{template.prefix}{i:06d}", measured.namespace))

    source = PodSource(measured.namespace, measured_body)
    node_template = workload_node_template(nodes, workload.zones)
    init = workload.init
    if init is None:
        return Shape(node_template, source, (namespace(measured.namespace),))
    count = init_pod_count(name, nodes)
    init_template = POD_TEMPLATES[init.template]
    before = (
        namespace(measured.namespace),
        namespace(init.namespace),
        bound_pods(init.namespace, count, init_template.build, init_template.prefix, nodes),
    )
    return Shape(node_template, source, before, count)


def dra_shape(nodes: int, pods: int, partitioned: bool) -> Shape:
    """Nodes with GPUs, and a claim per measured pod made before the start (the claims first)."""
    claims = Objects(CLAIMS.format(namespace=e2e_dra.NAMESPACE), pods, e2e_dra.claim_body(partitioned))
    return Shape(
        e2e_dra.node_template(nodes, partitioned),
        PodSource(e2e_dra.NAMESPACE, e2e_dra.pod_body),
        (namespace(e2e_dra.NAMESPACE), claims),
    )


def preemption_shape(nodes: int) -> Shape:
    low, high = POD_TEMPLATES["pod-low-priority"], POD_TEMPLATES["pod-high-priority"]
    count = PREEMPTION_VICTIMS_PER_NODE * nodes

    def measured_body(i: int) -> bytes:
        return orjson.dumps(high.build(f"{high.prefix}{i:06d}", "preemptors"))

    before = (
        namespace("preemptors"),
        namespace("victims"),
        bound_pods("victims", count, low.build, low.prefix, nodes),
    )
    return Shape(workload_node_template(nodes), PodSource("preemptors", measured_body), before, count)


STORAGE_CLASS = "local-wffc"


def wffc_shape(nodes: int, pods: int) -> Shape:
    def storage_class(_: int) -> bytes:
        return orjson.dumps(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": STORAGE_CLASS},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )

    def volume(i: int) -> bytes:
        hostname = {"key": "kubernetes.io/hostname", "operator": "In", "values": [f"node-{i % nodes:04d}"]}
        return orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"local-{i:06d}"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": STORAGE_CLASS,
                    "local": {"path": f"/mnt/disks/{i}"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [hostname]}]}},
                },
            }
        )

    def claim(i: int) -> bytes:
        return orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"data-{i:05d}", "namespace": "wffc"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": STORAGE_CLASS,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )

    def measured_body(i: int) -> bytes:
        obj = orjson.loads(pod(i))
        obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i:05d}"}}]
        return orjson.dumps(obj)

    before = (
        namespace("wffc"),
        Objects("/apis/storage.k8s.io/v1/storageclasses", 1, storage_class),
        Objects("/api/v1/persistentvolumes", PVS_PER_POD * pods, volume),
        Objects("/api/v1/namespaces/wffc/persistentvolumeclaims", pods, claim),
    )
    return Shape(NODE_TEMPLATE.format(count=nodes), PodSource("wffc", measured_body), before)


def init_pod_count(name: str, nodes: int) -> int:
    """As many init pods per node as upstream's 5000-node variant has."""
    init = WORKLOADS[name].init
    return round(init.count * nodes / UPSTREAM_NODES) if init is not None else 0


async def post_all(session: aiohttp.ClientSession, url: str, objects: Objects) -> None:
    pending = iter(range(objects.count))
    headers = {"Content-Type": "application/json"}

    async def worker() -> None:
        for i in pending:
            async with session.post(f"{url}{objects.path}", data=objects.body(i), headers=headers) as resp:
                if resp.status >= 300:
                    raise RuntimeError(f"creating {objects.path} #{i}: HTTP {resp.status}")
                await resp.read()

    await asyncio.gather(*(worker() for _ in range(16)))


async def create_pods(
    session: aiohttp.ClientSession, url: str, start: int, stop: int, source: PodSource | None = None
) -> None:
    source = source or PodSource()
    path = f"/api/v1/namespaces/{source.namespace}/pods"
    await post_all(session, url, Objects(path, stop - start, lambda i: source.body(start + i)))


class BoundCounter:
    """Watches pods and notes when each gets its node."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.first: float | None = None
        self.last: float | None = None

    async def watch(self, session: aiohttp.ClientSession, url: str, namespace: str = "bench") -> None:
        params = {"watch": "true", "resourceVersion": "0", "allowWatchBookmarks": "true"}
        path = f"{url}/api/v1/namespaces/{namespace}/pods"
        async with session.get(path, params=params, timeout=None) as resp:
            async for line in resp.content:
                event = orjson.loads(line)
                obj = event.get("object") or {}
                if (obj.get("spec") or {}).get("nodeName"):
                    name = obj["metadata"]["name"]
                    if name not in self.bound:
                        now = time.monotonic()
                        self.first = self.first or now
                        self.last = now
                        self.bound.add(name)


async def run(
    nodes: int,
    pods: int,
    live: bool,
    qps: float,
    profile: bool,
    profile_out: Path | None = None,
    workload: str | None = None,
    partitioned: bool = False,
) -> Figures:
    shape = (
        workload_shape(workload, nodes, pods, partitioned)
        if workload is not None
        else Shape(NODE_TEMPLATE.format(count=nodes), PodSource(), (namespace("bench"),))
    )
    source = shape.measured
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "nodes.yaml").write_text(shape.node_template)
        kubeconfig = work / "kubeconfig"
        sim = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scheduler",
                "sim-cluster",
                "--no-kubelet",
                "--node-template",
                str(work / "nodes.yaml"),
                "--kubeconfig-out",
                str(kubeconfig),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert sim.stdout is not None
            url = sim.stdout.readline().split()[3]  # "sim-cluster listening on URL with N nodes"
            sim.stdout.readline()  # the kubeconfig line
            async with aiohttp.ClientSession() as session:
                for objects in shape.before:
                    await post_all(session, url, objects)
                if not live:
                    await create_pods(session, url, 0, pods, source)
                counter = BoundCounter()
                watcher = asyncio.create_task(counter.watch(session, url, source.namespace))
                figures = await _schedule(
                    work, kubeconfig, nodes, pods, qps, profile, live, counter, session, url, source
                )
                figures.workload = f"{workload} (partitioned)" if partitioned else workload or ""
                figures.init_pods = shape.init_pods
                watcher.cancel()
                if profile and profile_out is not None and (work / "profile.out").exists():
                    shutil.copyfile(work / "profile.out", profile_out)
                return figures
        finally:
            sim.send_signal(signal.SIGTERM)
            sim.wait(10)


async def _schedule(
    work: Path,
    kubeconfig: Path,
    nodes: int,
    pods: int,
    qps: float,
    profile: bool,
    live: bool,
    counter: BoundCounter,
    session: aiohttp.ClientSession,
    url: str,
    source: PodSource | None = None,
) -> Figures:
    config = work / "config.yaml"
    burst = int(qps * 2) if qps > 0 else 100_000
    config.write_text(CONFIG.format(kubeconfig=kubeconfig, qps=qps if qps > 0 else -1, burst=burst))
    command = [sys.executable]
    if profile:
        command += ["-m", "cProfile", "-o", str(work / "profile.out")]
    command += ["-m", "scheduler", "run", "--config", str(config), "--plain-http", "--port", "0", "-v", "1"]
    started = time.monotonic()
    scheduler = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        if live:
            await create_pods(session, url, 0, pods, source)
        while len(counter.bound) < pods:
            if scheduler.poll() is not None:
                raise RuntimeError(f"the scheduler exited with {scheduler.returncode}")
            await asyncio.sleep(0.02)
        cpu = cpu_seconds(scheduler.pid)
        rss = peak_rss_mb(scheduler.pid)
    finally:
        scheduler.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            scheduler.wait(30)
    first, last = counter.first or started, counter.last or started
    return Figures(
        nodes=nodes,
        pods=pods,
        bound=len(counter.bound),
        seconds_to_all_bound=last - started,
        bind_rate=(len(counter.bound) - 1) / (last - first) if last > first else float("nan"),
        cpu_per_pod_ms=cpu / max(len(counter.bound), 1) * 1000,
        peak_rss_mb=rss,
        profile=summarise(work / "profile.out") if profile else "",
    )


def summarise(path: Path, top: int = 12) -> str:
    """CPU time by component (self time, by the file each function lives in), then the top functions."""
    if not path.exists():
        return "(no profile written)"
    stats = pstats.Stats(str(path))
    by_component: dict[str, float] = {}
    total = 0.0
    for (filename, _, _), (_, _, self_time, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += self_time
        component = next(
            (name for name, parts in COMPONENTS if any(part in filename for part in parts)), "other"
        )
        by_component[component] = by_component.get(component, 0.0) + self_time
    lines = ["CPU by component (self time):"]
    for name, seconds in sorted(by_component.items(), key=lambda item: -item[1]):
        lines.append(f"  {name:18} {seconds:6.2f}s  {100 * seconds / total:5.1f}%")
    ranked = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:top]  # type: ignore[attr-defined]
    lines.append("top functions (self time):")
    for (filename, line, function), (_, _, self_time, _, _) in ranked:
        lines.append(f"  {self_time:6.2f}s  {function} ({Path(filename).name}:{line})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--live", action="store_true", help="create the pods while the scheduler runs")
    parser.add_argument("--qps", type=float, default=0, help="client QPS (0: unlimited; burst = 2 x qps)")
    parser.add_argument("--profile", action="store_true", help="run the scheduler under cProfile")
    parser.add_argument(
        "--profile-out", type=Path, help="with --profile: also keep the raw cProfile output here (pstats)"
    )
    parser.add_argument(
        "--workload",
        choices=E2E_WORKLOADS,
        help="a bench.scheduler_perf upstream workload, or preemption, wffc or dra, not the plain pods",
    )
    parser.add_argument(
        "--partitioned",
        action="store_true",
        help="with --workload dra: claims for halves of partitionable GPUs",
    )
    args = parser.parse_args(argv)
    if args.partitioned and args.workload != DRA:
        parser.error("--partitioned goes with --workload dra")
    if args.workload == DRA and args.pods > e2e_dra.capacity(args.nodes, args.partitioned):
        parser.error(f"--workload dra: at most {e2e_dra.capacity(args.nodes, args.partitioned)} --pods")
    if (
        args.workload == "PodAntiAffinity"
        and init_pod_count(args.workload, args.nodes) + args.pods > args.nodes
    ):
        free = args.nodes - init_pod_count(args.workload, args.nodes)
        parser.error(f"PodAntiAffinity puts one pod per node: at most {free} --pods on {args.nodes} nodes")
    figures = asyncio.run(
        run(
            args.nodes,
            args.pods,
            args.live,
            args.qps,
            args.profile,
            args.profile_out,
            args.workload,
            args.partitioned,
        )
    )
    print(figures.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
