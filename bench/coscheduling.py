"""Coscheduling (scheduler-plugins' PodGroup CRD): whole gangs through the local endpoint.

    python -m bench.coscheduling [--nodes 1000] [--gangs 10] [--size 100] [--runs 3]

The app runs in this process over HTTP against a SimCluster without kubelet, with the PodGroup
CRD the chart ships and the profile scheduler-plugins documents (Coscheduling, PrioritySort
off). Each gang is a PodGroup with ``minMember`` = its size; its members are created one by one
through the API and bound by POST pods/binding (client rate limits lifted). Prints the pods per
second over all gangs, the time from a gang's last member being created to all its members bound
(p50, p99) and the CPU per pod over those times (the scheduler's and the endpoint's: both run in
this process; bench.gang_runs), per run and then the best and the median over ``--runs`` runs.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import bound_on_endpoint, until
from bench.gang_runs import GangRun, over_runs
from scheduler.app import SchedulerApp
from scheduler.config import parse_config
from scheduler.plugins.coscheduling import POD_GROUP_LABEL, PODGROUPS, CoschedulingArgs
from scheduler.serving.options import ServingOptions
from simcluster import SimCluster

CRD = yaml.safe_load(
    (
        Path(__file__).resolve().parents[1] / "helm/pyscheduler/crds/scheduling.x-k8s.io_podgroups.yaml"
    ).read_text()
)
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    # client-side rate limits off: 100 bindings at the default 50 qps would be the figure
    "clientConnection": {"qps": 100000, "burst": 100000},
    "profiles": [
        {
            "schedulerName": "pyscheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
            },
        }
    ],
}


async def run(nodes: int, gangs: int, size: int) -> GangRun:
    with tempfile.TemporaryDirectory() as workdir:
        async with SimCluster(nodes=nodes, kubelet=False, controllers=False) as sim:
            await sim.create("customresourcedefinitions", copy.deepcopy(CRD))
            await until(
                lambda: "podgroups.scheduling.x-k8s.io" in sim.api.kinds.by_store_name,
                300,
                "the PodGroup CRD served",
            )
            config = parse_config(CONFIG, {"Coscheduling": CoschedulingArgs})
            kubeconfig = sim.write_kubeconfig(Path(workdir) / "kubeconfig")
            serving = ServingOptions(bind_address="127.0.0.1", port=0, plain_http=True)
            app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=serving, watches=[PODGROUPS])
            task = asyncio.create_task(app.run())
            try:
                await until(app.ready, 300, "the scheduler ready")
                return await _gangs(sim, gangs, size)
            finally:
                app.shutting_down.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 30)


async def _gangs(sim: SimCluster, gangs: int, size: int) -> GangRun:
    latencies: list[float] = []
    cpu = 0.0
    for g in range(gangs):
        name = f"gang-{g:02d}"
        group = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": size},
        }
        await sim.create("podgroups.scheduling.x-k8s.io", group)
        names = [f"{name}-{i:03d}" for i in range(size)]
        for pod_name in names:
            await sim.create("pods", _member(pod_name, name))
        arrived, cpu_start = time.perf_counter(), time.process_time()
        await until(
            lambda names=names: all(bound_on_endpoint(sim, n) for n in names),
            300,
            "the gangs bound",
            interval=0.005,
        )
        latencies.append(time.perf_counter() - arrived)
        cpu += time.process_time() - cpu_start
    return GangRun(gangs * size, latencies, cpu)


def _member(name: str, gang: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}}
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {POD_GROUP_LABEL: gang}},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [{"name": "c", "image": "nginx", "resources": resources}],
        },
    }


async def main(args: argparse.Namespace) -> None:
    print(
        f"{args.gangs} gangs x {args.size} pods (1 cpu each) on {args.nodes} nodes (4 cpu each), "
        "Coscheduling (CPU: the scheduler's and the endpoint's)"
    )
    runs = []
    for _ in range(args.runs):
        runs.append(await run(args.nodes, args.gangs, args.size))
        print(f"  {runs[-1].line()}")
    print(over_runs(runs))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=10)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
