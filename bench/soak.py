"""Soak: the real scheduler process through a faulty network, killed and restarted, against an
API server that restarts too; then checks that nothing was lost.

    python -m bench.soak [--nodes 100] [--pods 1000] [--cut-every 3] [--deadline 180]

The scheduler (``pyscheduler run``, leader election on: leaseDuration 6s, renewDeadline 4s,
retryPeriod 1s) reaches the local endpoint through a TCP proxy that resets every connection each
``--cut-every`` seconds. Pods of 1 cpu are created on nodes of 8 cpu, so exactly 8 per node fit.
While they arrive the scheduler is killed with SIGKILL and started again, and the endpoint
restarts (watch history gone). The end state must be: every pod either bound (once: no node holds
more than 8) or reported unschedulable (PodScheduled=False and a FailedScheduling event), and the
scheduler still running and leading. tests/soak runs a smaller version of the same scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import until
from simcluster import SimCluster
from simcluster.proxy import FaultProxy

NODE_CPU = 8
NAMESPACE = "default"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}, qps: 500, burst: 1000}}
leaderElection:
  leaderElect: true
  resourceNamespace: default
  leaseDuration: 6s
  renewDeadline: 4s
  retryPeriod: 1s
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 5
"""


@dataclass(slots=True)
class Outcome:
    nodes: int
    pods: int
    bound: int = 0
    reported: int = 0
    lost: list[str] = field(default_factory=list)  # neither bound nor reported
    overcommitted: dict[str, int] = field(default_factory=dict)
    scheduler_alive: bool = False
    leader: str = ""  # the lease holder at the end
    lost_leadership: bool = False  # a "leader election lost" line in a scheduler's log
    timeline: list[tuple[float, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def expected_bound(self) -> int:
        return min(self.pods, self.nodes * NODE_CPU)

    @property
    def nothing_lost(self) -> bool:
        return (
            self.bound == self.expected_bound
            and self.bound + self.reported == self.pods
            and not self.lost
            and not self.overcommitted
        )

    def describe(self) -> str:
        unschedulable = self.pods - self.expected_bound
        lines = [
            f"{self.bound}/{self.expected_bound} bound, {self.reported}/{unschedulable} reported "
            f"unschedulable, {len(self.lost)} lost, overcommitted nodes: {self.overcommitted or 'none'}",
            f"scheduler alive: {self.scheduler_alive}, leader at the end: {self.leader or '-'}, "
            f"leadership lost: {self.lost_leadership}, {self.seconds:.1f}s in all",
        ]
        lines.extend(f"  {at:6.1f}s  {what}" for at, what in self.timeline)
        return "\n".join(lines)


def pod_manifest(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


class Soak:
    def __init__(self, nodes: int, pods: int, cut_every: float, workdir: Path) -> None:
        self.nodes = nodes
        self.pods = pods
        self.cut_every = cut_every
        self.workdir = workdir
        self.started = time.monotonic()
        self.outcome = Outcome(nodes, pods)
        self.processes: list[asyncio.subprocess.Process] = []
        self.logs: list[Path] = []

    def note(self, what: str) -> None:
        self.outcome.timeline.append((time.monotonic() - self.started, what))

    async def start_scheduler(self, config: Path) -> asyncio.subprocess.Process:
        script = Path(sys.executable).with_name("pyscheduler")
        log_path = self.workdir / f"scheduler-{len(self.processes)}.log"
        self.logs.append(log_path)
        with log_path.open("wb") as log_file:
            process = await asyncio.create_subprocess_exec(
                str(script),
                "run",
                "--config",
                str(config),
                "--port",
                "0",
                env={**os.environ, "POD_NAME": f"soak-{len(self.processes)}"},
                stdout=log_file,
                stderr=log_file,
            )
        self.processes.append(process)
        return process

    async def run(self, deadline: float) -> Outcome:
        template = {
            "nodeGroups": [
                {"count": self.nodes, "capacity": {"cpu": str(NODE_CPU), "memory": "64Gi", "pods": "110"}}
            ]
        }
        cluster = SimCluster(nodes=self.nodes, node_template=template, kubelet=False)
        async with cluster as sim, FaultProxy(sim.host, sim.port) as proxy:
            kubeconfig = sim.write_kubeconfig(self.workdir / "kubeconfig")
            kubeconfig.write_text(kubeconfig.read_text().replace(sim.url, proxy.url))
            config = self.workdir / "config.yaml"
            config.write_text(CONFIG.format(kubeconfig=kubeconfig))
            proxy.cut_every(self.cut_every)
            self.note(f"proxy resets every connection each {self.cut_every:g}s")
            try:
                await self._scenario(sim, proxy, config, deadline)
            finally:
                proxy.stop_cutting()
                self._measure(sim)
                await self._stop_all()
        self.outcome.seconds = time.monotonic() - self.started
        self.outcome.lost_leadership = any("leader election lost" in p.read_text() for p in self.logs)
        return self.outcome

    async def _scenario(self, sim: SimCluster, proxy: FaultProxy, config: Path, deadline: float) -> None:
        first = await self.start_scheduler(config)
        self.note("scheduler started")
        await until(lambda: lease_holder(sim), 30, "a leader")
        self.note(f"leader: {lease_holder(sim).split('_')[0]}")
        third = max(1, self.pods // 3)
        await create_pods(sim, 0, third)
        await until(lambda: self._decided(sim) >= third // 2, deadline, "the first pods decided")
        first.send_signal(signal.SIGKILL)  # while it is still working through the first third
        await first.wait()
        self.note(f"scheduler killed with SIGKILL ({self._decided(sim)} pods decided)")
        await self.start_scheduler(config)
        killed_at, decided = time.monotonic(), self._decided(sim)
        await create_pods(sim, third, 2 * third)
        await self._recovery(sim, "after the kill", killed_at, decided, deadline)
        await sim.restart(down_for=1.0)
        restarted_at, decided = time.monotonic(), self._decided(sim)
        self.note("API server restarted (down 1s, watch history gone)")
        await create_pods(sim, 2 * third, self.pods)
        self.note("all pods created")
        await self._recovery(sim, "after the API server restart", restarted_at, decided, deadline)
        proxy.blackhole(2.5)  # shorter than renewDeadline: the leader must keep the lease
        self.note("network blackholed for 2.5s")
        await until(
            lambda: proxy.held == 0 and time.monotonic() > proxy.healed_at, deadline, "the network heals"
        )
        await until(lambda: self._settled(sim), deadline, "every pod bound or reported")
        self.note("every pod bound or reported unschedulable")

    async def _recovery(
        self, sim: SimCluster, after: str, since: float, decided: int, deadline: float
    ) -> None:
        """Wait for a decision beyond the ``decided`` counted at the fault (counted there, not
        here: the scheduler may decide every pod created meanwhile before this looks) and note how
        long it took from the fault."""
        await until(lambda: self._decided(sim) > decided, deadline, f"progress {after}")
        self.note(f"first decision {after}: {time.monotonic() - since:.1f}s after the fault")

    def _decided(self, sim: SimCluster) -> int:
        self._measure(sim)
        return self.outcome.bound + self.outcome.reported

    def _settled(self, sim: SimCluster) -> bool:
        self._measure(sim)
        return self.outcome.nothing_lost or (
            self.outcome.bound + self.outcome.reported == self.pods and not self.outcome.lost
        )

    def _measure(self, sim: SimCluster) -> None:
        pods = sim.store.list("pods", NAMESPACE)
        failed_events = {
            (e.get("regarding") or {}).get("uid")
            for e in sim.store.list("events.events.k8s.io", NAMESPACE)
            if e.get("reason") == "FailedScheduling"
        }
        per_node: Counter[str] = Counter()
        bound = reported = 0
        lost = []
        for pod in pods:
            node = pod["spec"].get("nodeName")
            if node:
                bound += 1
                per_node[node] += 1
            elif _unschedulable(pod) and pod["metadata"]["uid"] in failed_events:
                reported += 1
            else:
                lost.append(pod["metadata"]["name"])
        outcome = self.outcome
        outcome.bound, outcome.reported, outcome.lost = bound, reported, lost
        outcome.overcommitted = {node: count for node, count in per_node.items() if count > NODE_CPU}
        outcome.scheduler_alive = bool(self.processes) and self.processes[-1].returncode is None
        outcome.leader = lease_holder(sim)

    async def _stop_all(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 15)
            if process.returncode is None:
                process.kill()


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def lease_holder(sim: SimCluster) -> str:
    lease = sim.store.get("leases", NAMESPACE, "pyscheduler")
    return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""


async def create_pods(sim: SimCluster, start: int, stop: int) -> None:
    for i in range(start, stop):
        await sim.create("pods", pod_manifest(f"soak-{i:04d}"))
        if i % 10 == 9:
            await asyncio.sleep(0.1)  # arrivals over time (100/s), not one burst


async def soak(nodes: int, pods: int, cut_every: float = 3.0, deadline: float = 180.0) -> Outcome:
    with tempfile.TemporaryDirectory() as workdir:
        runner = Soak(nodes, pods, cut_every, Path(workdir))
        try:
            return await runner.run(deadline)
        except TimeoutError as exc:
            runner.note(str(exc))
            return runner.outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--cut-every", type=float, default=3.0)
    parser.add_argument("--deadline", type=float, default=180.0)
    args = parser.parse_args(argv)
    outcome = asyncio.run(soak(args.nodes, args.pods, args.cut_every, args.deadline))
    print(outcome.describe())
    return 0 if outcome.nothing_lost and outcome.scheduler_alive else 1


if __name__ == "__main__":
    sys.exit(main())
