"""Requests with bad tokens against the scheduler's port: binding time, memory, good scrapes.

    python -m bench.auth_flood [--nodes 20] [--pods 300] [--flood 20000] [--connections 16] [--runs 3]

Anyone who can reach the scheduler's HTTPS port makes it ask the API server (a TokenReview for a
bearer token). This measures that such a flood neither slows scheduling nor grows the process:

- the local endpoint (``pyscheduler sim-cluster --no-kubelet``, ``--nodes`` nodes) and the
  scheduler (``pyscheduler run``, HTTPS with delegated authentication, the default client QPS 50
  and burst 100, no ``--authentication-kubeconfig``) run in processes of their own;
- binding: ``--pods`` pods are created and the time from the first created to the last bound is
  taken, once quietly and once while ``--connections`` connections send /metrics requests with
  distinct bad tokens as fast as they are answered;
- memory and good requests: ``--flood`` requests with distinct bad tokens over ``--connections``
  connections, while a client with a good token (allowed to get /metrics) scrapes every 50 ms;
  its latency (p50, p99) with and without the flood, and the scheduler's RSS before and after.

Each figure is given for every run, then min and median over the runs. The machine's other load
shows in the figures (on a shared 2-core machine expect ±20%). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson

from bench.common import until
from bench.e2e import BoundCounter
from simcluster.access import ADMIN_TOKEN

GOOD_TOKEN = "prometheus-token"
ACCESS = f"""\
tokens:
  - {{token: {GOOD_TOKEN}, user: prometheus, groups: [monitoring]}}
rules:
  - {{groups: [monitoring], verbs: [get], nonResourceURLs: [/metrics]}}
"""
NODES = """\
nodeGroups:
  - namePrefix: node-
    count: {count}
    capacity: {{cpu: "8", memory: 32Gi, pods: "110"}}
"""
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
leaderElection: {{leaderElect: false}}
"""
SCRAPE_INTERVAL = 0.05


@dataclass(slots=True)
class Run:
    quiet_bind_s: float = 0.0
    flood_bind_s: float = 0.0
    flood_rate: float = 0.0  # bad-token requests answered per second during the binding
    statuses: Counter[int] = field(default_factory=Counter)
    good_quiet: list[float] = field(default_factory=list)  # scrape latencies, seconds
    good_flood: list[float] = field(default_factory=list)
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    flood_s: float = 0.0

    def describe(self, pods: int, flood: int) -> str:
        statuses = ", ".join(f"{count} x {code}" for code, count in sorted(self.statuses.items()))
        return "\n".join(
            [
                f"  {pods} pods bound: quiet {self.quiet_bind_s:.2f} s, under the flood "
                f"{self.flood_bind_s:.2f} s ({self.flood_rate:.0f} bad-token requests/s)",
                f"  {flood} bad tokens in {self.flood_s:.0f} s ({statuses}); scheduler RSS "
                f"{self.rss_before_mb:.0f} -> {self.rss_after_mb:.0f} MB",
                f"  good scrapes: quiet p50 {_ms(self.good_quiet, 0.5)} p99 {_ms(self.good_quiet, 0.99)}, "
                f"under the flood p50 {_ms(self.good_flood, 0.5)} p99 {_ms(self.good_flood, 0.99)} "
                f"({len(self.good_flood)} scrapes)",
            ]
        )


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def _ms(values: list[float], q: float) -> str:
    return f"{_quantile(values, q) * 1000:.1f} ms"


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Flood:
    """``connections`` workers sending GET /metrics with a new bad token each time, until
    ``count`` requests were sent (None: until stopped)."""

    def __init__(self, url: str, connections: int, count: int | None) -> None:
        self._url = url + "/metrics"
        self._connections = connections
        self._numbers = itertools.count() if count is None else iter(range(count))
        self._stopped = False
        self.statuses: Counter[int] = Counter()

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(limit=self._connections, ssl=False)
        async with aiohttp.ClientSession(connector=connector) as session:
            await asyncio.gather(*(self._worker(session) for _ in range(self._connections)))

    def stop(self) -> None:
        self._stopped = True

    @property
    def answered(self) -> int:
        return sum(self.statuses.values())

    async def _worker(self, session: aiohttp.ClientSession) -> None:
        for i in self._numbers:
            if self._stopped:
                return
            headers = {"Authorization": f"Bearer flood-{i:08d}-{time.monotonic_ns()}"}
            async with session.get(self._url, headers=headers) as response:
                await response.read()
                self.statuses[response.status] += 1


async def scrape_every(url: str, interval: float, stop: asyncio.Event) -> list[float]:
    """GET /metrics with the good token every ``interval`` seconds until ``stop``; latencies."""
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {GOOD_TOKEN}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
        while not stop.is_set():
            started = time.perf_counter()
            async with session.get(url + "/metrics", headers=headers) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(f"the good scrape answered {response.status}")
            latencies.append(time.perf_counter() - started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
    return latencies


async def create_pods(session: aiohttp.ClientSession, url: str, namespace: str, count: int) -> None:
    async with session.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": namespace}}) as resp:
        await resp.read()
    numbers = iter(range(count))

    async def worker() -> None:
        for i in numbers:
            body = {
                "metadata": {"name": f"pod-{i:04d}"},
                "spec": {
                    "schedulerName": "pyscheduler",
                    "containers": [
                        {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                },
            }
            async with session.post(
                f"{url}/api/v1/namespaces/{namespace}/pods", data=orjson.dumps(body)
            ) as resp:
                if resp.status >= 300:
                    raise RuntimeError(f"creating a pod: HTTP {resp.status}")
                await resp.read()

    await asyncio.gather(*(worker() for _ in range(8)))


async def bind_time(session: aiohttp.ClientSession, sim_url: str, namespace: str, pods: int) -> float:
    counter = BoundCounter()
    watcher = asyncio.create_task(counter.watch(session, sim_url, namespace))
    try:
        started = time.monotonic()
        await create_pods(session, sim_url, namespace, pods)
        await until(lambda: len(counter.bound) >= pods, 300, f"{pods} pods bound", interval=0.01)
        return (counter.last or started) - started
    finally:
        watcher.cancel()


async def one_run(work: Path, nodes: int, pods: int, flood: int, connections: int, index: int) -> Run:
    (work / "nodes.yaml").write_text(NODES.format(count=nodes))
    (work / "access.yaml").write_text(ACCESS)
    kubeconfig = work / "kubeconfig"
    sim_command = [sys.executable, "-m", "scheduler", "sim-cluster", "--no-kubelet"]
    sim_command += ["--node-template", str(work / "nodes.yaml"), "--access", str(work / "access.yaml")]
    sim = subprocess.Popen(
        [*sim_command, "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
    )
    scheduler: subprocess.Popen[bytes] | None = None
    try:
        assert sim.stdout is not None
        sim_url = sim.stdout.readline().split()[3]  # "sim-cluster listening on URL with N nodes"
        sim.stdout.readline()  # the kubeconfig line
        (work / "config.yaml").write_text(CONFIG.format(kubeconfig=kubeconfig))
        port = free_port()
        command = [sys.executable, "-m", "scheduler", "run", "--config", str(work / "config.yaml")]
        command += ["--bind-address", "127.0.0.1", "--port", str(port)]
        scheduler = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        url = f"https://127.0.0.1:{port}"
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}  # the local endpoint's own user
        async with aiohttp.ClientSession(headers=admin) as session:
            await _ready(url, scheduler)
            return await _measure(session, sim_url, url, scheduler.pid, pods, flood, connections, index)
    finally:
        for process in (scheduler, sim):
            if process is not None:
                process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(30)


async def _ready(url: str, scheduler: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if scheduler.poll() is not None:
                raise RuntimeError(f"the scheduler exited with {scheduler.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url + "/readyz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise TimeoutError("the scheduler was not ready within 60 s")


async def _measure(
    session: aiohttp.ClientSession,
    sim_url: str,
    url: str,
    pid: int,
    pods: int,
    flood: int,
    connections: int,
    index: int,
) -> Run:
    run = Run()
    refill = 100 / 50 + 1  # the scheduler's bucket (burst 100 at 50 qps) is full again
    await asyncio.sleep(refill)
    run.quiet_bind_s = await bind_time(session, sim_url, f"quiet-{index}", pods)
    await asyncio.sleep(refill)
    endless = Flood(url, connections, None)
    flooding = asyncio.create_task(endless.run())
    await until(lambda: endless.answered > 0, 60, "the flood answered")
    answered, started = endless.answered, time.monotonic()
    run.flood_bind_s = await bind_time(session, sim_url, f"flood-{index}", pods)
    run.flood_rate = (endless.answered - answered) / (time.monotonic() - started)
    endless.stop()
    await flooding

    stop = asyncio.Event()
    quiet = asyncio.create_task(scrape_every(url, SCRAPE_INTERVAL, stop))
    await asyncio.sleep(11)  # longer than the token cache's 10 s: one review on the way
    stop.set()
    run.good_quiet = await quiet
    stop.clear()
    run.rss_before_mb = rss_mb(pid)
    counted = Flood(url, connections, flood)
    scraping = asyncio.create_task(scrape_every(url, SCRAPE_INTERVAL, stop))
    started = time.monotonic()
    await counted.run()
    run.flood_s = time.monotonic() - started
    stop.set()
    run.good_flood = await scraping
    run.rss_after_mb = rss_mb(pid)
    run.statuses = counted.statuses
    return run


def _spread(label: str, values: list[float], unit: str, digits: int = 2) -> str:
    low, middle = min(values), statistics.median(values)
    return f"  {label}: min {low:.{digits}f} {unit}, median {middle:.{digits}f} {unit}"


async def main(args: argparse.Namespace) -> None:
    print(
        f"{args.nodes} nodes, {args.pods} pods, client QPS 50 / burst 100; bad tokens over "
        f"{args.connections} connections"
    )
    runs: list[Run] = []
    for index in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            run = await one_run(Path(folder), args.nodes, args.pods, args.flood, args.connections, index)
        print(f"run {index + 1}:\n{run.describe(args.pods, args.flood)}", flush=True)
        runs.append(run)
    print(f"over {len(runs)} runs:")
    print(_spread("bound, quiet", [r.quiet_bind_s for r in runs], "s"))
    print(_spread("bound, under the flood", [r.flood_bind_s for r in runs], "s"))
    print(_spread("RSS growth over the flood", [r.rss_after_mb - r.rss_before_mb for r in runs], "MB", 1))
    print(_spread("good p99, quiet", [_quantile(r.good_quiet, 0.99) * 1000 for r in runs], "ms", 1))
    print(_spread("good p99, under the flood", [_quantile(r.good_flood, 0.99) * 1000 for r in runs], "ms", 1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.auth_flood", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--flood", type=int, default=20_000, help="bad-token requests for the memory figure")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
