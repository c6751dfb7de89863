"""Simulated DRA drivers: devices declared in the node template become one ResourceSlice per
node and driver, and a DeviceClass per driver; slices go with their node."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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
    _, devices = build_fleet(template=EXAMPLE)
    assert sorted(devices) == ["dra-gpu-0000", "dra-gpu-0001"]
    [gpus] = devices["dra-gpu-0000"]
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
