"""Restoring objects in bulk (SimCluster.load): kept as read, watches relist, bad objects skipped."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scheduler.client.config import load_client_config
from scheduler.client.informer import Informer
from scheduler.client.rest import KubeClient
from simcluster import SimCluster
from tests.support.cluster import eventually
from tests.support.coscheduling import CRD, podgroup


def bound_pod(name: str, node: str, namespace: str = "default") -> dict[str, Any]:
    """A pod as a cluster's LIST returns it: uid, status, nodeName and managedFields set."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "123456",
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "image": "x"}],
        },
        "status": {"phase": "Running", "podIP": "10.0.0.7"},
    }


class Names:
    """An informer handler that keeps nothing but the names it was given."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def on_add(self, obj: dict[str, Any]) -> None:
        self.names.add(obj["metadata"]["name"])

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.names.add(new["metadata"]["name"])

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.names.discard(obj["metadata"]["name"])


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=2, kubelet=False, controllers=False, bookmark_interval=0.1) as cluster:
        yield cluster


async def test_loaded_objects_keep_status_uid_and_node_name(sim: SimCluster) -> None:
    problems = sim.load({"pods": [bound_pod("a", "node-0000")]})
    assert problems == []
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{sim.url}/api/v1/namespaces/default/pods/a") as resp,
    ):
        served = await resp.json()
    assert served["metadata"]["uid"] == "uid-a"
    assert served["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert "managedFields" not in served["metadata"]
    assert served["metadata"]["resourceVersion"] != "123456"  # this store's own versions
    assert int(served["metadata"]["resourceVersion"]) <= sim.store.revision
    assert served["spec"]["nodeName"] == "node-0000"
    assert served["status"] == {"phase": "Running", "podIP": "10.0.0.7"}


async def test_a_watch_from_before_the_load_gets_410_and_an_informer_relists(
    sim: SimCluster, tmp_path: Path
) -> None:
    config = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    handler = Names()
    async with KubeClient(config) as client:
        informer: Informer[dict[str, Any]] = Informer(client, "/api/v1/pods", decode=dict, handler=handler)
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.synced.wait(), 5)
            before = str(sim.store.revision)
            sim.load({"pods": [bound_pod("a", "node-0000"), bound_pod("b", "node-0001")]})
            # the load sent no watch event: the informer learns of it by relisting
            await eventually(lambda: handler.names == {"a", "b"}, timeout=5.0, interval=0.01)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    async with aiohttp.ClientSession() as http:
        url = f"{sim.url}/api/v1/pods?watch=1&resourceVersion={before}"
        async with http.get(url) as resp:
            event = json.loads(await resp.content.readline())
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410


async def test_bad_objects_are_reported_once_and_skipped(sim: SimCluster) -> None:
    problems = sim.load(
        {
            "pods": [
                bound_pod("good", "node-0000"),
                {"metadata": {}},
                "not an object",
                bound_pod("stray", "node-0000", namespace="missing"),
            ],
            "widgets": [{"metadata": {"name": "w"}}],
        }
    )
    assert problems == [
        "pods[1]: skipped, no metadata.name",
        "pods[2]: skipped, no metadata.name",
        "pods missing/stray: skipped, namespace missing does not exist",
        "widgets: skipped, the local endpoint does not serve it",
    ]
    assert [p["metadata"]["name"] for p in sim.store.list("pods")] == ["good"]


async def test_namespaces_load_first_so_their_members_find_them(sim: SimCluster) -> None:
    problems = sim.load(
        {
            "pods": [bound_pod("a", "node-0000", namespace="team")],
            "namespaces": [{"metadata": {"name": "team"}}],
        }
    )
    assert problems == []
    assert sim.store.get("pods", "team", "a") is not None


async def test_crds_load_next_and_are_served_so_their_resources_load_too(sim: SimCluster) -> None:
    """A restored CRD is served at once; one that cannot be served is reported and left out."""
    broken = {"metadata": {"name": "broken.example.com"}, "spec": {"group": "example.com"}}
    problems = sim.load(
        {
            "podgroups.scheduling.x-k8s.io": [podgroup("train", 2)],
            "customresourcedefinitions": [copy.deepcopy(CRD), broken],
        }
    )
    assert len(problems) == 1 and problems[0].startswith(
        "customresourcedefinitions broken.example.com: skipped"
    )
    assert sim.store.get("podgroups.scheduling.x-k8s.io", "default", "train") is not None
    assert [c["metadata"]["name"] for c in sim.store.list("customresourcedefinitions")] == [
        CRD["metadata"]["name"]
    ]


async def test_volume_controllers_run_without_workload_controllers() -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False, volume_controllers=True) as sim:
        assert sim.controllers is None and sim.volumes is not None
        await sim.create(
            "storageclasses",
            {
                "metadata": {"name": "fast"},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "Immediate",
            },
        )
        pv = {
            "metadata": {"name": "pv-1"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "fast",
                "local": {"path": "/mnt/pv-1"},
            },
        }
        await sim.create("persistentvolumes", pv)
        claim = {
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "fast",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        await sim.create("persistentvolumeclaims", claim)

        def bound() -> bool:
            found = sim.store.get("persistentvolumeclaims", "default", "data") or {}
            return (found.get("status") or {}).get("phase") == "Bound"

        await eventually(bound, timeout=5.0, interval=0.01)


async def test_watches_of_a_view_of_the_loaded_kind_end_too(sim: SimCluster) -> None:
    """events.k8s.io/v1 Events are a view of core Events: its watchers relist as well."""
    event = {
        "metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "a", "namespace": "default"},
        "reason": "Scheduled",
        "message": "restored",
    }
    url = f"{sim.url}/apis/events.k8s.io/v1/events?watch=1"
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        sim.load({"events": [event]})
        rest = await asyncio.wait_for(resp.content.read(), 5)  # the stream ends
    assert b"restored" not in rest  # no event for the load: the client relists
