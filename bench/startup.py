"""Start-up at scale: the real scheduler process against a large cluster on the local endpoint.

    python -m bench.startup [--nodes 15000] [--pods 100000] [--runs 3] [--pending 100]

One local endpoint (``pyscheduler sim-cluster --no-kubelet``, its own process, its CPU not
counted) gets ``--nodes`` nodes (8 cpu / 32Gi / 110 pods) and ``--pods`` pods already bound to
them (round-robin, namespace ``existing``). Then, ``--runs`` times, ``--pending`` new pods are
posted and ``pyscheduler run --plain-http`` starts; printed for each run:

- ready: from the process's start to the first 200 from its /readyz (every informer listed);
- first bind: from the process's start to the first new pod seen bound through a watch;
- the process's peak RSS (VmHWM) once every new pod is bound, and its CPU until then.

Then the standby: a process started with leader election while the bench itself holds the Lease;
once that process is ready, ``--pending`` new pods are posted, the bench waits until the process
has seen them (its queue, from ``scheduler_pending_pods``), and releases the Lease as a leader
going away does (empty holder); printed is the time from the bench seeing the process's
acquisition on a Lease watch to it seeing the first new pod bound.

The summary gives min and median over the runs. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson

from bench.e2e import NODE_TEMPLATE, BoundCounter, PodSource, cpu_seconds, create_pods, peak_rss_mb, pod
from bench.sim_process import sim_cluster_process

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}, qps: -1, burst: 100000}}
leaderElection: {{leaderElect: {elect}, resourceNamespace: kube-system, resourceName: {lease}}}
"""
LEASE_NAME = "pyscheduler-bench"
BENCH_HOLDER = "bench-startup"  # the Lease's holder while the standby waits
STANDBY = "bench-standby"  # POD_NAME of the standby: its identity starts with it
POLL = 0.01  # seconds between /readyz probes


@dataclass(slots=True)
class Run:
    ready: float
    first_bind: float
    all_bound: float
    cpu: float
    peak_rss_mb: float

    def describe(self) -> str:
        return (
            f"ready {self.ready:.2f}s, first bind {self.first_bind:.2f}s, all new pods bound "
            f"{self.all_bound:.2f}s after the start; CPU {self.cpu:.2f}s; peak RSS {self.peak_rss_mb:.0f} MB"
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def existing_pods(nodes: int) -> PodSource:
    """Plain pods, each already bound to a node (round-robin)."""

    def body(i: int) -> bytes:
        obj = orjson.loads(pod(i))
        obj["metadata"]["name"] = f"existing-{i:06d}"
        obj["spec"]["nodeName"] = f"node-{i % nodes:04d}"
        return orjson.dumps(obj)

    return PodSource("existing", body)


def start_scheduler(work: Path, kubeconfig: Path, port: int, *, elect: bool) -> subprocess.Popen[bytes]:
    config = work / f"config-{port}.yaml"
    config.write_text(CONFIG.format(kubeconfig=kubeconfig, elect=str(elect).lower(), lease=LEASE_NAME))
    command = [sys.executable, "-m", "scheduler", "run", "--config", str(config), "--plain-http"]
    command += ["--port", str(port), "-v", "1"]
    env = {**os.environ, "POD_NAME": STANDBY} if elect else None
    return subprocess.Popen(command, stderr=subprocess.DEVNULL, env=env)


async def wait_ready(
    session: aiohttp.ClientSession, port: int, process: subprocess.Popen[bytes], started: float
) -> float:
    """Seconds from ``started`` to the process's first 200 from /readyz."""
    url = f"http://127.0.0.1:{port}/readyz"
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the scheduler exited with {process.returncode}")
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(url) as resp:
                if resp.status == 200:
                    return time.monotonic() - started
        await asyncio.sleep(POLL)


async def wait_bound(counter: BoundCounter, count: int, process: subprocess.Popen[bytes]) -> None:
    while len(counter.bound) < count:
        if process.poll() is not None:
            raise RuntimeError(f"the scheduler exited with {process.returncode}")
        await asyncio.sleep(POLL)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def one_run(
    session: aiohttp.ClientSession, url: str, work: Path, kubeconfig: Path, run: int, pending: int
) -> Run:
    namespace = f"new-{run}"
    await create_namespace(session, url, namespace)
    await create_pods(session, url, 0, pending, PodSource(namespace))
    counter = BoundCounter()
    watcher = asyncio.create_task(counter.watch(session, url, namespace))
    port = free_port()
    started = time.monotonic()
    process = start_scheduler(work, kubeconfig, port, elect=False)
    try:
        ready = await wait_ready(session, port, process, started)
        await wait_bound(counter, pending, process)
        cpu, rss = cpu_seconds(process.pid), peak_rss_mb(process.pid)
    finally:
        stop(process)
        watcher.cancel()
    assert counter.first is not None and counter.last is not None
    return Run(ready, counter.first - started, counter.last - started, cpu, rss)


async def create_namespace(session: aiohttp.ClientSession, url: str, name: str) -> None:
    async with session.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": name}}) as resp:
        await resp.read()


LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


async def hold_lease(session: aiohttp.ClientSession, url: str) -> dict[str, object]:
    """The bench takes the Lease (15 s, renewed by ``keep_lease``) so the standby must wait."""
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": "kube-system"},
        "spec": {"holderIdentity": BENCH_HOLDER, "leaseDurationSeconds": 15, "leaseTransitions": 0},
    }
    async with session.get(f"{url}{LEASES}/{LEASE_NAME}") as resp:
        if resp.status == 200:
            current = await resp.json()
            body["metadata"] = current["metadata"]
            async with session.put(f"{url}{LEASES}/{LEASE_NAME}", json=body) as put:
                return dict(await put.json())
    async with session.post(f"{url}{LEASES}", json=body) as resp:
        return dict(await resp.json())


async def pending_in_queue(session: aiohttp.ClientSession, port: int) -> float:
    """The process's scheduler_pending_pods summed over its queues (0 when it cannot answer)."""
    total = 0.0
    with contextlib.suppress(aiohttp.ClientError):
        async with session.get(f"http://127.0.0.1:{port}/metrics") as resp:
            for line in (await resp.text()).splitlines():
                if line.startswith("scheduler_pending_pods{"):
                    total += float(line.rsplit(" ", 1)[1])
    return total


async def lease_acquired(session: aiohttp.ClientSession, url: str, version: str) -> float:
    """When the bench sees a holder other than itself on the Lease (a watch from ``version``)."""
    params = {"watch": "true", "resourceVersion": version, "fieldSelector": f"metadata.name={LEASE_NAME}"}
    async with session.get(f"{url}{LEASES}", params=params, timeout=None) as resp:
        async for line in resp.content:
            event = orjson.loads(line)
            holder = ((event.get("object") or {}).get("spec") or {}).get("holderIdentity") or ""
            if holder.startswith(STANDBY):
                return time.monotonic()
    raise RuntimeError("the Lease watch ended before the standby took the Lease")


async def standby_run(
    session: aiohttp.ClientSession, url: str, work: Path, kubeconfig: Path, run: int, pending: int
) -> float:
    """Seconds from the standby's acquisition of the Lease to its first binding."""
    lease = await hold_lease(session, url)
    port = free_port()
    process = start_scheduler(work, kubeconfig, port, elect=True)
    namespace = f"standby-{run}"
    counter = BoundCounter()
    watcher: asyncio.Task[None] | None = None
    try:
        await wait_ready(session, port, process, time.monotonic())
        await create_namespace(session, url, namespace)
        watcher = asyncio.create_task(counter.watch(session, url, namespace))
        await create_pods(session, url, 0, pending, PodSource(namespace))
        while await pending_in_queue(session, port) < pending:
            if process.poll() is not None:
                raise RuntimeError(f"the standby exited with {process.returncode}")
            await asyncio.sleep(POLL)
        if counter.bound:
            raise RuntimeError("the standby bound pods before it held the Lease")
        metadata = lease["metadata"]
        assert isinstance(metadata, dict)
        acquired = asyncio.create_task(lease_acquired(session, url, str(metadata["resourceVersion"])))
        released = {**lease, "spec": {"holderIdentity": "", "leaseDurationSeconds": 1}}
        async with session.put(f"{url}{LEASES}/{LEASE_NAME}", json=released) as resp:
            if resp.status != 200:
                raise RuntimeError(f"releasing the Lease: HTTP {resp.status}")
        taken = await acquired
        await wait_bound(counter, 1, process)
        assert counter.first is not None
        return counter.first - taken
    finally:
        stop(process)
        if watcher is not None:
            watcher.cancel()


async def main_async(nodes: int, pods: int, runs: int, pending: int) -> tuple[list[Run], list[float]]:
    with (
        tempfile.TemporaryDirectory() as folder,
        sim_cluster_process(Path(folder), NODE_TEMPLATE.format(count=nodes)) as (url, kubeconfig),
    ):
        work = Path(folder)
        connector = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(connector=connector) as session:
            await create_namespace(session, url, "existing")
            began = time.monotonic()
            await create_pods(session, url, 0, pods, existing_pods(nodes))
            print(f"{nodes} nodes, {pods} bound pods created in {time.monotonic() - began:.0f}s", flush=True)
            results = []
            for run in range(runs):
                results.append(await one_run(session, url, work, kubeconfig, run, pending))
                print(f"run {run + 1}: {results[-1].describe()}", flush=True)
            takeovers = []
            for run in range(runs):
                takeovers.append(await standby_run(session, url, work, kubeconfig, run, pending))
                print(
                    f"standby {run + 1}: first bind {takeovers[-1]:.3f}s after taking the Lease",
                    flush=True,
                )
            return results, takeovers


def spread(values: Sequence[float], unit: str = "s", digits: int = 2) -> str:
    return f"min {min(values):.{digits}f}{unit}, median {statistics.median(values):.{digits}f}{unit}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=15000)
    parser.add_argument("--pods", type=int, default=100000, help="pods bound before the scheduler starts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pending", type=int, default=100, help="new pods to bind in each run")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.pending < 1:
        parser.error("--runs and --pending must be at least 1")
    runs, takeovers = asyncio.run(main_async(args.nodes, args.pods, args.runs, args.pending))
    print(f"summary over {len(runs)} runs ({args.nodes} nodes, {args.pods} bound pods):")
    print(f"  start → ready:      {spread([r.ready for r in runs])}")
    print(f"  start → first bind: {spread([r.first_bind for r in runs])}")
    print(f"  peak RSS:           {spread([r.peak_rss_mb for r in runs], ' MB', 0)}")
    print(f"  standby: Lease taken → first bind: {spread(takeovers, 's', 3)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
