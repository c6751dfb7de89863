"""`dryRun=All`: validated, defaulted and answered as if written; nothing stored, no watch event."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from simcluster import SimCluster
from tests.support.kubectl import Kubectl, uses_kubectl

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


async def call(sim: SimCluster, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.request(method, sim.url + path, **kw) as resp:
        return resp.status, await resp.json()


@pytest.fixture
async def watched(sim: SimCluster) -> AsyncIterator[tuple[SimCluster, list[dict]]]:
    """The sim with a pod `p` and a pod watch collecting every event after it."""
    await sim.create("pods", pod("p"), "default")
    seen: list[dict] = []
    revision = sim.store.revision

    async def follow() -> None:
        params = {"watch": "1", "resourceVersion": str(revision)}
        async with aiohttp.ClientSession() as http, http.get(sim.url + PODS, params=params) as resp:
            async for line in resp.content:
                seen.append(json.loads(line))

    task = asyncio.create_task(follow())
    yield sim, seen
    task.cancel()


async def test_dry_runs_change_nothing(watched: tuple[SimCluster, list[dict]]) -> None:
    sim, seen = watched
    before = sim.store.get("pods", "default", "p")
    revision = sim.store.revision
    dry = {"dryRun": "All"}

    status, created = await call(sim, "POST", PODS, params=dry, json=pod("q"))
    assert status == 201
    assert created["spec"]["schedulerName"] == "default-scheduler"  # defaulted
    assert created["metadata"]["uid"] and "resourceVersion" not in created["metadata"]
    status, updated = await call(
        sim,
        "PUT",
        f"{PODS}/p",
        params=dry,
        json={**before, "metadata": {**before["metadata"], "labels": {"a": "b"}}},
    )
    assert (status, updated["metadata"]["labels"]) == (200, {"a": "b"})
    headers = {"Content-Type": "application/merge-patch+json"}
    status, patched = await call(
        sim, "PATCH", f"{PODS}/p", params=dry, headers=headers, data='{"metadata":{"labels":{"x":"y"}}}'
    )
    assert (status, patched["metadata"]["labels"]) == (200, {"x": "y"})
    assert patched["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    status, deleted = await call(sim, "DELETE", f"{PODS}/p", params=dry)
    assert (status, deleted["metadata"]["name"]) == (200, "p")

    # a marker write proves the watch was live: it is the only event it saw
    await sim.create("pods", pod("marker"), "default")
    for _ in range(200):
        if seen:
            break
        await asyncio.sleep(0.01)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [("ADDED", "marker")]
    assert sim.store.get("pods", "default", "p") == before
    assert sim.store.get("pods", "default", "q") is None
    assert sim.store.revision == revision + 1


async def test_a_dry_run_still_validates(sim: SimCluster) -> None:
    status, body = await call(
        sim, "POST", PODS, params={"dryRun": "All"}, json={"metadata": {"name": "bad"}, "spec": {}}
    )
    assert (status, body["reason"]) == (422, "Invalid")
    status, body = await call(sim, "POST", PODS, params={"dryRun": "Some"}, json=pod("q"))
    assert (status, body["message"]) == (
        422,
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: '
        'supported values: "All"',
    )


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with SimCluster(nodes=1, kubelet_delay=0.01) as sim:
        yield Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)


@uses_kubectl
async def test_kubectl_server_dry_runs(kubectl: Kubectl) -> None:
    out = await kubectl("create", "deployment", "web", "--image=nginx", "--dry-run=server", "-o", "json")
    assert json.loads(out)["spec"]["revisionHistoryLimit"] == 10  # the server's defaults
    assert kubectl.sim.store.list("deployments") == []
    await kubectl("create", "configmap", "cm", "--from-literal=a=b")
    assert "(server dry run)" in await kubectl("label", "configmap", "cm", "x=y", "--dry-run=server")
    assert "(server dry run)" in await kubectl("delete", "configmap", "cm", "--dry-run=server")
    assert kubectl.sim.store.get("configmaps", "default", "cm")["metadata"].get("labels") is None
    assert (await kubectl("get", "configmap", "cm", "-o", "name")).strip() == "configmap/cm"
