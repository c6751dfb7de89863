"""Extended resources backed by DRA against the local endpoint: a pod asking for
``example.com/gpu`` gets a device through the special claim the scheduler creates for it."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.app import SchedulerApp
from scheduler.config import parse_config
from simcluster import SimCluster
from tests.support.cluster import RunningApps, eventually, local_serving, node_of, pod, pod_manifest
from tests.support.dra import DRIVER, UNSATISFIABLE, fleet, pending_message

GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        "extendedResourceName": "example.com/gpu",
    },
}


def gpu_pod(name: str) -> dict[str, Any]:
    manifest = pod_manifest(name)
    manifest["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    return manifest


def special_claim(sim: SimCluster, pod_name: str) -> dict[str, Any] | None:
    status = ((pod(sim, pod_name) or {}).get("status") or {}).get("extendedResourceClaimStatus") or {}
    name = status.get("resourceClaimName")
    return sim.store.get("resourceclaims", "default", name) if name else None


def devices_of(sim: SimCluster, pod_name: str) -> list[str]:
    allocation = ((special_claim(sim, pod_name) or {}).get("status") or {}).get("allocation") or {}
    return [r["device"] for r in (allocation.get("devices") or {}).get("results") or ()]


@pytest.fixture
async def gpus() -> Any:
    devices = [{"driver": DRIVER, "count": 2, "namePrefix": "gpu-", "attributes": {"memory": 40}}]
    async with SimCluster(node_template=fleet(*devices), kubelet=True, bookmark_interval=0.5) as cluster:
        await cluster.create("deviceclasses", GPU_CLASS)
        yield cluster


async def test_a_pod_asking_for_an_extended_resource_gets_a_device_through_its_own_claim(
    gpus, start_scheduler
):
    await start_scheduler(gpus)
    await gpus.create("pods", gpu_pod("first"))
    await eventually(lambda: node_of(gpus, "first") == "gpu-0000")
    first = pod(gpus, "first") or {}
    status = first["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [
        {"containerName": "app", "resourceName": "example.com/gpu", "requestName": "container-0-request-1"}
    ]
    claim = special_claim(gpus, "first") or {}
    meta = claim["metadata"]
    assert meta["name"].startswith("first-extended-resources-")
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "first",
            "uid": first["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert meta["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-1",
            "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
        }
    ]
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "first", "uid": first["metadata"]["uid"]}
    ]
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert result["request"] == "container-0-request-1" and result["driver"] == DRIVER


async def test_two_pods_never_share_a_device_and_deleting_one_frees_it(gpus, start_scheduler):
    await start_scheduler(gpus)
    for name in ("p1", "p2", "p3"):
        await gpus.create("pods", gpu_pod(name))
    await eventually(lambda: node_of(gpus, "p1") and node_of(gpus, "p2"))
    assert sorted(devices_of(gpus, "p1") + devices_of(gpus, "p2")) == ["gpu-0", "gpu-1"]
    assert await eventually(lambda: pending_message(gpus, "p3")) == UNSATISFIABLE
    assert special_claim(gpus, "p3") is None

    # the special claim goes with its pod (it owns it), and its device goes to the waiting pod
    freed = devices_of(gpus, "p1")
    gone = (special_claim(gpus, "p1") or {})["metadata"]["name"]
    gpus.api.delete(gpus.api.resource("pods"), "default", "p1", {"gracePeriodSeconds": 0})
    await eventually(lambda: gpus.store.get("resourceclaims", "default", gone) is None, timeout=30)
    await eventually(lambda: node_of(gpus, "p3") == "gpu-0000", timeout=30)
    assert devices_of(gpus, "p3") == freed


async def test_a_node_advertising_the_resource_keeps_the_classic_accounting(start_scheduler):
    # no devices anywhere; one node has the resource in allocatable (a device plugin's)
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110", "example.com/gpu": "1"}
    template = [{"namePrefix": "plugin-", "count": 1, "capacity": capacity}]
    async with SimCluster(node_template=template, kubelet=True, bookmark_interval=0.5) as sim:
        await sim.create("deviceclasses", GPU_CLASS)
        await start_scheduler(sim)
        await sim.create("pods", gpu_pod("p1"))
        await eventually(lambda: node_of(sim, "p1") == "plugin-0000")
        assert "extendedResourceClaimStatus" not in (pod(sim, "p1") or {}).get("status", {})
        assert sim.store.list("resourceclaims") == []
        await sim.create("pods", gpu_pod("p2"))
        assert await eventually(lambda: pending_message(sim, "p2")) == (
            # DynamicResources' PostFilter still speaks: the pod had a special claim in memory
            "0/1 nodes are available: 1 Insufficient example.com/gpu. still not schedulable, preemption: "
            "0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )


def most_allocated_by_gpu() -> Any:
    """The default profile, NodeResourcesFit scoring MostAllocated by the gpu alone."""
    args = {
        "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "example.com/gpu", "weight": 1}]}
    }
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [
                {"schedulerName": "pyscheduler", "pluginConfig": [{"name": "NodeResourcesFit", "args": args}]}
            ],
        }
    )
    config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds = 0.2, 1.0
    return config


async def test_scoring_by_the_extended_resource_counts_each_nodes_devices(tmp_path):
    """Three nodes of four GPUs: MostAllocated by the gpu packs the pods on the node whose
    devices are already taken, which only counting the devices tells apart (else all tie)."""
    template = [
        {"namePrefix": "gpu-", "count": 3, "devices": [{"driver": DRIVER, "count": 4, "namePrefix": "gpu-"}]}
    ]
    apps = RunningApps()
    async with SimCluster(node_template=template, kubelet=True, bookmark_interval=0.5) as sim:
        await sim.create("deviceclasses", GPU_CLASS)
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        await apps.run(
            SchedulerApp(most_allocated_by_gpu(), kubeconfig=str(kubeconfig), serving=local_serving())
        )
        try:
            placed = []
            for name in ("p1", "p2", "p3", "p4"):
                await sim.create("pods", gpu_pod(name))
                placed.append(await eventually(lambda name=name: node_of(sim, name)))  # type: ignore[misc]
                # the next pod is decided once this one's devices are known to be taken
                await eventually(lambda name=name: special_claim(sim, name) is not None)
            assert len(set(placed)) == 1, placed
            assert sorted(d for name in ("p1", "p2", "p3", "p4") for d in devices_of(sim, name)) == [
                "gpu-0",
                "gpu-1",
                "gpu-2",
                "gpu-3",
            ]
        finally:
            await apps.stop()
