"""Gang scheduling with Coscheduling on the local endpoint: the CRD as shipped, the scheduler
with scheduler-plugins' documented profile, PodGroups and their pods."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app import SchedulerApp
from scheduler.config.load import parse_config
from scheduler.plugins.coscheduling import POD_GROUP_LABEL, CoschedulingArgs
from simcluster import SimCluster
from tests.support.cluster import RunningApps, eventually, local_serving, pod_manifest

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "helm" / "pyscheduler" / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
CRD = yaml.safe_load(CRD_FILE.read_text())
PODGROUPS = "podgroups.scheduling.x-k8s.io"  # the local endpoint's store name of the kind


def config(**args: Any) -> dict[str, Any]:
    """scheduler-plugins' documented way to enable the plugin (one QueueSort per profile)."""
    profile: dict[str, Any] = {
        "schedulerName": "pyscheduler",
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
        },
    }
    if args:
        profile["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
        "profiles": [profile],
    }


def podgroup(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, **spec},
    }


def member(name: str, group: str, cpu: str = "3", **spec: Any) -> dict[str, Any]:
    return pod_manifest(name, cpu=cpu, labels={POD_GROUP_LABEL: group}, **spec)


async def install_crd(sim: SimCluster) -> None:
    await sim.create("customresourcedefinitions", copy.deepcopy(CRD))  # the endpoint fills in defaults
    await eventually(lambda: PODGROUPS in sim.api.kinds.by_store_name, timeout=5)


def node_of(sim: SimCluster, name: str) -> str:
    pod = sim.store.get("pods", "default", name) or {}
    return (pod.get("spec") or {}).get("nodeName") or ""


def bound(sim: SimCluster, names: list[str]) -> list[str]:
    return [name for name in names if node_of(sim, name)]


def failed_scheduling(sim: SimCluster, name: str) -> list[str]:
    """The notes of the FailedScheduling events about pod ``name``."""
    return [
        e.get("note") or ""
        for e in sim.store.list("events.events.k8s.io", namespace="default")
        if (e.get("regarding") or {}).get("name") == name and e.get("reason") == "FailedScheduling"
    ]


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    """Four nodes of 4 CPUs (each holds one 3-CPU member), with the PodGroup CRD installed."""
    async with SimCluster(nodes=4, kubelet=True, bookmark_interval=0.5) as cluster:
        await install_crd(cluster)
        yield cluster


Starter = Callable[..., Awaitable[SchedulerApp]]


@pytest.fixture
async def scheduler(tmp_path: Path) -> AsyncIterator[Starter]:
    """``await scheduler(sim, **args)`` starts the scheduler with Coscheduling's args."""

    running_apps = RunningApps()

    async def start(cluster: SimCluster, **args: Any) -> SchedulerApp:
        parsed = parse_config(config(**args), {"Coscheduling": CoschedulingArgs})
        kubeconfig = cluster.write_kubeconfig(tmp_path / f"kubeconfig-{len(running_apps.started)}")
        app = SchedulerApp(
            parsed,
            kubeconfig=str(kubeconfig),
            serving=local_serving(),
            watches=["scheduling.x-k8s.io/v1alpha1/podgroups"],
        )
        return await running_apps.run(app)

    yield start
    await running_apps.stop()
