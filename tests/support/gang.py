"""The scheduler in process against the local endpoint, with the Workload API's gates on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.features import FeatureGates
from simcluster import SimCluster
from tests.support.cluster import RunningApps, local_serving, pod_manifest

GANG_GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
TOPOLOGY_GATES = FeatureGates.parse(
    "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
)
WORKLOAD_API = "scheduling.k8s.io/v1alpha2"

StartScheduler = Callable[..., Awaitable[SchedulerApp]]
NewCluster = Callable[..., Awaitable[SimCluster]]


def pod_group(name: str, min_count: int | None, topology_key: str = "") -> dict[str, Any]:
    """A PodGroup with a gang policy of ``min_count`` (a basic policy for None)."""
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def member(name: str, group: str, cpu: str = "3", **kw: Any) -> dict[str, Any]:
    return pod_manifest(name, cpu=cpu, schedulingGroup={"podGroupName": group}, **kw)


def node(name: str, cpu: str = "4", labels: dict[str, str] | None = None) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def stored(sim: SimCluster, resource: str, name: str) -> dict[str, Any]:
    return sim.store.get(resource, "default", name) or {}


def node_of(sim: SimCluster, name: str) -> str:
    return str((stored(sim, "pods", name).get("spec") or {}).get("nodeName") or "")


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == kind), None)


def pod_condition(sim: SimCluster, name: str) -> dict[str, Any] | None:
    return condition(stored(sim, "pods", name), "PodScheduled")


def group_condition(sim: SimCluster, name: str) -> dict[str, Any] | None:
    return condition(stored(sim, "podgroups", name), "PodGroupScheduled")


@pytest.fixture
async def new_cluster() -> AsyncIterator[NewCluster]:
    """Start local endpoints; stopped at teardown, after the schedulers using them."""
    clusters: list[SimCluster] = []

    async def start(**kw: Any) -> SimCluster:
        cluster = SimCluster(**kw)
        clusters.append(cluster)
        return await cluster.start()

    yield start

    for cluster in clusters:
        await cluster.stop()


@pytest.fixture
async def start_scheduler(new_cluster: NewCluster, tmp_path: Any) -> AsyncIterator[StartScheduler]:
    """Start the app in process against a SimCluster with ``features``; stopped at teardown."""

    running_apps = RunningApps()

    async def start(cluster: SimCluster, features: FeatureGates = GANG_GATES, **kw: Any) -> SchedulerApp:
        config = default_config(features=features)
        config.leader_election.leader_elect = False
        config.pod_initial_backoff_seconds = 0.2
        config.pod_max_backoff_seconds = 1.0
        kubeconfig = cluster.write_kubeconfig(tmp_path / f"kubeconfig-{len(running_apps.started)}")
        app = SchedulerApp(
            config, kubeconfig=str(kubeconfig), serving=local_serving(), features=features, **kw
        )
        return await running_apps.run(app)

    yield start
    await running_apps.stop()
