"""Explain names the counter or the capacity that ran out for a pod's claims."""

from __future__ import annotations

from typing import Any

from simcluster import SimCluster
from tests.support.cluster import pod_manifest
from tests.support.dra import SHARED_NIC, fleet, publish_partitioned_gpu
from tests.support.explain import kubeconfig, run_explain

GPU = "gpu.example.com"


def claim(
    name: str, driver: str, selector: str = "", capacity: dict[str, str] | None = None
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": driver}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": exactly}]}},
    }


def allocate(sim: SimCluster, name: str, result: dict[str, Any]) -> None:
    current = sim.store.get("resourceclaims", "default", name)
    assert current is not None
    body = {**current, "status": {"allocation": {"devices": {"results": [{"request": "g", **result}]}}}}
    sim.api.update(sim.api.resource("resourceclaims"), "default", name, body, "status")


def claiming(name: str, claim_name: str) -> dict[str, Any]:
    manifest = pod_manifest(name)
    manifest["spec"]["resourceClaims"] = [{"name": "g", "resourceClaimName": claim_name}]
    return manifest


async def suggestions(sim: SimCluster, capsys: Any, tmp_path: Any, pod: str) -> list[str]:
    code, answer, _ = await run_explain(capsys, pod, "--kubeconfig", kubeconfig(sim, tmp_path), "-o", "json")
    assert code == 0 and answer["chosen"] == "", answer
    assert answer["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims."), answer
    return answer["suggestions"]


async def test_explain_names_the_counter_a_whole_gpu_lacks(capsys, tmp_path) -> None:
    async with SimCluster(node_template=fleet(), kubelet=False, controllers=False) as sim:
        await publish_partitioned_gpu(sim)
        await sim.create("resourceclaims", claim("half", GPU))
        allocate(sim, "half", {"driver": GPU, "pool": "gpu-0000", "device": "part-a"})
        await sim.create(
            "resourceclaims", claim("whole", GPU, f'device.attributes["{GPU}"].profile == "whole"')
        )
        await sim.create("pods", claiming("trainer", "whole"))
        assert await suggestions(sim, capsys, tmp_path, "trainer") == [
            "devices on gpu-0000: claim default/whole, request g: gpu.example.com/gpu-0000/full needs "
            "40Gi of counter memory in counter set gpu of pool gpu.example.com/gpu-0000, 20Gi left"
        ]


async def test_explain_names_the_capacity_a_shared_nic_lacks(capsys, tmp_path) -> None:
    nic = "nic.example.com"
    async with SimCluster(node_template=fleet(SHARED_NIC), kubelet=False, controllers=False) as sim:
        await sim.create("resourceclaims", claim("taken", nic, capacity={"bandwidth": "8G"}))
        share = {"shareID": "4b7c5fc4-27c4-4c5b-a8d9-7b1a4d9f6f3e", "consumedCapacity": {"bandwidth": "8G"}}
        allocate(sim, "taken", {"driver": nic, "pool": "gpu-0000", "device": "nic-0", **share})
        await sim.create("resourceclaims", claim("wide", nic, capacity={"bandwidth": "4G"}))
        await sim.create("pods", claiming("streamer", "wide"))
        assert await suggestions(sim, capsys, tmp_path, "streamer") == [
            "devices on gpu-0000: claim default/wide, request g: nic.example.com/gpu-0000/nic-0: capacity "
            "bandwidth has 2G left, 4G needed"
        ]
