"""A small kopf operator reconciles a custom resource on the local endpoint.

kopf exercises what operators need of an API server: discovery of CRDs, list+watch, merge
patches of the resource (its progress annotations and finalizers) and of the status
subresource, core v1 Events, and peering through its own KopfPeering custom resource.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import kopf
import pytest

from simcluster import SimCluster
from tests.support.crds import WIDGET_CRD, WIDGETS, Http, established, widget

PEERING = "/apis/kopf.dev/v1/namespaces/default/kopfpeerings/default"
PEERING_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "kopfpeerings.kopf.dev"},
    "spec": {
        "group": "kopf.dev",
        "scope": "Namespaced",
        "names": {"plural": "kopfpeerings", "singular": "kopfpeering", "kind": "KopfPeering"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as cluster:
        yield cluster


@pytest.fixture
async def http(sim: SimCluster) -> AsyncIterator[Http]:
    async with aiohttp.ClientSession() as session:
        yield Http(session, sim.url)


def operator(sim: SimCluster) -> kopf.OperatorRegistry:
    """Sets status.phase from spec.size, records an Event, and cleans up on deletion."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.watching.server_timeout = 30

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=sim.url, insecure=True)

    @kopf.on.create("example.com", "v1", "widgets", id="created", registry=registry)
    def created(spec: Any, patch: Any, body: Any, **_: Any) -> dict[str, str]:
        patch.status["phase"] = f"size-{spec['size']}"
        kopf.info(body, reason="Sized", message=f"the widget is {spec['size']}")
        return {"seen": spec["size"]}

    @kopf.on.update("example.com", "v1", "widgets", field="spec.size", registry=registry)
    def resized(new: Any, patch: Any, **_: Any) -> None:
        patch.status["phase"] = f"resized-{new}"

    @kopf.on.delete("example.com", "v1", "widgets", registry=registry)
    def deleted(**_: Any) -> None:
        pass

    return registry


async def until(check: Callable[[], Awaitable[Any]], what: str, timeout: float = 8.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if found := await check():
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_kopf_operator_reconciles_a_custom_resource(
    sim: SimCluster, http: Http, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    crd = copy.deepcopy(WIDGET_CRD)
    await established(http, crd)
    await established(http, PEERING_CRD)
    code, _, _ = await http.call(
        "POST",
        PEERING.rsplit("/", 1)[0],
        {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "default"}},
    )
    assert code == 201
    # kopf runs in a thread with its own event loop, as an operator process would: at exit it
    # waits for every task its loop started, and this loop also runs the endpoint.
    stop, ready = threading.Event(), threading.Event()
    registry = operator(sim)

    def run() -> None:
        asyncio.run(
            kopf.operator(
                registry=registry,
                namespaces=["default"],
                clusterwide=False,
                peering_name="default",
                stop_flag=stop,
                ready_flag=ready,
            )
        )

    thread = threading.Thread(target=run, name="kopf-operator", daemon=True)
    thread.start()
    try:
        assert await asyncio.to_thread(ready.wait, 10), "kopf did not start"

        async def peers() -> dict[str, Any]:
            _, peering, _ = await http.call("GET", PEERING)
            return peering.get("status") or {}

        [peer] = (await until(peers, "kopf to announce itself in its KopfPeering")).values()
        assert peer["priority"] == 0 and peer["lifetime"] == 60
        await http.call("POST", WIDGETS, widget("w", size="small"))

        async def phase() -> str | None:
            _, obj, _ = await http.call("GET", f"{WIDGETS}/w")
            return (obj.get("status") or {}).get("phase")

        await until(lambda: _equal(phase, "size-small"), "the create handler")
        _, obj, _ = await http.call("GET", f"{WIDGETS}/w")
        assert obj["status"]["created"] == {"seen": "small"}  # kept: status preserves unknown fields
        assert "kopf.zalando.org/last-handled-configuration" in obj["metadata"]["annotations"]
        assert obj["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]

        async def sized_event() -> list[dict[str, Any]]:
            _, events, _ = await http.call("GET", "/api/v1/namespaces/default/events")
            return [e for e in events["items"] if e["reason"] == "Sized"]

        [event] = await until(sized_event, "the operator's Event")
        assert event["involvedObject"]["name"] == "w" and event["involvedObject"]["kind"] == "Widget"
        assert event["message"] == "the widget is small"

        await http.call("PATCH", f"{WIDGETS}/w", {"spec": {"size": "large"}}, "application/merge-patch+json")
        await until(lambda: _equal(phase, "resized-large"), "the update handler")

        await http.call("DELETE", f"{WIDGETS}/w")

        async def gone() -> bool:
            code, _, _ = await http.call("GET", f"{WIDGETS}/w")
            return code == 404

        await until(gone, "the delete handler to release the finalizer")
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()
    assert await peers() == {}  # kopf withdraws from the peering when it exits
    problems = [
        r.getMessage() for r in caplog.records if r.name.startswith("kopf") and r.levelno >= logging.ERROR
    ]
    assert problems == []


async def _equal(read: Callable[[], Awaitable[Any]], expected: Any) -> bool:
    return await read() == expected
