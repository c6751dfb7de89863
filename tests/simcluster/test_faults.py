"""Fault injection, through the Python API and the HTTP admin path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from simcluster import SimCluster

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


async def test_an_injected_object_is_served_as_given_by_list_get_and_watch(sim: SimCluster) -> None:
    hostile = {"metadata": {"name": "h", "namespace": "default", "uid": "u"}, "spec": "oops", "n": 10**30}
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{sim.url}/api/v1/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        command = {"action": "injectRaw", "resource": "pods", "object": None, "name": "null"}
        async with http.post(f"{sim.url}/_sim/faults", json=command) as resp:
            assert (await resp.json())["rawObjects"] == 1
        stamped = sim.faults.inject_raw("pods", hostile)
        async with http.get(
            f"{sim.url}/api/v1/pods", params={"fieldSelector": "status.phase!=Failed"}
        ) as resp:
            body = await resp.text()
        assert body.endswith(',"spec":"oops","n":1000000000000000000000000000000},null]}')  # in key order
        async with http.get(f"{sim.url}/api/v1/namespaces/default/pods/h") as resp:
            assert (await resp.json())["metadata"]["resourceVersion"] == str(stamped)
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
        async with http.get(f"{sim.url}/api/v1/pods", params=params) as resp:
            events = [json.loads(line) for line in (await resp.text()).splitlines()]
    assert [(e["type"], e["object"] if e["object"] is None else e["object"]["spec"]) for e in events] == [
        ("ADDED", None),
        ("ADDED", "oops"),
    ]


async def test_an_injected_pod_takes_a_status_patch_and_a_binding_as_given(sim: SimCluster) -> None:
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u", "labels": ["odd"]}, "spec": {}}
    sim.faults.inject_raw("pods", pod)
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    async with aiohttp.ClientSession() as http:
        path = f"{sim.url}/api/v1/namespaces/default/pods/p"
        headers = {"Content-Type": "application/strategic-merge-patch+json"}
        patch = json.dumps({"status": {"conditions": [condition]}, "metadata": {"labels": None}})
        async with http.patch(f"{path}/status", data=patch, headers=headers) as resp:
            assert resp.status == 200
        binding = {"target": {"kind": "Node", "name": "node-0000"}}
        async with http.post(f"{path}/binding", json=binding) as resp:
            assert resp.status == 201
        async with http.post(f"{path}/binding", json=binding) as resp:
            assert resp.status == 409  # bound once, like any pod
    stored = sim.store.get("pods", "default", "p")
    assert stored["metadata"]["labels"] == ["odd"]  # a status patch changes only the status
    assert stored["spec"] == {"nodeName": "node-0000"}
    assert stored["status"]["conditions"] == [{"type": "PodScheduled", "status": "True"}]
    assert sim.faults.is_raw("pods", "default", "p")
    await sim.create(
        "pods", {"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    assert not sim.faults.is_raw("pods", "default", "q")
