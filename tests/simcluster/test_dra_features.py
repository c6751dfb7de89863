"""The local endpoint serves v1.36's beta DRA fields with the API server's validation: counter sets
and devices consuming them, request policies of shared devices, binding conditions, and in a
claim's status the devices' conditions (dropped with their allocation)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from simcluster import SimCluster
from simcluster.errors import ApiError

SLICE = 'ResourceSlice.resource.k8s.io "s" is invalid: '
CLAIM = 'ResourceClaim.resource.k8s.io "c" is invalid: '


@pytest.fixture
async def sim() -> Any:
    async with SimCluster(nodes=1, kubelet=False) as cluster:
        yield cluster


def node_slice(devices: list[dict] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-0000", "generation": 1, "resourceSliceCount": 2},
            "nodeName": "node-0000",
            **spec,
        },
    }
    if devices is not None:
        body["spec"]["devices"] = devices
    return body


def counters(**values: str) -> dict[str, Any]:
    return {k: {"value": v} for k, v in values.items()}


def refused(sim: SimCluster, resource: str, body: dict[str, Any]) -> str:
    with pytest.raises(ApiError) as caught:
        sim.api.create(sim.api.resource(resource), None if resource == "resourceslices" else "default", body)
    assert caught.value.code == 422
    return caught.value.message


async def test_counter_sets_and_consuming_devices_are_stored_canonical(sim: SimCluster) -> None:
    stored = await sim.create(
        "resourceslices",
        node_slice(sharedCounters=[{"name": "gpu-0", "counters": counters(memory="40960Mi")}]),
    )
    assert stored["spec"]["sharedCounters"] == [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]
    part = {
        "name": "half",
        "consumesCounters": [{"counterSet": "gpu-0", "counters": counters(memory="20Gi")}],
    }
    other = copy.deepcopy(node_slice([part]))
    other["metadata"]["name"] = "t"
    stored = await sim.create("resourceslices", other)
    assert stored["spec"]["devices"][0]["consumesCounters"][0]["counterSet"] == "gpu-0"


def binding(conditions: list[str] | None, failures: list[str] | None) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "att"}
    if conditions is not None:
        device["bindingConditions"] = conditions
    if failures is not None:
        device["bindingFailureConditions"] = failures
    return device


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            node_slice([{"name": "d"}], sharedCounters=[{"name": "c", "counters": counters(m="1")}]),
            'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        ),
        (
            node_slice(sharedCounters=[{"name": "Gpu", "counters": counters(m="1")}]),
            'spec.sharedCounters[0].name: Invalid value: "Gpu": a lowercase RFC 1123 label must consist of',
        ),
        (node_slice(sharedCounters=[{"name": "gpu"}]), "spec.sharedCounters[0].counters: Required value"),
        (
            node_slice(sharedCounters=[{"name": f"s{i}", "counters": counters(m="1")} for i in range(9)]),
            "spec.sharedCounters: Too many: 9: must have at most 8 items",
        ),
        (
            node_slice(sharedCounters=[{"name": "s", "counters": counters(m="1")}] * 2),
            'spec.sharedCounters[1]: Duplicate value: "s"',
        ),
        (
            node_slice(sharedCounters=[{"name": "s", "counters": counters(Mem="1")}]),
            'spec.sharedCounters[0].counters: Invalid value: "Mem": a lowercase RFC 1123 label',
        ),
        (
            node_slice(
                [
                    {
                        "name": "d",
                        "consumesCounters": [
                            {"counterSet": f"s{i}", "counters": counters(m="1")} for i in range(3)
                        ],
                    }
                ]
            ),
            "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items",
        ),
        (
            node_slice(
                [
                    {"name": f"d{i}", "consumesCounters": [{"counterSet": "s", "counters": counters(m="1")}]}
                    for i in range(65)
                ]
            ),
            "spec.devices: Too many: 65: must have at most 64 items",
        ),
        (
            node_slice([binding(["a", "b", "c", "d", "e"], ["f"])]),
            "spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items",
        ),
        (
            node_slice([binding(["a"], ["f", "g", "h", "i", "j"])]),
            "spec.devices[0].bindingFailureConditions: Too many: 5: must have at most 4 items",
        ),
        (
            node_slice([binding(["attached"], ["attached"])]),
            'spec.devices[0].bindingFailureConditions[0]: Invalid value: "attached": '
            "bindingFailureConditions must not overlap with bindingConditions",
        ),
        (
            node_slice([binding(["attached"], None)]),
            "spec.devices[0].bindingFailureConditions: Invalid value: null: "
            "bindingFailureConditions are required to use bindingConditions",
        ),
        (
            node_slice([binding(["not valid"], ["failed"])]),
            'spec.devices[0].bindingConditions[0]: Invalid value: "not valid": name part must consist of',
        ),
        (
            node_slice([{"name": "d", "nodeName": "node-0000"}]),
            "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be "
            "set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ),
        (
            node_slice(
                [{"name": "d", "capacity": {"bw": {"value": "10G", "requestPolicy": {"default": "1G"}}}}]
            ),
            "spec.devices[0].capacity[bw].requestPolicy: Forbidden: allowMultipleAllocations must be true",
        ),
        (
            node_slice(
                [
                    {
                        "name": "d",
                        "allowMultipleAllocations": True,
                        "capacity": {"bw": {"value": "10G", "requestPolicy": {"validRange": {"min": "1G"}}}},
                    }
                ]
            ),
            "spec.devices[0].capacity[bw].requestPolicy.default: Required value: "
            "required when validRange is defined",
        ),
        (
            node_slice(
                [
                    {
                        "name": "d",
                        "allowMultipleAllocations": True,
                        "capacity": {
                            "bw": {
                                "value": "10G",
                                "requestPolicy": {
                                    "default": "1500M",
                                    "validRange": {"min": "1G", "step": "1G"},
                                },
                            }
                        },
                    }
                ]
            ),
            'spec.devices[0].capacity[bw].requestPolicy.validRange.step: Invalid value: "1500M": '
            "value is not a multiple of a given step (1G) from (1G)",
        ),
        (
            node_slice(
                [
                    {
                        "name": "d",
                        "allowMultipleAllocations": True,
                        "capacity": {
                            "bw": {
                                "value": "10G",
                                "requestPolicy": {"default": "2G", "validValues": ["1G", "5G"]},
                            }
                        },
                    }
                ]
            ),
            'spec.devices[0].capacity[bw].requestPolicy.validValues: Invalid value: "2G": '
            "default value is not valid according to the requestPolicy",
        ),
    ],
    ids=[
        "counters and devices",
        "counter set name",
        "no counters",
        "nine counter sets",
        "a set twice",
        "counter name",
        "three consumptions",
        "65 devices consuming counters",
        "five binding conditions",
        "five failure conditions",
        "overlapping conditions",
        "conditions without failure conditions",
        "condition type",
        "device node without per-device selection",
        "policy on an exclusive device",
        "range without default",
        "default off the step",
        "default not a valid value",
    ],
)
async def test_bad_slices_are_refused_naming_the_field(
    sim: SimCluster, body: dict[str, Any], message: str
) -> None:
    assert refused(sim, "resourceslices", body).startswith(SLICE + message)


def claim(capacity: dict[str, str] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "nic.example.com"}
    if capacity is not None:
        exactly["capacity"] = {"requests": capacity}
    return {
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": exactly}]}},
    }


async def test_a_claims_capacity_requests_are_stored_canonical(sim: SimCluster) -> None:
    stored = await sim.create("resourceclaims", claim({"bandwidth": "4000M"}), "default")
    assert stored["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {
        "requests": {"bandwidth": "4G"}
    }
    message = refused(sim, "resourceclaims", {**claim({"bandwidth": "lots"}), "metadata": {"name": "d"}})
    assert 'spec.devices.requests[0].exactly.capacity.requests[bandwidth]: Invalid value: "lots"' in message


def result(device: str = "att", **extra: Any) -> dict[str, Any]:
    return {"request": "nic", "driver": "gpu.example.com", "pool": "node-0000", "device": device, **extra}


def condition(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": "Attached",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        **extra,
    }


def write_status(sim: SimCluster, status: dict[str, Any]) -> dict[str, Any]:
    current = sim.store.get("resourceclaims", "default", "c")
    assert current is not None
    body = {**current, "status": status}
    return json.loads(sim.api.update(sim.api.resource("resourceclaims"), "default", "c", body, "status").raw)


async def test_device_conditions_are_checked_and_go_with_their_allocation(sim: SimCluster) -> None:
    await sim.create("resourceclaims", claim(), "default")
    allocation = {
        "devices": {"results": [result(bindingConditions=["attached"], bindingFailureConditions=["failed"])]}
    }
    write_status(sim, {"allocation": allocation})
    device = {
        "driver": "gpu.example.com",
        "pool": "node-0000",
        "device": "att",
        "conditions": [condition("attached")],
    }
    stored = write_status(sim, {"allocation": allocation, "devices": [device]})
    assert stored["status"]["devices"][0]["conditions"][0]["type"] == "attached"
    with pytest.raises(ApiError) as caught:
        write_status(sim, {"allocation": allocation, "devices": [{**device, "device": "other"}]})
    assert caught.value.message.startswith(
        CLAIM
        + 'status.devices[0]: Invalid value: "gpu.example.com/node-0000/other": '
        + "must be an allocated device in the claim"
    )
    with pytest.raises(ApiError) as caught:
        write_status(
            sim,
            {
                "allocation": allocation,
                "devices": [{**device, "conditions": [condition("attached", status="Yes")]}],
            },
        )
    assert 'status.devices[0].conditions[0].status: Unsupported value: "Yes"' in caught.value.message
    # deallocated: the device's status goes with it
    cleared = write_status(sim, {})
    assert "devices" not in (cleared.get("status") or {})


async def test_a_new_allocations_shares_and_consumed_capacity_are_checked(sim: SimCluster) -> None:
    await sim.create("resourceclaims", claim({"bandwidth": "4G"}), "default")
    share = "4b7c5fc4-27c4-4c5b-a8d9-7b1a4d9f6f3e"
    stored = write_status(
        sim,
        {
            "allocation": {
                "devices": {"results": [result(shareID=share, consumedCapacity={"bandwidth": "4000M"})]}
            }
        },
    )
    assert stored["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "4G"}
    write_status(sim, {})
    with pytest.raises(ApiError) as caught:
        write_status(sim, {"allocation": {"devices": {"results": [result(shareID="NOT-A-UID")]}}})
    assert 'status.allocation.devices.results[0].shareID: Invalid value: "NOT-A-UID"' in caught.value.message
