"""The endpoint's claim controller together with the real scheduler: a shared claim is allocated
once, kept while any pod uses it, deallocated when the last one goes and allocated again for
the next pod; a generated claim goes with its pod through graceful deletion."""

from __future__ import annotations

from typing import Any

from simcluster import SimCluster
from simcluster.resourceclaims import FINALIZER
from tests.support.cluster import eventually, node_of, pod_manifest, start_scheduler

__all__ = ["start_scheduler"]

GPUS = [{"namePrefix": "gpu-", "count": 1, "devices": {"driver": "gpu.example.com", "count": 1}}]
SPEC = {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]}}


def claim_pod(name: str, source: dict[str, str]) -> dict[str, Any]:
    manifest = pod_manifest(name)
    manifest["spec"]["resourceClaims"] = [{"name": "g", **source}]
    manifest["spec"]["containers"][0]["resources"]["claims"] = [{"name": "g"}]
    return manifest


def status_of(sim: SimCluster, claim: str) -> dict[str, Any]:
    return (sim.store.get("resourceclaims", "default", claim) or {}).get("status") or {}


def reserved(sim: SimCluster, claim: str) -> list[str]:
    return sorted(r["name"] for r in status_of(sim, claim).get("reservedFor") or ())


async def test_a_shared_claim_is_deallocated_after_its_last_pod_and_allocated_again(start_scheduler) -> None:
    async with SimCluster(node_template=GPUS, kubelet=True, kubelet_delay=0.01, bookmark_interval=0.5) as sim:
        await start_scheduler(sim)
        await sim.create("resourceclaims", {"metadata": {"name": "shared"}, "spec": SPEC}, "default")
        for name in ("a", "b"):
            await sim.create("pods", claim_pod(name, {"resourceClaimName": "shared"}))
        await eventually(lambda: node_of(sim, "a") == node_of(sim, "b") == "gpu-0000")
        assert await eventually(lambda: reserved(sim, "shared") == ["a", "b"])
        pods = sim.api.resource("pods")
        sim.api.delete(pods, "default", "a")  # graceful: the kubelet finishes it
        await eventually(lambda: reserved(sim, "shared") == ["b"])
        assert status_of(sim, "shared")["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
        sim.api.delete(pods, "default", "b")
        await eventually(lambda: not status_of(sim, "shared").get("allocation"))
        assert FINALIZER not in (sim.store.get("resourceclaims", "default", "shared") or {})["metadata"].get(
            "finalizers", ()
        )
        await sim.create("pods", claim_pod("c", {"resourceClaimName": "shared"}))
        await eventually(lambda: node_of(sim, "c") == "gpu-0000")
        assert await eventually(lambda: reserved(sim, "shared") == ["c"])


async def test_a_gracefully_deleted_pod_frees_its_generated_claims_device(start_scheduler) -> None:
    async with SimCluster(node_template=GPUS, kubelet=True, kubelet_delay=0.01, bookmark_interval=0.5) as sim:
        await start_scheduler(sim)
        template = {"metadata": {"name": "one-gpu"}, "spec": {"spec": SPEC}}
        await sim.create("resourceclaimtemplates", template, "default")
        for name in ("first", "second"):
            await sim.create("pods", claim_pod(name, {"resourceClaimTemplateName": "one-gpu"}))
        await eventually(lambda: node_of(sim, "first") == "gpu-0000")
        assert node_of(sim, "second") == ""
        sim.api.delete(sim.api.resource("pods"), "default", "first")
        await eventually(lambda: sim.store.get("pods", "default", "first") is None)
        await eventually(lambda: node_of(sim, "second") == "gpu-0000", timeout=30)
        assert [
            c["metadata"]["name"].startswith("second-g-") for c in sim.store.list("resourceclaims", "default")
        ] == [True]
