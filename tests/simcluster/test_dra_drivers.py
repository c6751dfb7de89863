"""Simulated DRA drivers: devices declared in the node template become one ResourceSlice per
node and driver, and a DeviceClass per driver; slices go with their node."""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scheduler.testing.dra import partitioned_gpus
from simcluster import SimCluster
from simcluster.nodes import TemplateError, build_fleet

EXAMPLE = Path(__file__).resolve().parents[2] / "simcluster" / "nodes-example.yaml"
Obj = dict[str, Any]


async def eventually(check: Callable[[], Any]) -> Any:
    for _ in range(300):
        if value := check():
            return value
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def gpu_group(count: int = 2, **devices: Any) -> Obj:
    declared = {
        "driver": "gpu.example.com",
        "count": 8,
        "attributes": {"model": "A100", "memory": 40},
        **devices,
    }
    return {"namePrefix": "gpu-", "count": count, "devices": declared}


def slices_of(sim: SimCluster, node: str) -> list[Obj]:
    return [s for s in sim.store.list("resourceslices", None) if s["spec"]["nodeName"] == node]


async def test_each_gpu_node_publishes_one_slice_with_its_devices() -> None:
    template = [gpu_group(capacity={"memory": "40Gi"}), {"namePrefix": "cpu-", "count": 1}]
    async with SimCluster(node_template=template, kubelet=False) as sim:
        node = sim.store.get("nodes", None, "gpu-0001")
        assert node is not None
        [published] = slices_of(sim, "gpu-0001")
        assert slices_of(sim, "cpu-0000") == []
        meta, spec = published["metadata"], published["spec"]
        assert re.fullmatch(r"00000-gpu\.example\.com-gpu-0001-[a-z0-9]{5}", meta["name"])
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": "gpu-0001",
                "uid": node["metadata"]["uid"],
                "controller": True,
            }
        ]
        assert spec["driver"] == "gpu.example.com"
        assert spec["pool"] == {"name": "gpu-0001", "generation": 1, "resourceSliceCount": 1}
        assert [d["name"] for d in spec["devices"]] == [f"gpu-{i}" for i in range(8)]
        first = spec["devices"][0]
        assert first["attributes"]["model"] == {"string": "A100"}
        assert first["attributes"]["memory"] == {"int": 40}
        assert first["capacity"] == {"memory": {"value": "40Gi"}}
        uuids = {
            d["attributes"]["uuid"]["string"]
            for s in sim.store.list("resourceslices", None)
            for d in s["spec"]["devices"]
        }
        assert len(uuids) == 16 and all(u.startswith("GPU-") for u in uuids)
        [cls] = sim.store.list("deviceclasses", None)
        assert cls["metadata"]["name"] == "gpu.example.com"
        assert cls["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]


async def test_device_uuids_are_stable_across_restarts_of_the_endpoint() -> None:
    def uuids(sim: SimCluster) -> list[str]:
        [published] = slices_of(sim, "gpu-0000")
        return [d["attributes"]["uuid"]["string"] for d in published["spec"]["devices"]]

    async with SimCluster(node_template=[gpu_group(1)], kubelet=False) as first:
        before = uuids(first)
    async with SimCluster(node_template=[gpu_group(1)], kubelet=False) as second:
        assert uuids(second) == before


async def test_a_deleted_node_takes_its_slice_along() -> None:
    async with SimCluster(node_template=[gpu_group()], kubelet=False) as sim:
        sim.api.delete(sim.api.resource("nodes"), None, "gpu-0000")
        await eventually(lambda: slices_of(sim, "gpu-0000") == [])
        assert len(slices_of(sim, "gpu-0001")) == 1


async def test_two_drivers_on_a_node_publish_a_slice_each() -> None:
    group = {
        "namePrefix": "mixed-",
        "devices": [
            {"driver": "gpu.example.com", "count": 2},
            {
                "driver": "nic.example.com",
                "count": 1,
                "attributes": {"sriov": True, "fw": {"version": "1.2.3"}},
            },
        ],
    }
    async with SimCluster(node_template=[group], kubelet=False) as sim:
        by_driver = {s["spec"]["driver"]: s["spec"]["devices"] for s in slices_of(sim, "mixed-0000")}
        assert [d["name"] for d in by_driver["gpu.example.com"]] == ["gpu-0", "gpu-1"]
        [nic] = by_driver["nic.example.com"]
        assert nic["name"] == "nic-0"
        assert nic["attributes"]["sriov"] == {"bool": True} and nic["attributes"]["fw"] == {
            "version": "1.2.3"
        }
        assert sorted(c["metadata"]["name"] for c in sim.store.list("deviceclasses", None)) == [
            "gpu.example.com",
            "nic.example.com",
        ]


def test_the_shipped_example_declares_gpu_nodes_with_eight_devices() -> None:
    nodes, devices = build_fleet(template=EXAMPLE)
    assert sorted(devices) == ["dra-gpu-"]
    assert [n["metadata"]["name"] for n in nodes if n["metadata"]["name"].startswith("dra-gpu-")] == [
        "dra-gpu-0000",
        "dra-gpu-0001",
    ]
    [gpus] = devices["dra-gpu-"]
    assert (gpus.driver, gpus.count, gpus.device_names()[-1]) == ("gpu.example.com", 8, "gpu-7")
    assert gpus.attributes["memory"] == {"int": 40}


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        ({"count": 2}, "nodeGroups[0].devices.driver: must be a DNS subdomain"),
        (
            {"driver": "gpu.example.com", "count": -1},
            "nodeGroups[0].devices.count: must be a non-negative integer",
        ),
        (
            {"driver": "gpu.example.com", "attributes": {"memory": 1.5}},
            "nodeGroups[0].devices.attributes.memory",
        ),
        ({"driver": "gpu.example.com", "colour": "red"}, "nodeGroups[0].devices: unknown field(s) colour"),
        (
            [{"driver": "gpu.example.com"}, {"driver": "gpu.example.com"}],
            "nodeGroups[0].devices: two sets of gpu.example.com devices named gpu-N",
        ),
    ],
    ids=["no driver", "negative count", "float attribute", "unknown field", "clashing names"],
)
def test_a_bad_device_declaration_names_the_field(devices: Any, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        build_fleet(template=[{"namePrefix": "g-", "devices": devices}])


async def test_partitioned_gpus_publish_their_counter_sets_and_partitions() -> None:
    template = [{"namePrefix": "gpu-", "count": 1, "devices": partitioned_gpus(2)}]
    async with SimCluster(node_template=template, kubelet=False) as sim:
        published = slices_of(sim, "gpu-0000")
        assert len(published) == 2
        [counters] = [s["spec"] for s in published if "sharedCounters" in s["spec"]]
        [devices] = [s["spec"] for s in published if "devices" in s["spec"]]
        assert (
            counters["pool"]
            == devices["pool"]
            == {"name": "gpu-0000", "generation": 1, "resourceSliceCount": 2}
        )
        assert counters["sharedCounters"] == [
            {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}},
            {"name": "gpu-1", "counters": {"memory": {"value": "40Gi"}}},
        ]
        names = [d["name"] for d in devices["devices"]]
        assert names == [
            "gpu-0-full",
            "gpu-0-half-a",
            "gpu-0-half-b",
            "gpu-1-full",
            "gpu-1-half-a",
            "gpu-1-half-b",
        ]
        half = devices["devices"][1]
        assert half["consumesCounters"] == [
            {"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}
        ]
        assert half["attributes"]["profile"] == {"string": "half"} and half["attributes"]["model"] == {
            "string": "A100"
        }


async def test_a_shared_nic_and_an_attachable_device_carry_their_fields() -> None:
    devices = [
        {
            "driver": "nic.example.com",
            "allowMultipleAllocations": True,
            "capacity": {
                "bandwidth": {
                    "value": "10G",
                    "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}},
                }
            },
        },
        {
            "driver": "fabric.example.com",
            "bindingConditions": ["attached"],
            "bindingFailureConditions": ["failed"],
            "bindsToNode": True,
            "attachDelay": 0.05,
        },
    ]
    async with SimCluster(node_template=[{"namePrefix": "n-", "devices": devices}], kubelet=False) as sim:
        by_driver = {s["spec"]["driver"]: s["spec"]["devices"] for s in slices_of(sim, "n-0000")}
        [nic] = by_driver["nic.example.com"]
        assert nic["allowMultipleAllocations"] is True
        assert nic["capacity"]["bandwidth"]["requestPolicy"]["validRange"] == {"min": "1G", "step": "1G"}
        [fabric] = by_driver["fabric.example.com"]
        assert (fabric["bindingConditions"], fabric["bindingFailureConditions"], fabric["bindsToNode"]) == (
            ["attached"],
            ["failed"],
            True,
        )


async def test_the_driver_attaches_an_allocated_device_after_its_delay() -> None:
    device = {
        "driver": "fabric.example.com",
        "bindingConditions": ["attached"],
        "bindingFailureConditions": ["failed"],
        "attachDelay": 0.05,
    }
    async with SimCluster(node_template=[{"namePrefix": "n-", "devices": device}], kubelet=False) as sim:
        claim = {
            "metadata": {"name": "c"},
            "spec": {
                "devices": {"requests": [{"name": "f", "exactly": {"deviceClassName": "fabric.example.com"}}]}
            },
        }
        await sim.create("resourceclaims", claim, "default")
        result = {
            "request": "f",
            "driver": "fabric.example.com",
            "pool": "n-0000",
            "device": "fabric-0",
            "bindingConditions": ["attached"],
            "bindingFailureConditions": ["failed"],
        }
        current = sim.store.get("resourceclaims", "default", "c")
        body = {
            **current,
            "status": {
                "allocation": {
                    "devices": {"results": [result]},
                    "allocationTimestamp": "2026-01-01T00:00:00Z",
                }
            },
        }
        sim.api.update(sim.api.resource("resourceclaims"), "default", "c", body, "status")

        def attached() -> Any:
            devices = (sim.store.get("resourceclaims", "default", "c") or {}).get("status", {}).get("devices")
            return devices

        [status] = await eventually(attached)
        assert (status["driver"], status["pool"], status["device"]) == (
            "fabric.example.com",
            "n-0000",
            "fabric-0",
        )
        [condition] = status["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "attached",
            "True",
            "Attached",
        )


async def test_a_node_registered_later_gets_its_groups_devices() -> None:
    template = [gpu_group(1), {"namePrefix": "cpu-", "count": 1}]
    async with SimCluster(node_template=template, kubelet=False) as sim:
        node = copy.deepcopy(sim.store.get("nodes", None, "gpu-0000"))
        node["metadata"] = {"name": "gpu-0007", "labels": node["metadata"]["labels"]}
        await sim.create("nodes", node)
        [published] = await eventually(lambda: slices_of(sim, "gpu-0007"))
        assert [d["name"] for d in published["spec"]["devices"]] == [f"gpu-{i}" for i in range(8)]
        other = {"metadata": {"name": "cpu-0009"}}
        await sim.create("nodes", other)
        await asyncio.sleep(0.05)
        assert slices_of(sim, "cpu-0009") == []


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        (
            {"driver": "gpu.example.com", "counters": {"memory": "40Gi"}},
            "nodeGroups[0].devices: counters and partitions",
        ),
        (
            {
                "driver": "gpu.example.com",
                "counters": {"memory": "40Gi"},
                "partitions": [{"name": "p", "consumes": {"cores": "1"}}],
            },
            "nodeGroups[0].devices.partitions[0].consumes: cores not among the set's counters",
        ),
        ({"driver": "gpu.example.com", "attachDelay": -1}, "nodeGroups[0].devices.attachDelay"),
    ],
    ids=["counters without partitions", "unknown counter", "negative delay"],
)
def test_a_bad_partition_declaration_names_the_field(devices: Any, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        build_fleet(template=[{"namePrefix": "g-", "devices": devices}])
