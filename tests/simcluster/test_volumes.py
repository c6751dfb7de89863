"""The local endpoint's storage controllers: static binding, WaitForFirstConsumer and provisioning."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from simcluster import SimCluster

HOSTNAME = "kubernetes.io/hostname"


async def eventually(check: Callable[[], Any]) -> Any:
    for _ in range(200):
        if value := check():
            return value
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def pv(name: str, size: str = "10Gi", cls: str = "local", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "local": {"path": f"/mnt/{name}"},
            **spec,
        },
    }


def pvc(name: str, size: str = "5Gi", cls: str | None = "local", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    return {"metadata": {"name": name, "namespace": "default", **meta}, "spec": spec}


def storage_class(name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner", **extra: Any):
    return {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode, **extra}


def claim(sim: SimCluster, name: str) -> dict[str, Any]:
    found = sim.store.get("persistentvolumeclaims", "default", name)
    assert found is not None
    return found


def volume(sim: SimCluster, name: str) -> dict[str, Any] | None:
    return sim.store.get("persistentvolumes", None, name)


def bound_to(sim: SimCluster, name: str) -> str:
    obj = claim(sim, name)
    done = "pv.kubernetes.io/bind-completed" in (obj["metadata"].get("annotations") or {})
    return obj["spec"].get("volumeName", "") if done and obj["status"]["phase"] == "Bound" else ""


@pytest.fixture
async def cluster():
    async with SimCluster(nodes=2, kubelet=False, bookmark_interval=0.1) as sim:
        yield sim


async def test_a_new_volume_becomes_available(cluster: SimCluster):
    await cluster.create("persistentvolumes", pv("pv-1"))
    await eventually(lambda: volume(cluster, "pv-1")["status"]["phase"] == "Available")


@pytest.mark.parametrize("cls", ["fast", None], ids=["an Immediate class", "no class at all"])
async def test_an_immediate_claim_binds_to_the_smallest_matching_volume(cluster: SimCluster, cls):
    await cluster.create("storageclasses", storage_class("fast", "Immediate"))
    for name, size in (("big", "100Gi"), ("right", "8Gi"), ("small", "1Gi")):
        await cluster.create("persistentvolumes", pv(name, size, cls=cls or ""))
    await cluster.create("persistentvolumeclaims", pvc("data", cls=cls))
    assert await eventually(lambda: bound_to(cluster, "data")) == "right"
    right = volume(cluster, "right")
    assert right["status"]["phase"] == "Bound"
    assert right["spec"]["claimRef"]["uid"] == claim(cluster, "data")["metadata"]["uid"]
    assert claim(cluster, "data")["status"]["capacity"] == {"storage": "8Gi"}


async def test_a_wait_for_first_consumer_claim_waits_for_the_scheduler(cluster: SimCluster):
    await cluster.create("storageclasses", storage_class("local", "WaitForFirstConsumer"))
    await cluster.create("persistentvolumes", pv("pv-1"))
    await cluster.create("persistentvolumeclaims", pvc("data"))
    await eventually(lambda: volume(cluster, "pv-1")["status"]["phase"] == "Available")
    await asyncio.sleep(0.05)
    assert bound_to(cluster, "data") == ""
    # what the scheduler's PreBind writes: the PV's claimRef
    current = volume(cluster, "pv-1")
    ref = {"namespace": "default", "name": "data", "uid": claim(cluster, "data")["metadata"]["uid"]}
    cluster.api.update(
        cluster.api.resource("persistentvolumes"),
        None,
        "pv-1",
        {**current, "spec": {**current["spec"], "claimRef": ref}},
    )
    assert await eventually(lambda: bound_to(cluster, "data")) == "pv-1"


async def test_a_claim_with_a_selected_node_gets_a_provisioned_volume_pinned_to_that_node(
    cluster: SimCluster,
):
    await cluster.create(
        "storageclasses", storage_class("dynamic", "WaitForFirstConsumer", provisioner="csi.example.com")
    )
    node = cluster.store.list("nodes")[0]["metadata"]["name"]
    await cluster.create(
        "persistentvolumeclaims",
        pvc("data", cls="dynamic", annotations={"volume.kubernetes.io/selected-node": node}),
    )
    name = await eventually(lambda: bound_to(cluster, "data"))
    provisioned = volume(cluster, name)
    assert provisioned["spec"]["csi"]["driver"] == "csi.example.com"
    assert provisioned["spec"]["capacity"] == {"storage": "5Gi"}
    assert provisioned["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
    ]


async def test_a_zonal_class_pins_provisioned_volumes_to_the_zone(cluster: SimCluster):
    zone_key = "topology.kubernetes.io/zone"
    node = cluster.store.list("nodes")[0]
    zone = node["metadata"]["labels"][zone_key]
    await cluster.create(
        "storageclasses",
        storage_class(
            "zonal", "WaitForFirstConsumer", "csi.example.com", parameters={"topologyKey": zone_key}
        ),
    )
    notes = {"volume.kubernetes.io/selected-node": node["metadata"]["name"]}
    await cluster.create("persistentvolumeclaims", pvc("data", cls="zonal", annotations=notes))
    name = await eventually(lambda: bound_to(cluster, "data"))
    terms = volume(cluster, name)["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": zone_key, "operator": "In", "values": [zone]}]}]


async def test_a_claim_without_any_fitting_volume_stays_pending(cluster: SimCluster):
    await cluster.create("storageclasses", storage_class("fast", "Immediate"))
    await cluster.create("persistentvolumes", pv("tiny", "1Gi", cls="fast"))
    await cluster.create("persistentvolumeclaims", pvc("data", cls="fast"))
    await eventually(lambda: volume(cluster, "tiny")["status"]["phase"] == "Available")
    await asyncio.sleep(0.05)
    assert claim(cluster, "data")["status"]["phase"] == "Pending"


async def test_a_volume_whose_claim_is_deleted_is_released(cluster: SimCluster):
    await cluster.create("persistentvolumes", pv("pv-1", cls=""))
    await cluster.create("persistentvolumeclaims", pvc("data", cls=None))
    assert await eventually(lambda: bound_to(cluster, "data")) == "pv-1"
    cluster.api.delete(cluster.api.resource("persistentvolumeclaims"), "default", "data")
    await eventually(lambda: volume(cluster, "pv-1")["status"]["phase"] == "Released")


async def test_a_storage_class_gets_the_api_servers_defaults(sim):
    stored = await sim.create(
        "storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "plain"},
            "provisioner": "x",
        },
    )
    assert stored["volumeBindingMode"] == "Immediate"
    assert stored["reclaimPolicy"] == "Delete"


async def test_an_immediate_claim_only_takes_a_volume_of_its_attributes_class(cluster: SimCluster):
    await cluster.create("storageclasses", storage_class("fast", "Immediate"))
    await cluster.create(
        "persistentvolumes", pv("silver", "8Gi", cls="fast", volumeAttributesClassName="silver")
    )
    await cluster.create(
        "persistentvolumes", pv("gold", "20Gi", cls="fast", volumeAttributesClassName="gold")
    )
    gold_claim = pvc("data", cls="fast")
    gold_claim["spec"]["volumeAttributesClassName"] = "gold"
    await cluster.create("persistentvolumeclaims", gold_claim)
    assert await eventually(lambda: bound_to(cluster, "data")) == "gold"
