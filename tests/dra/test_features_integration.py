"""The real scheduler against the local endpoint, with v1.36's beta DRA features: the three
outcomes recorded on a v1.36.2 control plane (kube-scheduler, default profile), byte for byte:
a partitioned GPU, a shared NIC, and a device attached before its pod binds."""

from __future__ import annotations

from typing import Any

from scheduler.api.quantity import Quantity
from scheduler.app import SchedulerApp
from simcluster import SimCluster
from tests.support.cluster import eventually, node_of, pod, scheduled_condition
from tests.support.dra import (
    GPU,
    NIC,
    SHARED_NIC,
    UNSATISFIABLE,
    claim_of,
    claim_pod,
    devices_of,
    fleet,
    pending_message,
    publish_partitioned_gpu,
)

FABRIC = "fabric.example.com"


def template(
    name: str, driver: str, selector: str = "", capacity: dict[str, str] | None = None
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": driver}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": exactly}]}}},
    }


def consumed_of(sim: SimCluster, pod_name: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Per device of the pod's claim: its name, its share and what it consumes (by value)."""
    allocation = ((claim_of(sim, pod_name) or {}).get("status") or {}).get("allocation") or {}
    return [
        (
            r["device"],
            r.get("shareID", ""),
            {k: Quantity.parse(v).value for k, v in (r.get("consumedCapacity") or {}).items()},
        )
        for r in (allocation.get("devices") or {}).get("results") or ()
    ]


async def test_a_partitioned_gpu_gives_its_parts_and_refuses_the_whole(start_scheduler) -> None:
    async with SimCluster(node_template=fleet(), kubelet=True, bookmark_interval=0.5) as sim:
        await publish_partitioned_gpu(sim)
        await start_scheduler(sim)
        profile = f'device.attributes["{GPU}"].profile == '
        await sim.create("resourceclaimtemplates", template("part", GPU, profile + '"half"'))
        await sim.create("resourceclaimtemplates", template("full", GPU, profile + '"whole"'))
        await sim.create("pods", claim_pod("first", "part"))
        await eventually(lambda: node_of(sim, "first") == "gpu-0000")
        assert devices_of(sim, "first") == ["part-a"]

        await sim.create("pods", claim_pod("whole", "full"))
        assert await eventually(lambda: pending_message(sim, "whole")) == UNSATISFIABLE

        await sim.create("pods", claim_pod("second", "part"))
        await eventually(lambda: node_of(sim, "second") == "gpu-0000")
        assert devices_of(sim, "second") == ["part-b"]
        assert node_of(sim, "whole") == ""


async def test_a_shared_nic_takes_two_4g_claims_then_only_the_default(start_scheduler) -> None:
    async with SimCluster(node_template=fleet(SHARED_NIC), kubelet=True, bookmark_interval=0.5) as sim:
        await start_scheduler(sim)
        await sim.create("resourceclaimtemplates", template("four", NIC, capacity={"bandwidth": "4G"}))
        await sim.create("resourceclaimtemplates", template("any", NIC))
        for name in ("p1", "p2"):
            await sim.create("pods", claim_pod(name, "four"))
        await eventually(lambda: node_of(sim, "p1") == node_of(sim, "p2") == "gpu-0000")
        first, second = consumed_of(sim, "p1"), consumed_of(sim, "p2")
        [(device_1, share_1, used_1)] = first
        [(device_2, share_2, used_2)] = second
        assert device_1 == device_2 == "nic-0"
        assert used_1 == used_2 == {"bandwidth": 4 * 10**9}
        assert share_1 and share_2 and share_1 != share_2

        await sim.create("pods", claim_pod("p3", "four"))
        assert await eventually(lambda: pending_message(sim, "p3")) == UNSATISFIABLE

        await sim.create("pods", claim_pod("small", "any"))
        await eventually(lambda: node_of(sim, "small") == "gpu-0000")
        [(device, share, used)] = consumed_of(sim, "small")
        assert (device, used) == ("nic-0", {"bandwidth": 10**9}) and share not in ("", share_1, share_2)


def attachable(**extra: Any) -> dict[str, Any]:
    return {
        "driver": FABRIC,
        "count": 1,
        "bindingConditions": ["attached"],
        "bindingFailureConditions": ["failed"],
        "bindsToNode": True,
        "attachDelay": 1.0,
        **extra,
    }


def binding_metrics(app: SchedulerApp, status: str) -> tuple[float, float]:
    """The fabric driver's binding-conditions allocations and waits with ``status``, as scraped."""
    labels = {"profile": app.config.profiles[0].scheduler_name, "driver": FABRIC, "status": status}
    registry = app.metrics.registry
    count = registry.get_sample_value("scheduler_dra_bindingconditions_allocations_total", labels)
    waits = registry.get_sample_value("scheduler_dra_bindingconditions_wait_duration_seconds_count", labels)
    return count or 0.0, waits or 0.0


async def test_the_pod_binds_only_once_its_device_is_attached(start_scheduler) -> None:
    async with SimCluster(node_template=fleet(attachable()), kubelet=True, bookmark_interval=0.5) as sim:
        app = await start_scheduler(sim)
        await sim.create("resourceclaimtemplates", template("fabric", FABRIC))
        await sim.create("pods", claim_pod("p", "fabric"))

        def reserved() -> bool:
            status = (claim_of(sim, "p") or {}).get("status") or {}
            return bool(status.get("allocation") and status.get("reservedFor"))

        await eventually(reserved)
        claim = claim_of(sim, "p") or {}
        assert claim["status"]["reservedFor"][0]["name"] == "p"
        assert not (claim["status"].get("devices") or ())  # not attached yet
        assert node_of(sim, "p") == "" and scheduled_condition(sim, "p") is None
        assert (pod(sim, "p") or {})["status"].get("nominatedNodeName") == "gpu-0000"

        def attached() -> bool:
            devices = ((claim_of(sim, "p") or {}).get("status") or {}).get("devices") or ()
            return any(
                c["type"] == "attached" and c["status"] == "True" for d in devices for c in d["conditions"]
            )

        assert binding_metrics(app, "success") == (0.0, 0.0)  # still waiting
        await eventually(attached)
        await eventually(lambda: node_of(sim, "p") == "gpu-0000", timeout=20)
        assert (scheduled_condition(sim, "p") or {}).get("status") == "True"
        assert binding_metrics(app, "success") == (1.0, 1.0)


async def test_a_failed_attachment_is_retried_after_the_claim_is_deallocated(start_scheduler) -> None:
    template_nodes = fleet(attachable(attachFails=True, attachDelay=0.2))
    async with SimCluster(node_template=template_nodes, kubelet=True, bookmark_interval=0.5) as sim:
        app = await start_scheduler(sim)
        await sim.create("resourceclaimtemplates", template("fabric", FABRIC))
        await sim.create("pods", claim_pod("p", "fabric"))
        seen: list[str] = []

        def messages() -> bool:
            condition = scheduled_condition(sim, "p") or {}
            message = condition.get("message", "")
            if message and message not in seen:
                seen.append(message)
            return len(seen) >= 2

        await eventually(messages, timeout=30)
        claim = claim_of(sim, "p") or {}
        name = claim["metadata"]["name"]
        assert seen[:2] == [
            'running PreBind plugin "DynamicResources": device binding failed: '
            f'claim={name}, reason=AttachFailed, message="the simulated driver could not attach the device"',
            "0/3 nodes are available: 3 resourceclaim not available on the node. deallocation of "
            "ResourceClaim completed, preemption: 0/3 nodes are available: 3 Preemption is not helpful "
            "for scheduling.",
        ]
        assert node_of(sim, "p") == ""
        failures, waits = binding_metrics(app, "failure")
        assert failures >= 1 and waits == failures  # one device per attempt
