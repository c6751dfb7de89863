"""The status server over real HTTP on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.metrics import SchedulerMetrics
from scheduler.serving import StatusServer


class Flag:
    """A check that fails with ``reason`` until it is set."""

    def __init__(self, reason: str) -> None:
        self.ok = False
        self.reason = reason

    def __call__(self) -> str | None:
        return None if self.ok else self.reason


@pytest.fixture
def synced() -> Flag:
    return Flag("waiting for handlers to sync")


@pytest.fixture
def metrics() -> SchedulerMetrics:
    return SchedulerMetrics()


@pytest.fixture
async def server(synced: Flag, metrics: SchedulerMetrics) -> AsyncIterator[StatusServer]:
    srv = StatusServer(
        "127.0.0.1",
        0,
        metrics=metrics,
        configz=lambda: {"apiVersion": "kubescheduler.config.k8s.io/v1", "parallelism": 16},
        health_checks=[("leaderElection", lambda: None)],
        ready_checks=[("shutdown", lambda: None), ("sched-handler-sync", synced)],
    )
    await srv.start()
    yield srv
    await srv.stop()


async def get(
    server: StatusServer, path: str, **headers: str
) -> tuple[int, str, aiohttp.typedefs.LooseHeaders]:
    async with aiohttp.ClientSession() as session, session.get(server.url + path, headers=headers) as resp:
        return resp.status, await resp.text(), resp.headers


async def test_port_zero_binds_a_free_port(server):
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"


@pytest.mark.parametrize("path", ["/healthz", "/livez"])
async def test_liveness_probes_answer_ok(server, path):
    status, body, headers = await get(server, path)
    assert (status, body) == (200, "ok")
    assert headers["Content-Type"].startswith("text/plain")
    assert headers["X-Content-Type-Options"] == "nosniff"


async def test_verbose_healthz_lists_every_check(server):
    status, body, _ = await get(server, "/healthz?verbose")
    assert status == 200
    assert body == "[+]ping ok\n[+]leaderElection ok\nhealthz check passed\n"


async def test_readyz_is_503_with_the_failed_check_before_sync(server):
    status, body, _ = await get(server, "/readyz")
    assert status == 503
    assert body == (
        "[+]ping ok\n[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
    )
    assert "waiting for handlers" not in body


async def test_readyz_turns_200_once_the_check_passes(server, synced):
    assert (await get(server, "/readyz"))[0] == 503
    synced.ok = True
    status, body, _ = await get(server, "/readyz")
    assert (status, body) == (200, "ok")
    status, body, _ = await get(server, "/readyz?verbose")
    assert body.splitlines() == [
        "[+]ping ok",
        "[+]shutdown ok",
        "[+]sched-handler-sync ok",
        "readyz check passed",
    ]


@pytest.mark.parametrize(
    ("query", "status", "last_lines"),
    [
        ("exclude=sched-handler-sync", 200, ["[+]sched-handler-sync excluded: ok"]),
        (
            "exclude=sched-handler-sync&exclude=nope&verbose",
            200,
            [
                "[+]sched-handler-sync excluded: ok",
                'warn: some health checks cannot be excluded: no matches for "nope"',
                "readyz check passed",
            ],
        ),
        ("exclude=shutdown", 503, ["[-]sched-handler-sync failed: reason withheld", "readyz check failed"]),
    ],
    ids=[
        "excluding the failing check passes",
        "unknown exclusions are warned about",
        "excluding another does not",
    ],
)
async def test_exclude_skips_named_checks(server, query, status, last_lines):
    got_status, body, _ = await get(server, f"/readyz?{query}")
    assert got_status == status
    if status == 200 and "verbose" not in query:
        assert body == "ok"
    else:
        assert body.splitlines()[-len(last_lines) :] == last_lines


async def test_single_checks_have_their_own_paths(server, synced):
    assert (await get(server, "/readyz/shutdown"))[:2] == (200, "ok")
    status, body, _ = await get(server, "/readyz/sched-handler-sync")
    assert status == 503
    assert "waiting for handlers to sync" in body
    assert (await get(server, "/readyz/nope"))[0] == 404
    assert (await get(server, "/livez/ping"))[:2] == (200, "ok")


async def test_a_check_that_raises_counts_as_failed():
    def broken() -> str | None:
        raise RuntimeError("boom")

    srv = StatusServer("127.0.0.1", 0, health_checks=[("broken", broken)])
    await srv.start()
    try:
        status, body, _ = await get(srv, "/healthz")
        assert status == 503
        assert "[-]broken failed: reason withheld" in body
    finally:
        await srv.stop()


async def test_metrics_serve_a_parseable_exposition_that_moves(server, metrics):
    metrics.observe_attempt("scheduled", "pyscheduler", 0.004)
    status, body, headers = await get(server, "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body)}
    attempts = families["scheduler_schedule_attempts"].samples
    assert [(s.labels, s.value) for s in attempts] == [
        ({"result": "scheduled", "profile": "pyscheduler"}, 1.0)
    ]
    metrics.observe_attempt("scheduled", "pyscheduler", 0.004)
    _, body, _ = await get(server, "/metrics")
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert families["scheduler_schedule_attempts"].samples[0].value == 2.0


async def test_metrics_negotiate_openmetrics(server):
    status, body, headers = await get(
        server, "/metrics", Accept="application/openmetrics-text; version=1.0.0"
    )
    assert status == 200
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")


async def test_configz_serves_the_configuration_as_json(server):
    status, body, headers = await get(server, "/configz")
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert orjson.loads(body) == {
        "componentconfig": {"apiVersion": "kubescheduler.config.k8s.io/v1", "parallelism": 16}
    }


async def test_disabled_metrics_and_configz_are_not_found():
    srv = StatusServer("127.0.0.1", 0)
    await srv.start()
    try:
        assert (await get(srv, "/metrics"))[0] == 404
        assert (await get(srv, "/configz"))[0] == 404
        assert (await get(srv, "/readyz"))[:2] == (200, "ok")
    finally:
        await srv.stop()


async def test_a_caller_supplied_ping_replaces_the_built_in_one():
    srv = StatusServer(
        "127.0.0.1", 0, health_checks=[("ping", lambda: None), ("leaderElection", lambda: None)]
    )
    await srv.start()
    try:
        assert (await get(srv, "/healthz?verbose"))[1].splitlines() == [
            "[+]ping ok",
            "[+]leaderElection ok",
            "healthz check passed",
        ]
    finally:
        await srv.stop()


def test_duplicate_check_names_are_refused():
    with pytest.raises(ValueError, match="duplicate"):
        StatusServer(health_checks=[("a", lambda: None), ("a", lambda: None)])


async def test_stop_frees_the_port(server):
    port = server.port
    await server.stop()
    again = StatusServer("127.0.0.1", port)
    await again.start()
    try:
        assert again.port == port
    finally:
        await again.stop()
