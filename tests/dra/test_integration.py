"""The real scheduler against the local endpoint: claims from templates get devices, as recorded
on a v1.36.2 control plane (the messages are byte for byte the recorded ones)."""

from __future__ import annotations

from typing import Any

import pytest

from simcluster import SimCluster
from tests.support.cluster import eventually, node_of, pod
from tests.support.dra import (
    DRIVER,
    UNSATISFIABLE,
    claim_of,
    claim_pod,
    devices_of,
    fleet,
    pending_message,
    template,
)


@pytest.fixture
async def gpus() -> Any:
    devices = [
        {"driver": DRIVER, "count": 1, "namePrefix": "big-", "attributes": {"memory": 40}},
        {"driver": DRIVER, "count": 1, "namePrefix": "small-", "attributes": {"memory": 16}},
    ]
    async with SimCluster(node_template=fleet(*devices), kubelet=True, bookmark_interval=0.5) as cluster:
        yield cluster


async def test_a_claim_from_a_template_gets_the_matching_device_and_the_next_pod_waits(gpus, start_scheduler):
    await start_scheduler(gpus)
    big = f'device.attributes["{DRIVER}"].memory >= 32'
    await gpus.create("resourceclaimtemplates", template("big", big))
    await gpus.create("pods", claim_pod("first", "big"))
    await eventually(lambda: node_of(gpus, "first") == "gpu-0000")
    claim = claim_of(gpus, "first") or {}
    first_uid = pod(gpus, "first")["metadata"]["uid"]
    assert devices_of(gpus, "first") == ["big-0"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "first", "uid": first_uid}]

    await gpus.create("pods", claim_pod("second", "big"))
    assert await eventually(lambda: pending_message(gpus, "second")) == UNSATISFIABLE
    assert node_of(gpus, "second") == ""

    # deleting the first pod frees its device for the waiting one
    gpus.api.delete(gpus.api.resource("pods"), "default", "first", {"gracePeriodSeconds": 0})
    await eventually(lambda: node_of(gpus, "second") == "gpu-0000", timeout=30)
    assert devices_of(gpus, "second") == ["big-0"]


async def test_two_pods_never_get_the_same_device(gpus, start_scheduler):
    await start_scheduler(gpus)
    await gpus.create("resourceclaimtemplates", template("any"))
    for name in ("p1", "p2", "p3"):
        await gpus.create("pods", claim_pod(name, "any"))
    await eventually(lambda: node_of(gpus, "p1") and node_of(gpus, "p2"))
    assert sorted(devices_of(gpus, "p1") + devices_of(gpus, "p2")) == ["big-0", "small-0"]
    assert await eventually(lambda: pending_message(gpus, "p3")) == UNSATISFIABLE


async def test_a_missing_device_class_gives_upstreams_message(gpus, start_scheduler):
    await start_scheduler(gpus)
    missing = template("missing")
    missing["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "no-such-class"
    await gpus.create("resourceclaimtemplates", missing)
    await gpus.create("pods", claim_pod("p", "missing"))
    assert await eventually(lambda: pending_message(gpus, "p")) == (
        "0/3 nodes are available: request g: device class no-such-class does not exist. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful "
        "for scheduling."
    )


async def test_match_attribute_takes_both_devices_of_one_numa_group(start_scheduler):
    devices = [
        {"driver": DRIVER, "count": 2, "namePrefix": "n0-", "attributes": {"numa": 0}},
        {"driver": DRIVER, "count": 2, "namePrefix": "n1-", "attributes": {"numa": 1}},
    ]
    async with SimCluster(node_template=fleet(*devices), kubelet=True, bookmark_interval=0.5) as sim:
        await start_scheduler(sim)
        same_numa = template("pair", count=2, constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
        await sim.create("resourceclaimtemplates", same_numa)
        for name in ("p1", "p2", "p3"):
            await sim.create("pods", claim_pod(name, "pair"))
        await eventually(lambda: node_of(sim, "p1") and node_of(sim, "p2"))
        groups = sorted(sorted(devices_of(sim, name)) for name in ("p1", "p2"))
        assert groups == [["n0-0", "n0-1"], ["n1-0", "n1-1"]]
        assert await eventually(lambda: pending_message(sim, "p3")) == UNSATISFIABLE
