"""Deployment → ReplicaSet → Pod controllers, the kubelet and garbage collection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubernetes_asyncio import client

from simcluster import SimCluster

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"schedulerName": "pyscheduler", "containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


async def eventually(check: Callable[[], bool]) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.01)
    assert check()


def pods_of(sim: SimCluster) -> list[dict]:
    return [p for p in sim.store.list("pods", "default") if p["metadata"]["labels"].get("app") == "web"]


async def test_a_deployment_creates_owned_pods_with_its_scheduler_name(
    sim: SimCluster, api_client: client.ApiClient
) -> None:
    await client.AppsV1Api(api_client).create_namespaced_deployment("default", DEPLOYMENT)
    await eventually(lambda: len(pods_of(sim)) == 3)
    (rs,) = sim.store.list("replicasets", "default")
    assert rs["metadata"]["ownerReferences"][0]["name"] == "web"
    for p in pods_of(sim):
        assert p["spec"]["schedulerName"] == "pyscheduler"
        assert p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert p["metadata"]["name"].startswith(rs["metadata"]["name"] + "-")
        assert p["status"]["phase"] == "Pending"


async def test_scaling_a_deployment_adds_and_removes_pods(
    sim: SimCluster, api_client: client.ApiClient
) -> None:
    apps = client.AppsV1Api(api_client)
    await apps.create_namespaced_deployment("default", DEPLOYMENT)
    await eventually(lambda: len(pods_of(sim)) == 3)
    await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    await eventually(lambda: len(pods_of(sim)) == 5)
    await apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 1}})
    await eventually(lambda: len(pods_of(sim)) == 1)


async def test_deployment_status_counts_ready_pods_once_they_run(
    sim: SimCluster, api_client: client.ApiClient
) -> None:
    apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
    await apps.create_namespaced_deployment(
        "default", {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 2}}
    )
    await eventually(lambda: len(pods_of(sim)) == 2)
    for i, p in enumerate(pods_of(sim)):
        target = client.V1ObjectReference(name=f"node-000{i}")
        body = client.V1Binding(metadata=client.V1ObjectMeta(name=p["metadata"]["name"]), target=target)
        await core.create_namespaced_pod_binding(
            p["metadata"]["name"], "default", body, _preload_content=False
        )
    await eventually(
        lambda: sim.store.get("deployments", "default", "web")["status"].get("readyReplicas") == 2
    )
    status = (await apps.read_namespaced_deployment("web", "default")).status
    assert (status.replicas, status.available_replicas) == (2, 2)
    assert {c.type: c.status for c in status.conditions}["Available"] == "True"


async def test_deleting_a_deployment_cascades_to_its_pods(
    sim: SimCluster, api_client: client.ApiClient
) -> None:
    apps = client.AppsV1Api(api_client)
    await apps.create_namespaced_deployment("default", DEPLOYMENT)
    await eventually(lambda: len(pods_of(sim)) == 3)
    await apps.delete_namespaced_deployment("web", "default")
    await eventually(lambda: not pods_of(sim) and not sim.store.list("replicasets"))


async def test_orphan_deletion_keeps_the_dependents(sim: SimCluster, api_client: client.ApiClient) -> None:
    apps = client.AppsV1Api(api_client)
    await apps.create_namespaced_deployment("default", DEPLOYMENT)
    await eventually(lambda: len(pods_of(sim)) == 3)
    await apps.delete_namespaced_deployment("web", "default", propagation_policy="Orphan")
    await eventually(lambda: not sim.store.list("deployments"))
    (rs,) = sim.store.list("replicasets", "default")
    assert "ownerReferences" not in rs["metadata"]
    assert len(pods_of(sim)) == 3


async def test_bound_pods_terminate_gracefully_through_the_kubelet(
    sim: SimCluster, core: client.CoreV1Api, pod: Callable[..., dict]
) -> None:
    await core.create_namespaced_pod("default", pod("g", nodeName="node-0000"))
    deleted = await core.delete_namespaced_pod("g", "default")
    assert deleted.metadata.deletion_timestamp is not None
    await eventually(lambda: sim.store.get("pods", "default", "g") is None)


async def test_finalizers_hold_deletion_until_removed(
    sim: SimCluster, core: client.CoreV1Api, pod: Callable[..., dict]
) -> None:
    manifest = pod("fin")
    manifest["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_pod("default", manifest)
    await core.delete_namespaced_pod("fin", "default")
    held = sim.store.get("pods", "default", "fin")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    await core.patch_namespaced_pod("fin", "default", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert sim.store.get("pods", "default", "fin") is None
