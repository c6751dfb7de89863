"""Fault injection, through the Python API and the HTTP admin path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from scheduler.sim import SimCluster

PodFactory = Callable[..., dict]


@pytest.mark.parametrize(
    ("code", "reason"), [(429, "TooManyRequests"), (500, "InternalError"), (503, "ServiceUnavailable")]
)
async def test_an_error_rate_of_one_fails_every_matching_request(
    sim: SimCluster, core: client.CoreV1Api, pod: PodFactory, code: int, reason: str
) -> None:
    sim.faults.set_error("create", "pods", 1.0, code=code)
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("default", pod("f"))
    assert (err.value.status, json.loads(err.value.body)["reason"]) == (code, reason)
    if code == 429:
        assert err.value.headers["Retry-After"] == "1"
    assert sim.store.get("pods", "default", "f") is None
    await core.list_namespaced_pod("default")  # other verbs are unaffected
    sim.faults.clear()
    await core.create_namespaced_pod("default", pod("f"))


async def test_latency_delays_matching_requests(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.faults.set_latency(0.2, verb="list", resource="nodes")
    loop = asyncio.get_running_loop()
    start = loop.time()
    await core.list_node()
    assert loop.time() - start >= 0.2


async def test_dropping_watches_ends_open_streams(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = (await core.list_node()).metadata.resource_version

    async def drop_soon() -> None:
        while not sim.store.watchers("nodes"):
            await asyncio.sleep(0.01)
        assert sim.faults.drop_watches("nodes") == 1

    dropper = asyncio.create_task(drop_soon())
    # timeout_seconds keeps the client from reconnecting by itself once the stream ends
    stream = watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=30, _request_timeout=5)
    events = [e async for e in stream]
    await dropper
    assert events == []
    assert sim.store.watchers("nodes") == []


async def test_the_next_watch_can_be_forced_to_410(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = (await core.list_node()).metadata.resource_version
    sim.faults.force_gone_next_watch("nodes")
    with pytest.raises(ApiException) as err:
        async for _ in watch.Watch().stream(
            core.list_node, resource_version=rv, timeout_seconds=30, _request_timeout=5
        ):
            pass
    assert err.value.status == 410
    stream = watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1, _request_timeout=5)
    assert [e async for e in stream] == [], "only the next watch fails"


async def test_binding_conflicts_can_be_injected(
    sim: SimCluster, core: client.CoreV1Api, pod: PodFactory
) -> None:
    await core.create_namespaced_pod("default", pod("b"))
    sim.faults.conflict_next_bindings(1)
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="b"), target=client.V1ObjectReference(name="node-0000")
    )
    first = await core.create_namespaced_pod_binding("b", "default", body, _preload_content=False)
    assert first.status == 409
    second = await core.create_namespaced_pod_binding("b", "default", body, _preload_content=False)
    assert second.status == 201


async def test_the_http_admin_path_switches_faults(sim: SimCluster) -> None:
    async with aiohttp.ClientSession() as http:
        command = {"action": "setError", "verb": "list", "resource": "nodes", "rate": 1, "code": 503}
        async with http.post(f"{sim.url}/_sim/faults", json=command) as resp:
            state = await resp.json()
            assert state["errors"][0]["code"] == 503
        async with http.get(f"{sim.url}/api/v1/nodes") as resp:
            assert resp.status == 503
        async with http.delete(f"{sim.url}/_sim/faults") as resp:
            assert (await resp.json())["errors"] == []
        async with http.get(f"{sim.url}/api/v1/nodes") as resp:
            assert resp.status == 200
        async with http.post(f"{sim.url}/_sim/faults", json={"action": "explode"}) as resp:
            assert resp.status == 400
