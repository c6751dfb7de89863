"""KubeClient over real HTTP: Status errors, retries of reads only, auth headers, throttling."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from scheduler.client import (
    ApiError,
    KubeClient,
    RateLimiter,
    TransportError,
    raise_for_status,
)
from scheduler.client.rest import ApiResponse
from simcluster.access import ADMIN_TOKEN


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code} | {
        "reason": reason,
        "message": message,
    }


@pytest.mark.parametrize(
    ("status", "reason", "message", "flag"),
    [
        (404, "NotFound", 'pods "a" not found', "is_not_found"),
        (409, "Conflict", 'Operation cannot be fulfilled on pods/binding "a"', "is_conflict"),
        (409, "AlreadyExists", 'pods "a" already exists', "is_already_exists"),
        (410, "Expired", "too old resource version", "is_gone"),
        (503, "ServiceUnavailable", "the server is currently unable to handle the request", "is_retriable"),
    ],
)
def test_api_error_reads_reason_and_message_from_the_status_body(
    status: int, reason: str, message: str, flag: str
) -> None:
    err = ApiError.from_response(ApiResponse(status, status_body(status, reason, message)))
    assert (err.status, err.reason, err.message) == (status, reason, message)
    for name in ("is_not_found", "is_conflict", "is_already_exists", "is_gone", "is_retriable"):
        assert getattr(err, name) is (name == flag), name


def test_a_body_that_is_not_a_status_still_gives_a_reason_from_the_code() -> None:
    err = ApiError.from_response(ApiResponse(503, "upstream connect error"))
    assert (err.reason, err.message) == ("ServiceUnavailable", "upstream connect error")


def test_raise_for_status_returns_the_body_of_a_success_and_raises_otherwise() -> None:
    assert raise_for_status(ApiResponse(201, {"ok": 1})) == {"ok": 1}
    with pytest.raises(ApiError) as info:
        raise_for_status(ApiResponse(404, status_body(404, "NotFound", "gone")))
    assert info.value.reason == "NotFound"


async def test_requests_round_trip_json_and_errors_come_back_as_responses(kube: KubeClient, pod: Any) -> None:
    created = await kube.request("POST", "/api/v1/namespaces/default/pods", pod("web-1"))
    assert created.status == 201
    assert created.body["metadata"]["uid"]
    again = await kube.request("POST", "/api/v1/namespaces/default/pods", pod("web-1"))
    assert again.status == 409
    assert ApiError.from_response(again).is_already_exists
    missing = await kube.request("GET", "/api/v1/namespaces/default/pods/nope")
    assert missing.status == 404
    assert ApiError.from_response(missing).message == 'pods "nope" not found'


async def test_a_watch_stream_yields_one_json_event_per_line(kube: KubeClient, pod: Any) -> None:
    await kube.request("POST", "/api/v1/namespaces/default/pods", pod("web-1"))
    params = {"watch": "true", "resourceVersion": "1", "timeoutSeconds": "1"}
    lines = kube.stream_lines("/api/v1/namespaces/default/pods", params)
    first = orjson.loads(await anext(lines))
    await lines.aclose()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "web-1")


async def flaky_server(scripted: Any, failures: int, code: int = 429) -> tuple[str, list[web.Request]]:
    seen: list[web.Request] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request)
        if len(seen) <= failures:
            body = orjson.dumps(status_body(code, "TooManyRequests", "slow down"))
            return web.Response(status=code, body=body, headers={"Retry-After": "0"})
        return web.Response(body=b'{"kind":"PodList","items":[]}', content_type="application/json")

    return await scripted(handler), seen


@pytest.mark.parametrize("code", [429, 503])
async def test_a_read_answered_with_retry_after_is_retried(scripted: Any, client_for: Any, code: int) -> None:
    url, seen = await flaky_server(scripted, failures=2, code=code)
    async with await client_for(url) as client:
        resp = await client.request("GET", "/api/v1/pods")
    assert resp.status == 200
    assert len(seen) == 3


async def test_reads_give_up_after_the_retry_budget(scripted: Any, client_for: Any) -> None:
    url, seen = await flaky_server(scripted, failures=10)
    async with await client_for(url, read_retries=2) as client:
        resp = await client.request("GET", "/api/v1/pods")
    assert resp.status == 429
    assert len(seen) == 3


async def test_writes_are_never_retried(scripted: Any, client_for: Any) -> None:
    url, seen = await flaky_server(scripted, failures=1)
    async with await client_for(url) as client:
        resp = await client.request("POST", "/api/v1/namespaces/default/pods/a/binding", {"target": {}})
    assert resp.status == 429
    assert len(seen) == 1


async def server_that_drops_every_answer(scripted: Any) -> tuple[str, list[str]]:
    """Reads each request whole, then closes the connection without answering."""
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        await request.read()
        seen.append(request.method)
        assert request.transport is not None
        request.transport.abort()
        return web.Response()

    return await scripted(handler), seen


@pytest.mark.parametrize(("method", "sent"), [("GET", 2), ("POST", 1)])
async def test_only_a_read_is_sent_again_when_its_answer_is_lost(
    scripted: Any, client_for: Any, method: str, sent: int
) -> None:
    """As Go's transport: a write the server received may have been carried out (a Binding), so
    it is not repeated; a read is, once, on a new connection."""
    url, seen = await server_that_drops_every_answer(scripted)
    async with await client_for(url) as client:
        with pytest.raises(TransportError):
            await client.request(method, "/api/v1/namespaces/default/pods/a/binding", {"target": {}})
    assert seen == [method] * sent


async def test_the_kubeconfig_token_and_json_content_type_are_sent(scripted: Any, client_for: Any) -> None:
    seen: list[tuple[dict[str, str], bytes]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((dict(request.headers), await request.read()))
        return web.Response(status=201, body=b"{}", content_type="application/json")

    url = await scripted(handler)
    async with await client_for(url) as client:
        await client.request("PATCH", "/x", {"a": 1}, content_type="application/strategic-merge-patch+json")
    headers, body = seen[0]
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert orjson.loads(body) == {"a": 1}


async def test_every_request_but_watches_takes_a_token_from_the_rate_limiter(kube: KubeClient) -> None:
    taken: list[float] = []

    class Counting(RateLimiter):
        async def acquire(self) -> None:
            taken.append(1)

    client = KubeClient(kube.config, rate_limiter=Counting(1, 1))
    try:
        await client.request("GET", "/api/v1/nodes")
        await client.request("GET", "/api/v1/namespaces")
        lines = client.stream_lines("/api/v1/nodes", {"watch": "true", "timeoutSeconds": "1"})
        await anext(lines)
        await lines.aclose()
    finally:
        await client.close()
    assert len(taken) == 2


async def test_a_sibling_throttles_with_a_bucket_of_its_own(kube: KubeClient) -> None:
    drained = RateLimiter(0.001, 1)
    drained.reserve()  # the main bucket is empty: its next request would wait ~17 minutes
    main = KubeClient(kube.config, rate_limiter=drained)
    events = main.sibling(qps=0.001, burst=1)
    try:
        assert (await events.request("GET", "/api/v1/nodes")).status == 200
    finally:
        await events.close()
        await main.close()
    assert drained.reserve() > 60  # the sibling took nothing from it


async def test_closing_a_sibling_leaves_the_shared_connections_open(kube: KubeClient) -> None:
    async with KubeClient(kube.config, qps=0) as main:
        sibling = main.sibling(qps=0, burst=1)
        assert (await sibling.request("GET", "/api/v1/nodes")).status == 200
        await sibling.close()
        assert (await main.request("GET", "/api/v1/nodes")).status == 200


async def test_an_unreachable_server_raises_a_transport_error(client_for: Any) -> None:
    async with await client_for("http://127.0.0.1:9") as client:
        with pytest.raises(TransportError):
            await client.request("GET", "/api/v1/pods")


async def test_a_read_whose_connection_is_cut_under_it_is_sent_again_and_a_write_is_not(tmp_path) -> None:
    """The proxy holds each request, then the connection goes: the read is sent again on a new
    connection; the write is not (the server might have carried it out: its caller decides)."""
    from scheduler.client import load_client_config
    from simcluster import SimCluster
    from simcluster.proxy import FaultProxy

    async with (
        SimCluster(nodes=1, kubelet=False, controllers=False) as sim,
        FaultProxy(sim.host, sim.port) as proxy,
    ):
        kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
        kubeconfig.write_text(kubeconfig.read_text().replace(sim.url, proxy.url))
        async with KubeClient(await load_client_config(str(kubeconfig)), qps=0) as client:
            assert (await client.request("GET", "/api/v1/nodes")).status == 200
            proxy.delay = 0.3  # the request is on its way when the connection goes

            async def cut_under(method: str, path: str, body: Any = None) -> Any:
                pending = asyncio.create_task(client.request(method, path, body))
                for _ in range(200):
                    if proxy.held:
                        break
                    await asyncio.sleep(0.005)
                assert proxy.cut() == 1
                return await asyncio.wait_for(pending, 5)

            assert (await cut_under("GET", "/api/v1/namespaces")).status == 200
            with pytest.raises(TransportError):
                await cut_under("POST", "/api/v1/namespaces", {"metadata": {"name": "cut"}})
            assert sim.store.get("namespaces", None, "cut") is None


async def test_a_large_list_comes_gzipped_from_the_local_endpoint_and_is_read_whole(
    kube: KubeClient, sim: Any, pod: Any
) -> None:
    for i in range(300):  # ~150 KiB of pods: over the API server's 128 KiB threshold
        sim.api.create(sim.api.resource("pods"), "default", pod(f"p-{i:03d}", app="x" * 200))
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with aiohttp.ClientSession(auto_decompress=False, headers=headers) as http:
        for accept, encoding in (("gzip", "gzip"), ("identity", None)):
            async with http.get(sim.url + "/api/v1/pods", headers={"Accept-Encoding": accept}) as answer:
                assert answer.headers.get("Content-Encoding") == encoding
        async with http.get(sim.url + "/api/v1/nodes", headers={"Accept-Encoding": "gzip"}) as small:
            assert "Content-Encoding" not in small.headers  # 2 nodes: under the threshold
    resp = await kube.request("GET", "/api/v1/pods")
    assert len(raise_for_status(resp)["items"]) == 300


async def test_gzip_is_asked_for_except_on_watches_and_never_with_disable_compression(
    scripted: Any, tmp_path: Any
) -> None:
    import yaml

    from scheduler.client import load_client_config

    asked: list[tuple[str, str | None]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        asked.append((request.query.get("watch", ""), request.headers.get("Accept-Encoding")))
        return web.json_response({"kind": "List", "items": []})

    url = await scripted(handler)
    for disabled in (False, True):
        path = tmp_path / f"kc-{disabled}"
        cluster = {"server": url, "disable-compression": disabled}
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "c", "cluster": cluster}],
                    "users": [{"name": "u", "user": {}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        async with KubeClient(await load_client_config(str(path)), qps=0) as client:
            await client.request("GET", "/api/v1/pods")
            async for _ in client.stream_lines("/api/v1/pods", {"watch": "1"}):
                pass
    assert asked == [("", "gzip"), ("1", None), ("", None), ("1", None)]
