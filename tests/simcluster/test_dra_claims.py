"""The local endpoint's resource-claim controller: claims from templates for pods, recorded in
the pod's status, released and deallocated when their pods go."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from simcluster import SimCluster
from simcluster.resourceclaims import FINALIZER, POD_CLAIM_NAME, ResourceClaimController, generate_name

Obj = dict[str, Any]


async def eventually(check: Callable[[], Any]) -> Any:
    for _ in range(300):
        if value := check():
            return value
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def template(name: str = "gpu-template", **meta: Any) -> Obj:
    exact = {"deviceClassName": "gpu.example.com"}
    return {
        "metadata": {"name": name},
        "spec": {"metadata": meta, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exact}]}}},
    }


def pod(name: str, *claims: Obj, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": list(claims),
            **spec,
        },
    }


def from_template(name: str = "gpu", template_name: str = "gpu-template") -> Obj:
    return {"name": name, "resourceClaimTemplateName": template_name}


def claims(sim: SimCluster) -> list[Obj]:
    return sim.store.list("resourceclaims", "default")


def get(sim: SimCluster, resource: str, name: str) -> Obj | None:
    return sim.store.get(resource, "default", name)


def claim_statuses(sim: SimCluster, name: str) -> list[Obj]:
    found = get(sim, "pods", name)
    return ((found or {}).get("status") or {}).get("resourceClaimStatuses") or []


def allocation() -> Obj:
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0000", "device": "gpu-0"}
    return {"devices": {"results": [result]}}


def allocate(sim: SimCluster, name: str, *pods: str) -> None:
    """What the scheduler does for a claim: finalizer, then allocation and reservations."""
    rt = sim.api.resource("resourceclaims")
    current = sim.api.get(rt, "default", name).obj
    meta = {**current["metadata"], "finalizers": [FINALIZER]}
    current = sim.api.update(rt, "default", name, {**current, "metadata": meta}).obj
    reserved = []
    for pod_name in pods:
        found = get(sim, "pods", pod_name)
        assert found is not None
        reserved.append({"resource": "pods", "name": pod_name, "uid": found["metadata"]["uid"]})
    status = {"allocation": allocation(), **({"reservedFor": reserved} if reserved else {})}
    sim.api.update(rt, "default", name, {**current, "status": status}, "status")


def delete(sim: SimCluster, resource: str, name: str) -> None:
    sim.api.delete(sim.api.resource(resource), "default", name, {"gracePeriodSeconds": 0})


@pytest.fixture
async def cluster() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=2, kubelet=False, bookmark_interval=0.1) as sim:
        yield sim


def test_generated_names_keep_both_parts_within_63_characters() -> None:
    assert generate_name("web-0", "gpu") == "web-0-gpu-"
    long = generate_name("p" * 60, "c" * 30)
    assert len(long) <= 57 and long.startswith("p" * 37 + "-") and long.endswith("c" * 18)


async def test_a_pod_gets_a_claim_from_its_template_recorded_in_its_status(cluster: SimCluster) -> None:
    await cluster.create(
        "resourceclaimtemplates", template(labels={"team": "ml"}, annotations={"a": "b"}), "default"
    )
    created = await cluster.create("pods", pod("train", from_template()), "default")
    [status] = await eventually(lambda: claim_statuses(cluster, "train"))
    [claim] = claims(cluster)
    meta = claim["metadata"]
    assert status == {"name": "gpu", "resourceClaimName": meta["name"]}
    assert meta["name"].startswith("train-gpu-") and len(meta["name"]) == len("train-gpu-") + 5
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "train",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert meta["annotations"] == {"a": "b", POD_CLAIM_NAME: "gpu"}
    assert meta["labels"] == {"team": "ml"}
    request = claim["spec"]["devices"]["requests"][0]["exactly"]
    assert request == {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}


async def test_a_pod_naming_a_claim_directly_gets_no_generated_one(cluster: SimCluster) -> None:
    await cluster.create("resourceclaimtemplates", template(), "default")
    await cluster.create("pods", pod("direct", {"name": "gpu", "resourceClaimName": "shared"}), "default")
    await cluster.create("pods", pod("marker", from_template()), "default")
    await eventually(lambda: claim_statuses(cluster, "marker"))  # the controller has been through both
    assert claim_statuses(cluster, "direct") == []
    assert [c["metadata"]["name"].startswith("marker-gpu-") for c in claims(cluster)] == [True]


async def test_a_missing_template_is_reported_and_used_once_it_exists(cluster: SimCluster) -> None:
    await cluster.create("pods", pod("early", from_template()), "default")

    def warning() -> list[Obj]:
        return [
            e for e in cluster.store.list("events", "default") if e["reason"] == "FailedResourceClaimCreation"
        ]

    [event] = await eventually(warning)
    assert event["type"] == "Warning"
    assert event["involvedObject"]["name"] == "early"
    assert event["message"] == (
        'PodResourceClaim gpu: resource claim template "gpu-template": '
        'resourceclaimtemplate.resource.k8s.io "gpu-template" not found'
    )
    assert claims(cluster) == []
    await cluster.create("resourceclaimtemplates", template(), "default")
    await eventually(lambda: claim_statuses(cluster, "early"))
    assert len(claims(cluster)) == 1 and len(warning()) == 1


async def test_an_earlier_generated_claim_is_adopted_not_made_twice() -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as sim:
        await sim.create("resourceclaimtemplates", template(), "default")
        owner = await sim.create("pods", pod("p", from_template()), "default")
        ref = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
        meta = {"name": "p-gpu-abcde", "ownerReferences": [ref], "annotations": {POD_CLAIM_NAME: "gpu"}}
        await sim.create("resourceclaims", {"metadata": meta, "spec": template()["spec"]["spec"]}, "default")
        controller = ResourceClaimController(sim.api)
        try:
            await eventually(lambda: claim_statuses(sim, "p"))
            assert claim_statuses(sim, "p") == [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]
            assert [c["metadata"]["name"] for c in claims(sim)] == ["p-gpu-abcde"]
        finally:
            controller.close()


async def test_deleting_the_pod_deallocates_and_removes_its_generated_claim(cluster: SimCluster) -> None:
    await cluster.create("resourceclaimtemplates", template(), "default")
    await cluster.create("pods", pod("p", from_template()), "default")
    [status] = await eventually(lambda: claim_statuses(cluster, "p"))
    name = status["resourceClaimName"]
    allocate(cluster, name, "p")
    delete(cluster, "pods", "p")
    await eventually(lambda: get(cluster, "resourceclaims", name) is None)


async def test_a_shared_claim_is_released_by_each_pod_and_deallocated_after_the_last(
    cluster: SimCluster,
) -> None:
    await cluster.create(
        "resourceclaims", {"metadata": {"name": "shared"}, "spec": template()["spec"]["spec"]}, "default"
    )
    for name in ("a", "b"):
        await cluster.create("pods", pod(name, {"name": "gpu", "resourceClaimName": "shared"}), "default")
    allocate(cluster, "shared", "a", "b")

    def shared() -> Obj:
        found = get(cluster, "resourceclaims", "shared")
        assert found is not None
        return found

    delete(cluster, "pods", "a")
    await eventually(lambda: [r["name"] for r in shared()["status"].get("reservedFor") or ()] == ["b"])
    assert shared()["status"]["allocation"] == allocation()
    assert shared()["metadata"]["finalizers"] == [FINALIZER]
    delete(cluster, "pods", "b")
    await eventually(lambda: not shared().get("status"))
    await eventually(lambda: not shared()["metadata"].get("finalizers"))


async def test_a_finished_pod_loses_its_reservation_and_its_generated_claim(cluster: SimCluster) -> None:
    await cluster.create("resourceclaimtemplates", template(), "default")
    await cluster.create("pods", pod("job", from_template(), nodeName="node-0000"), "default")
    [status] = await eventually(lambda: claim_statuses(cluster, "job"))
    allocate(cluster, status["resourceClaimName"], "job")
    rt = cluster.api.resource("pods")
    current = cluster.api.get(rt, "default", "job").obj
    cluster.api.update(
        rt, "default", "job", {**current, "status": {**current["status"], "phase": "Succeeded"}}, "status"
    )
    await eventually(lambda: get(cluster, "resourceclaims", status["resourceClaimName"]) is None)
    assert get(cluster, "pods", "job") is not None  # the pod stays, its claim does not


async def test_a_pod_bound_without_the_scheduler_is_reserved_on_an_allocated_claim(
    cluster: SimCluster,
) -> None:
    await cluster.create(
        "resourceclaims", {"metadata": {"name": "pre"}, "spec": template()["spec"]["spec"]}, "default"
    )
    allocate(cluster, "pre")
    bound = await cluster.create(
        "pods", pod("direct", {"name": "gpu", "resourceClaimName": "pre"}, nodeName="node-0000"), "default"
    )

    def reserved() -> list[Obj]:
        found = get(cluster, "resourceclaims", "pre") or {}
        return (found.get("status") or {}).get("reservedFor") or []

    assert await eventually(reserved) == [
        {"resource": "pods", "name": "direct", "uid": bound["metadata"]["uid"]}
    ]


async def test_a_pod_with_a_malformed_claim_status_is_reported_once_and_spares_the_others(
    cluster: SimCluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.create("resourceclaimtemplates", template(), "default")
    await cluster.create("pods", pod("odd", from_template()), "default")
    await eventually(lambda: claim_statuses(cluster, "odd"))
    rt = cluster.api.resource("pods")
    for i in range(2):  # two malformed writes, two syncs of that pod
        current = cluster.api.get(rt, "default", "odd").obj
        status = {**current["status"], "resourceClaimStatuses": ["not-a-status"], "message": str(i)}
        cluster.api.update(rt, "default", "odd", {**current, "status": status}, "status")
        await cluster.create("pods", pod(f"fine-{i}", from_template()), "default")
        await eventually(lambda name=f"fine-{i}": claim_statuses(cluster, name))
    malformed = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert malformed == [
        "resource claim controller, pod default/odd: skipped, malformed: "
        "AttributeError(\"'str' object has no attribute 'get'\")"
    ]
