"""DRA on the local endpoint: a fleet with one GPU node, claim templates and the pods using them,
the recorded pools (a partitioned GPU, a shared NIC), and what a pod's claim was given."""

from __future__ import annotations

from typing import Any

from simcluster import SimCluster
from tests.support.cluster import pod, pod_manifest, scheduled_condition

DRIVER = "gpu.example.com"
UNSATISFIABLE = (
    "0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, preemption: "
    "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def fleet(*device_sets: dict[str, Any]) -> list[dict[str, Any]]:
    """One GPU node with ``device_sets`` and two nodes without devices."""
    return [
        {"namePrefix": "gpu-", "count": 1, "devices": list(device_sets)},
        {"namePrefix": "cpu-", "count": 2},
    ]


def template(name: str, *selectors: str, count: int = 1, constraints: list | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": DRIVER, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    devices: dict[str, Any] = {"requests": [{"name": "g", "exactly": exactly}]}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": devices}},
    }


def claim_pod(name: str, template_name: str) -> dict[str, Any]:
    manifest = pod_manifest(name)
    manifest["spec"]["resourceClaims"] = [{"name": "g", "resourceClaimTemplateName": template_name}]
    manifest["spec"]["containers"][0]["resources"]["claims"] = [{"name": "g"}]
    return manifest


def claim_of(sim: SimCluster, pod_name: str) -> dict[str, Any] | None:
    statuses = ((pod(sim, pod_name) or {}).get("status") or {}).get("resourceClaimStatuses") or ()
    for status in statuses:
        if status.get("resourceClaimName"):
            return sim.store.get("resourceclaims", "default", status["resourceClaimName"])
    return None


def devices_of(sim: SimCluster, pod_name: str) -> list[str]:
    claim = claim_of(sim, pod_name) or {}
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [r["device"] for r in (allocation.get("devices") or {}).get("results") or ()]


def pending_message(sim: SimCluster, pod_name: str) -> str:
    condition = scheduled_condition(sim, pod_name) or {}
    return condition.get("message", "") if condition.get("status") == "False" else ""


GPU = "gpu.example.com"
NIC = "nic.example.com"


def partition(name: str, memory: str, profile: str) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"profile": {"string": profile}},
        "consumesCounters": [{"counterSet": "gpu", "counters": {"memory": {"value": memory}}}],
    }


async def publish_partitioned_gpu(sim: SimCluster) -> None:
    """The recorded pool: a counter set of 40Gi and three devices consuming it, on gpu-0000."""
    pool = {"name": "gpu-0000", "generation": 1, "resourceSliceCount": 2}
    counters = {"name": "gpu", "counters": {"memory": {"value": "40Gi"}}}
    await sim.create(
        "resourceslices",
        {
            "metadata": {"name": "gpu-0000-counters"},
            "spec": {"driver": GPU, "pool": pool, "nodeName": "gpu-0000", "sharedCounters": [counters]},
        },
    )
    devices = [
        partition("full", "40Gi", "whole"),
        partition("part-a", "20Gi", "half"),
        partition("part-b", "20Gi", "half"),
    ]
    await sim.create(
        "resourceslices",
        {
            "metadata": {"name": "gpu-0000-devices"},
            "spec": {"driver": GPU, "pool": pool, "nodeName": "gpu-0000", "devices": devices},
        },
    )
    await sim.create(
        "deviceclasses",
        {
            "metadata": {"name": GPU},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]},
        },
    )


SHARED_NIC = {
    "driver": NIC,
    "count": 1,
    "allowMultipleAllocations": True,
    "capacity": {
        "bandwidth": {
            "value": "10G",
            "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}},
        }
    },
}
