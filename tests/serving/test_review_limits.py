"""Anyone who reaches the port makes the scheduler ask the API server: what bounds the asking."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.framework.interface import ApiResponse
from scheduler.metrics import SchedulerMetrics
from scheduler.serving import AuthOptions, DelegatedAuth, ServingCertificate, StatusServer, TLSOptions
from scheduler.serving.auth import CACHE_SIZE
from scheduler.testing import FakeClock
from simcluster import SimCluster
from tests.support.cluster import RunningApps, eventually, local_serving, node_of, pod_manifest

GOOD = "Bearer good-token"


class ReviewApi:
    """The API server's side of the reviews: ``good-token`` is Prometheus, every other token is
    refused; only Prometheus may get /metrics. ``hold()`` keeps answers back until ``release()``."""

    def __init__(self) -> None:
        self.token_reviews: list[str] = []
        self.access_reviews: list[tuple[str, str]] = []
        self.waiting = 0
        self._open = asyncio.Event()
        self._open.set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        self.waiting += 1
        try:
            await self._open.wait()
        finally:
            self.waiting -= 1
        spec = body["spec"]
        if path.endswith("tokenreviews"):
            self.token_reviews.append(spec["token"])
            if spec["token"] != "good-token":
                return ApiResponse(201, {"status": {"authenticated": False}})
            user = {"username": "prometheus", "groups": ["monitoring"]}
            return ApiResponse(201, {"status": {"authenticated": True, "user": user}})
        self.access_reviews.append((spec["user"], spec["nonResourceAttributes"]["path"]))
        allowed = spec["user"] == "prometheus" and spec["nonResourceAttributes"]["path"] == "/metrics"
        return ApiResponse(201, {"status": {"allowed": allowed}})


async def test_a_flood_of_distinct_bad_tokens_is_cached_within_a_bound_and_evicts_no_good_one() -> None:
    api = ReviewApi()
    auth = DelegatedAuth(api, api, AuthOptions(), clock=FakeClock())  # nothing expires
    assert (await auth.decide("GET", "/metrics", GOOD, None)).status == 200
    flood = CACHE_SIZE + 100
    for i in range(flood):
        assert (await auth.decide("GET", "/metrics", f"Bearer bad-{i}", None)).status == 401
    assert len(api.token_reviews) == 1 + flood
    # the good token's answer survived the flood: no review, no SubjectAccessReview either
    assert (await auth.decide("GET", "/metrics", GOOD, None)).status == 200
    assert len(api.token_reviews) == 1 + flood and len(api.access_reviews) == 1
    # the refused tokens are held up to the bound: the newest still cached, the oldest gone
    assert (await auth.decide("GET", "/metrics", f"Bearer bad-{flood - 1}", None)).status == 401
    assert len(api.token_reviews) == 1 + flood
    assert (await auth.decide("GET", "/metrics", "Bearer bad-0", None)).status == 401
    assert api.token_reviews[-1] == "bad-0"


async def test_anonymous_requests_for_distinct_paths_keep_the_allowed_verdicts() -> None:
    api = ReviewApi()
    auth = DelegatedAuth(api, api, AuthOptions(), clock=FakeClock(), cache_size=8)
    assert (await auth.decide("GET", "/metrics", GOOD, None)).status == 200
    for i in range(50):
        assert (await auth.decide("GET", f"/nothing-{i}", None, None)).status == 403
    assert (await auth.decide("GET", "/metrics", GOOD, None)).status == 200
    assert api.access_reviews.count(("prometheus", "/metrics")) == 1
    assert (await auth.decide("GET", "/nothing-0", None, None)).status == 403  # evicted, asked anew
    assert api.access_reviews[-1] == ("system:anonymous", "/nothing-0")


async def test_concurrent_requests_with_one_unknown_token_share_one_review() -> None:
    api = ReviewApi()
    auth = DelegatedAuth(api, api, AuthOptions(), clock=FakeClock())
    api.hold()
    requests = [asyncio.create_task(auth.decide("GET", "/metrics", GOOD, None)) for _ in range(20)]
    await eventually(lambda: api.waiting == 1)
    api.release()
    assert [d.status for d in await asyncio.gather(*requests)] == [200] * 20
    assert api.token_reviews == ["good-token"]
    assert api.access_reviews == [("prometheus", "/metrics")]


async def test_a_shared_review_outlives_the_request_that_started_it() -> None:
    api = ReviewApi()
    auth = DelegatedAuth(api, api, AuthOptions(), clock=FakeClock())
    api.hold()
    first = asyncio.create_task(auth.decide("GET", "/metrics", GOOD, None))
    await eventually(lambda: api.waiting == 1)
    second = asyncio.create_task(auth.decide("GET", "/metrics", GOOD, None))
    await asyncio.sleep(0)
    first.cancel()  # its caller went away
    api.release()
    assert (await second).status == 200
    assert api.token_reviews == ["good-token"]


async def test_reviews_in_flight_are_bounded_and_requests_beyond_the_queue_get_429() -> None:
    api = ReviewApi()
    auth = DelegatedAuth(api, api, AuthOptions(), clock=FakeClock(), max_in_flight=3, max_waiting=5)
    api.hold()
    admitted = [
        asyncio.create_task(auth.decide("GET", "/metrics", f"Bearer bad-{i}", None)) for i in range(8)
    ]
    await eventually(lambda: api.waiting == 3)
    beyond = await auth.decide("GET", "/metrics", "Bearer one-too-many", None)
    assert (beyond.status, beyond.message.startswith("too many requests")) == (429, True)
    assert api.waiting == 3  # three sent, five queued, none more
    api.release()
    assert [d.status for d in await asyncio.gather(*admitted)] == [401] * 8
    assert (await auth.decide("GET", "/metrics", "Bearer one-too-many", None)).status == 401  # drained


async def test_a_request_beyond_the_queue_is_answered_429_with_a_retry_after() -> None:
    api = ReviewApi()
    auth = DelegatedAuth(api, api, AuthOptions(), max_in_flight=1, max_waiting=0)
    server = StatusServer(
        "127.0.0.1", 0, metrics=SchedulerMetrics(), tls=ServingCertificate(TLSOptions()), auth=auth
    )
    await server.start()
    api.hold()
    try:
        async with aiohttp.ClientSession() as http:
            first = asyncio.create_task(
                http.get(server.url + "/metrics", headers={"Authorization": GOOD}, ssl=False)
            )
            await eventually(lambda: api.waiting == 1)
            async with http.get(
                server.url + "/metrics", headers={"Authorization": "Bearer other"}, ssl=False
            ) as busy:
                body = await busy.json()
                assert (busy.status, busy.headers["Retry-After"]) == (429, "1")
                assert (body["kind"], body["reason"], body["code"]) == ("Status", "TooManyRequests", 429)
            api.release()
            async with await first as answer:
                assert answer.status == 200
    finally:
        api.release()
        await server.stop()


async def test_a_flood_of_bad_tokens_spends_none_of_the_schedulers_api_budget(tmp_path) -> None:
    """The scheduler's token bucket is nearly empty and refills once in 100 s: a review sent
    through it would wait that long, and so would the binding behind it."""
    async with SimCluster(nodes=2, kubelet=False, controllers=False) as sim:
        config = default_config()
        config.leader_election.leader_elect = False
        config.client_connection.qps, config.client_connection.burst = 0.01, 40
        apps = RunningApps()
        kubeconfig = str(sim.write_kubeconfig(tmp_path / "kubeconfig"))
        app = await apps.run(SchedulerApp(config, kubeconfig=kubeconfig, serving=local_serving()))
        try:
            assert app.server is not None
            url = app.server.url + "/metrics"
            timeout = aiohttp.ClientTimeout(total=20)
            async with aiohttp.ClientSession(timeout=timeout) as http:

                async def scrape(token: str) -> int:
                    headers = {"Authorization": f"Bearer {token}"}
                    async with http.get(url, headers=headers, ssl=False) as response:
                        return response.status

                statuses = await asyncio.gather(*(scrape(f"bad-{i}") for i in range(100)))
            assert statuses == [401] * 100
            await sim.create("pods", pod_manifest("after-the-flood"))
            await eventually(lambda: node_of(sim, "after-the-flood"))
        finally:
            await apps.stop()
