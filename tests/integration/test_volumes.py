"""Storage-aware scheduling end to end: the real scheduler against the local endpoint's PV
controller and provisioner (issue 7: volume plugins)."""

from __future__ import annotations

import asyncio
from typing import Any

from simcluster import SimCluster
from tests.support.cluster import eventually, node_of, pod_manifest, scheduled_condition

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def local_pv(name: str, node: str, size: str = "10Gi", cls: str = "local") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                    ]
                }
            },
        },
    }


def claim(name: str, cls: str = "local", size: str = "5Gi", modes: tuple[str, ...] = ("ReadWriteOnce",)):
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": list(modes),
            "storageClassName": cls,
            "resources": {"requests": {"storage": size}},
        },
    }


def with_claims(name: str, *claims: str, **spec: Any) -> dict[str, Any]:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return pod_manifest(name, volumes=volumes, **spec)


def wait_for_first_consumer(name: str = "local", provisioner: str = "kubernetes.io/no-provisioner"):
    return {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def claim_state(sim: SimCluster, name: str) -> tuple[str, str]:
    obj = sim.store.get("persistentvolumeclaims", "default", name) or {}
    return obj.get("status", {}).get("phase", ""), obj.get("spec", {}).get("volumeName", "")


async def test_a_stateful_pod_lands_on_the_node_of_its_only_matching_local_volume(sim, start_scheduler):
    await sim.create("storageclasses", wait_for_first_consumer())
    await sim.create("persistentvolumes", local_pv("too-small", "node-0000", size="1Gi"))
    await sim.create("persistentvolumes", local_pv("other-class", "node-0001", cls="slow"))
    await sim.create("persistentvolumes", local_pv("the-one", "node-0002"))
    await sim.create("persistentvolumeclaims", claim("data-db-0"))
    await start_scheduler(sim)
    await sim.create("pods", with_claims("db-0", "data-db-0"))
    assert await eventually(lambda: node_of(sim, "db-0")) == "node-0002"
    assert await eventually(lambda: claim_state(sim, "data-db-0") == ("Bound", "the-one"))
    pv = sim.store.get("persistentvolumes", None, "the-one")
    assert pv["spec"]["claimRef"]["name"] == "data-db-0"
    assert pv["status"]["phase"] == "Bound"


async def test_a_provisioned_volume_follows_the_node_the_scheduler_chose(sim, start_scheduler):
    await sim.create(
        "storageclasses", wait_for_first_consumer("dynamic", provisioner="local.csi.example.com")
    )
    await sim.create("persistentvolumeclaims", claim("scratch", cls="dynamic"))
    await start_scheduler(sim)
    await sim.create("pods", with_claims("worker", "scratch"))
    node = await eventually(lambda: node_of(sim, "worker"))
    phase, volume_name = await eventually(
        lambda: claim_state(sim, "scratch")[1] and claim_state(sim, "scratch")
    )
    assert phase == "Bound"
    pv = sim.store.get("persistentvolumes", None, volume_name)
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [{"key": HOSTNAME, "operator": "In", "values": [node]}]


async def test_two_pods_never_bind_the_same_volume(sim, start_scheduler):
    await sim.create("storageclasses", wait_for_first_consumer())
    await sim.create("persistentvolumes", local_pv("only", "node-0001"))
    for i in range(2):
        await sim.create("persistentvolumeclaims", claim(f"data-{i}"))
    await start_scheduler(sim)
    for i in range(2):
        await sim.create("pods", with_claims(f"app-{i}", f"data-{i}"))
    winner = await eventually(lambda: next((f"app-{i}" for i in range(2) if node_of(sim, f"app-{i}")), None))
    loser = "app-1" if winner == "app-0" else "app-0"
    condition = await eventually(lambda: scheduled_condition(sim, loser))
    assert condition["status"] == "False"
    assert condition["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
    )
    await asyncio.sleep(0.3)
    assert node_of(sim, winner) == "node-0001" and not node_of(sim, loser)
    pv = sim.store.get("persistentvolumes", None, "only")
    assert pv["spec"]["claimRef"]["name"] == f"data-{winner[-1]}"
    assert claim_state(sim, f"data-{loser[-1]}") == ("Pending", "")


async def test_a_volume_pinned_to_zone_a_keeps_its_pods_in_zone_a(sim, start_scheduler):
    zone_a = next(n for n in sim.store.list("nodes") if n["metadata"]["labels"][ZONE] == "zone-a")
    await sim.create(
        "persistentvolumes",
        {
            "metadata": {"name": "regional-disk", "labels": {ZONE: "zone-a"}},
            "spec": {
                "capacity": {"storage": "50Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "nfs": {"server": "nfs.example.com", "path": "/export"},
            },
        },
    )
    await sim.create("persistentvolumeclaims", claim("shared", cls="", modes=("ReadWriteMany",)))
    await eventually(lambda: claim_state(sim, "shared") == ("Bound", "regional-disk"))
    await start_scheduler(sim)
    for i in range(3):
        await sim.create("pods", with_claims(f"reader-{i}", "shared"))
    nodes = await eventually(
        lambda: (
            all(node_of(sim, f"reader-{i}") for i in range(3))
            and {node_of(sim, f"reader-{i}") for i in range(3)}
        )
    )
    assert nodes == {zone_a["metadata"]["name"]}


async def test_a_csi_volume_limit_of_two_stops_the_third_pod(start_scheduler):
    driver = "ebs.csi.example.com"
    async with SimCluster(nodes=1, kubelet=True, bookmark_interval=0.5) as sim:
        node = sim.store.list("nodes")[0]["metadata"]["name"]
        await sim.create(
            "csinodes",
            {
                "metadata": {"name": node},
                "spec": {"drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": 2}}]},
            },
        )
        for i in range(3):
            await sim.create(
                "persistentvolumes",
                {
                    "metadata": {"name": f"vol-{i}"},
                    "spec": {
                        "capacity": {"storage": "5Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "",
                        "claimRef": {"namespace": "default", "name": f"disk-{i}"},
                        "csi": {"driver": driver, "volumeHandle": f"handle-{i}"},
                    },
                },
            )
            await sim.create("persistentvolumeclaims", claim(f"disk-{i}", cls=""))
        await eventually(lambda: all(claim_state(sim, f"disk-{i}")[0] == "Bound" for i in range(3)))
        await start_scheduler(sim)
        for i in range(2):
            await sim.create("pods", with_claims(f"db-{i}", f"disk-{i}"))
        await eventually(lambda: node_of(sim, "db-0") and node_of(sim, "db-1"))
        await sim.create("pods", with_claims("db-2", "disk-2"))
        condition = await eventually(lambda: scheduled_condition(sim, "db-2"))
        assert condition["status"] == "False"
        assert condition["message"].startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")
        assert not node_of(sim, "db-2")


async def test_a_pod_waits_for_its_missing_claim_and_runs_once_it_is_bound(sim, start_scheduler):
    await start_scheduler(sim)
    await sim.create("pods", with_claims("late", "ghost"))
    condition = await eventually(lambda: scheduled_condition(sim, "late"))
    assert condition["status"] == "False"
    assert condition["message"].startswith(
        '0/3 nodes are available: persistentvolumeclaim "ghost" not found.'
    )
    await sim.create("persistentvolumes", local_pv("for-ghost", "node-0001", cls=""))
    await sim.create("persistentvolumeclaims", claim("ghost", cls=""))
    assert await eventually(lambda: node_of(sim, "late")) == "node-0001"
