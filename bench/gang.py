"""Gang scheduling (GenericWorkload + GangScheduling): whole pod groups on many nodes.

    python -m bench.gang [--nodes 1000] [--gangs 10] [--size 100] [--runs 3] [--endpoint]

Each gang is a scheduling.k8s.io/v1alpha2 PodGroup with ``minCount`` = its size. Its members
arrive one by one (held at PreEnqueue until the last one is there); then one pod-group cycle
places the whole gang and binds it (in memory). Prints, per run, the pods per second over all
gangs, the time from a gang's last member arriving to all its members bound (p50, p99), the CPU
per pod over those times (bench.gang_runs) and how long a gang's members took to arrive, with the
default profile and with one without default spreading (whose pods OpportunisticBatching can
sign); then the best and the median over ``--runs`` runs. ``--endpoint`` runs the default profile
through the local endpoint instead: the app in this process over HTTP against a SimCluster
without kubelet, the pods created through the API and bound by POST pods/binding, with the
client's rate limits lifted (at the default 50 qps a gang's 100 bindings alone take 2 s). Figures
are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import Harness, bound_on_endpoint, make_node, make_pod, until
from bench.gang_runs import GangRun, over_runs
from scheduler.api import Pod
from scheduler.app import SchedulerApp
from scheduler.config import SchedulerConfiguration, default_config, parse_config
from scheduler.features import FeatureGates
from scheduler.framework import ApiResponse
from scheduler.plugins.gangscheduling import PODGROUPS
from scheduler.serving.options import ServingOptions
from scheduler.testing.configs import no_default_spread_config
from simcluster import SimCluster

GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
NO_DEFAULT_SPREAD = no_default_spread_config()


class PodGroupLister:
    """The PodGroup informer's store, as the plugins read it."""

    def __init__(self) -> None:
        self.groups: dict[str, Mapping[str, Any]] = {}

    def get(self, key: str) -> Mapping[str, Any] | None:
        return self.groups.get(key)

    def list(self) -> list[Mapping[str, Any]]:
        return list(self.groups.values())


class StatusOnly:
    """The API as far as the pod-group cycle calls it here: PodGroup status writes succeed."""

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        if method == "PATCH" and path.endswith("/status"):
            return ApiResponse(200, {})
        raise RuntimeError(f"no API server in the benchmark ({method} {path})")


class Queueing:
    """What the pod informer's handler does with a new pending pod: queue it."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue

    def on_add(self, pod: Pod) -> None:
        self.queue.add(pod)


def gang_group(name: str, size: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "generation": 1},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
    }


def member(gang: str, i: int) -> Pod:
    pod = make_pod(f"{gang}-{i:03d}", {"gang": gang}, cpu="1", memory="1Gi")
    pod.pod_group = gang
    return pod


async def run(
    nodes: int, gangs: int, size: int, config: SchedulerConfiguration
) -> tuple[GangRun, list[float]]:
    """The gangs' figures, and per gang the time its members took to arrive (queueing and
    PreEnqueue re-checks)."""
    lister = PodGroupLister()
    harness = Harness(
        nodes, make_node, config=config, features=GATES, listers={PODGROUPS: lister}, client=StatusOnly()
    )
    cycle = harness.scheduler.pod_groups
    assert cycle is not None, "GenericWorkload is on"
    arrivals = cycle.members.handler(Queueing(harness.queue), harness.queue, wake_gangs=True)
    latencies: list[float] = []
    arrival_times: list[float] = []
    cpu = 0.0
    for g in range(gangs):
        name = f"gang-{g:02d}"
        lister.groups[f"default/{name}"] = gang_group(name, size)
        first = time.perf_counter()
        for i in range(size):
            arrivals.on_add(member(name, i))
        arrived, cpu_start = time.perf_counter(), time.process_time()  # the last member is in
        arrival_times.append(arrived - first)
        info = await harness.queue.pop()
        await harness.scheduler.attempt(info)
        await harness.scheduler.wait_for_bindings(60)
        latencies.append(time.perf_counter() - arrived)
        cpu += time.process_time() - cpu_start
    bound = harness.cache.assumed_count()
    if bound != gangs * size:
        print(f"  only {bound} of {gangs * size} pods were bound")
    return GangRun(gangs * size, latencies, cpu), arrival_times


async def run_on_endpoint(nodes: int, gangs: int, size: int) -> tuple[GangRun, list[float]]:
    """The same through the local endpoint: the app in this process, over HTTP, against a
    SimCluster without kubelet (the endpoint's own work counts in the figures)."""
    with tempfile.TemporaryDirectory() as workdir:
        async with SimCluster(nodes=nodes, kubelet=False, controllers=False) as sim:
            config = default_config(features=GATES)
            config.leader_election.leader_elect = False
            # client-side rate limits off: 100 bindings at the default 50 qps would be the figure
            config.client_connection.qps, config.client_connection.burst = 100_000.0, 100_000
            kubeconfig = sim.write_kubeconfig(Path(workdir) / "kubeconfig")
            serving = ServingOptions(bind_address="127.0.0.1", port=0, plain_http=True)
            app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=serving, features=GATES)
            task = asyncio.create_task(app.run())
            try:
                await until(app.ready, 120, "the scheduler ready")
                return await _gangs_through(sim, gangs, size)
            finally:
                app.shutting_down.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 30)


async def _gangs_through(sim: SimCluster, gangs: int, size: int) -> tuple[GangRun, list[float]]:
    latencies: list[float] = []
    arrival_times: list[float] = []
    cpu = 0.0
    for g in range(gangs):
        name = f"gang-{g:02d}"
        group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", **gang_group(name, size)}
        await sim.create("podgroups", group)
        names = [f"{name}-{i:03d}" for i in range(size)]
        first = time.perf_counter()
        for pod_name in names:
            await sim.create("pods", _member_manifest(pod_name, name))
        arrived, cpu_start = time.perf_counter(), time.process_time()
        await until(
            lambda names=names: all(bound_on_endpoint(sim, n) for n in names),
            120,
            "the gangs bound",
            interval=0.005,
        )
        latencies.append(time.perf_counter() - arrived)
        cpu += time.process_time() - cpu_start
        arrival_times.append(arrived - first)
    return GangRun(gangs * size, latencies, cpu), arrival_times


def _member_manifest(name: str, gang: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}}
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {"gang": gang}},
        "spec": {
            "schedulerName": "pyscheduler",
            "schedulingGroup": {"podGroupName": gang},
            "containers": [{"name": "c", "image": "nginx", "resources": resources}],
        },
    }


async def main(args: argparse.Namespace) -> None:
    shape = f"{args.gangs} gangs x {args.size} pods (1 cpu each) on {args.nodes} nodes (4 cpu each)"
    if args.endpoint:
        print(f"{shape}, through the local endpoint (CPU: the scheduler's and the endpoint's)")
        runs = []
        for _ in range(args.runs):
            gang_run, arrival_times = await run_on_endpoint(args.nodes, args.gangs, args.size)
            _print("default profile", args.size, gang_run, arrival_times)
            runs.append(gang_run)
        print(over_runs(runs))
        return
    print(f"{shape}, in process")
    for label, config in (
        ("default profile", default_config(features=GATES)),
        ("no default spreading", parse_config(NO_DEFAULT_SPREAD, features=GATES)),
    ):
        runs = []
        for _ in range(args.runs):
            gang_run, arrival_times = await run(args.nodes, args.gangs, args.size, config)
            _print(label, args.size, gang_run, arrival_times)
            runs.append(gang_run)
        print(over_runs(runs))


def _print(label: str, size: int, gang_run: GangRun, arrival_times: list[float]) -> None:
    print(
        f"  {label:<22} {gang_run.line()}; "
        f"a gang's {size} arrivals: p50 {statistics.median(arrival_times) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=10)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--endpoint", action="store_true", help="through the local endpoint (HTTP)")
    asyncio.run(main(parser.parse_args()))
