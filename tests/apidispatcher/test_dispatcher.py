"""The APIDispatcher: coalescing, turns, relevance, retries, bounded concurrency, metrics."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from scheduler.api import Pod
from scheduler.apidispatcher import RELEVANCES, APICall, APIDispatcher, PodStatusUpdates
from scheduler.client.backoff import Backoff
from scheduler.client.rest import ApiError, TransportError
from scheduler.framework.interface import ApiClient, ApiResponse
from scheduler.metrics import AsyncAPICallMetrics
from scheduler.testing.builders import FakeClient, make_pod

OK = ApiResponse(200, {})
UNAVAILABLE = ApiResponse(503, {"kind": "Status", "reason": "ServiceUnavailable", "message": "later"})


def unschedulable(message: str) -> dict[str, Any]:
    return {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}


class Sleeps:
    """The dispatcher's backoff waits, recorded instead of slept."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


class Setup:
    """A dispatcher over a FakeClient, the pods it knows by uid, and the status front."""

    def __init__(self, *responses: ApiResponse | BaseException, max_in_flight: int = 1, **kw: Any) -> None:
        self.client = FakeClient(list(responses), default=OK)
        self.pods: dict[str, Pod] = {}
        self.sleeps = Sleeps()
        self.registry = CollectorRegistry()
        self.dispatcher = APIDispatcher(
            self.client,
            RELEVANCES,
            "status writer",
            max_in_flight=max_in_flight,
            backoff=Backoff(initial=0.2, cap=1.0, jitter=0.0),
            metrics=AsyncAPICallMetrics(self.registry),
            sleep=self.sleeps,
            **kw,
        )
        self.status = PodStatusUpdates(self.dispatcher, self.client, self.current)

    def current(self, pod: Pod) -> Pod | None:
        return self.pods.get(pod.uid)

    def pod(self, name: str, **kwargs: Any) -> Pod:
        pod = make_pod(name, **kwargs)
        self.pods[pod.uid] = pod
        return pod

    def patches(self) -> list[tuple[str, Any]]:
        return [(r.path.split("/")[-2], r.body["status"]) for r in self.client.requests]

    def sample(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)

    async def drain(self, timeout: float = 2.0) -> bool:
        task = asyncio.create_task(self.dispatcher.run())
        try:
            return await self.dispatcher.flush(timeout)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_newer_status_change_merges_into_the_waiting_one() -> None:
    setup = Setup()
    web = setup.pod("web")
    setup.status.submit(web, unschedulable("0/3 nodes"), "node-1")
    setup.status.submit(web, unschedulable("0/4 nodes"), None)
    assert setup.dispatcher.pending == 1
    assert await setup.drain()
    [(name, status)] = setup.patches()
    assert name == "web"
    assert status["conditions"][0]["message"] == "0/4 nodes"  # the newest condition wins
    assert status["nominatedNodeName"] == "node-1"  # what the newer one left alone is kept


async def test_objects_are_served_oldest_first_and_a_newer_call_keeps_the_older_ones_turn() -> None:
    setup = Setup()
    a, b, c = setup.pod("a"), setup.pod("b"), setup.pod("c")
    for pod in (a, b, c):
        setup.status.submit(pod, unschedulable("first"), None)
    setup.status.submit(a, unschedulable("second"), None)
    assert await setup.drain()
    assert [name for name, _ in setup.patches()] == ["a", "b", "c"]
    assert setup.patches()[0][1]["conditions"][0]["message"] == "second"


async def test_a_change_already_in_the_pods_status_is_not_queued() -> None:
    setup = Setup()
    web = setup.pod("web", nominated_node_name="node-1")
    setup.status.submit(web, None, "node-1")
    assert setup.dispatcher.pending == 0
    assert await setup.drain()
    assert setup.client.requests == []


class Gate:
    """A client whose answers wait until released, to hold calls in flight."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.release = asyncio.Event()

    async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        self.sent.append(path.split("/")[-2])
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.release.wait()
        self.in_flight -= 1
        return OK


async def eventually(check: Callable[[], bool], timeout: float = 2.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.001)


async def test_at_most_max_in_flight_objects_are_written_at_once() -> None:
    gate = Gate()
    setup = Setup(max_in_flight=2)
    setup.dispatcher.client = gate
    for i in range(5):
        setup.status.submit(setup.pod(f"p{i}"), unschedulable("no"), None)
    task = asyncio.create_task(setup.dispatcher.run())
    await eventually(lambda: gate.in_flight == 2)
    assert setup.sample("scheduler_pending_async_api_calls", call_type="pod_status_patch") == 3
    gate.release.set()
    assert await setup.dispatcher.flush(2)
    task.cancel()
    assert sorted(gate.sent) == [f"p{i}" for i in range(5)]
    assert gate.most_in_flight == 2
    assert setup.sample("scheduler_pending_async_api_calls", call_type="pod_status_patch") == 0


async def test_a_change_made_while_the_pods_write_is_in_flight_is_sent_after_it() -> None:
    gate = Gate()
    setup = Setup(max_in_flight=4)
    setup.dispatcher.client = gate
    web = setup.pod("web")
    setup.status.submit(web, unschedulable("first"), None)
    task = asyncio.create_task(setup.dispatcher.run())
    await eventually(lambda: gate.in_flight == 1)
    setup.status.submit(web, unschedulable("second"), "node-2")
    await asyncio.sleep(0)
    assert gate.sent == ["web"]  # never two writes of one object at once
    gate.release.set()
    assert await setup.dispatcher.flush(2)
    task.cancel()
    assert gate.sent == ["web", "web"]
    assert gate.most_in_flight == 1


async def test_a_failed_write_is_retried_with_backoff_and_keeps_its_turn() -> None:
    setup = Setup(UNAVAILABLE, TransportError("connection refused"), OK, OK)
    a, b = setup.pod("a"), setup.pod("b")
    setup.status.submit(a, unschedulable("no"), None)
    setup.status.submit(b, unschedulable("no"), None)
    assert await setup.drain()
    assert [name for name, _ in setup.patches()] == ["a", "a", "a", "b"]
    assert setup.sleeps.delays == [0.2, 0.4]  # doubled after each failed round, reset by success
    assert (
        setup.sample("scheduler_async_api_call_execution_total", call_type="pod_status_patch", result="error")
        == 2
    )
    assert (
        setup.sample(
            "scheduler_async_api_call_execution_total", call_type="pod_status_patch", result="success"
        )
        == 2
    )
    assert (
        setup.sample(
            "scheduler_async_api_call_execution_duration_seconds_count",
            call_type="pod_status_patch",
            result="success",
        )
        == 2
    )
    assert setup.dispatcher.outage.failing == []


async def test_nothing_is_given_up_while_the_api_server_fails() -> None:
    setup = Setup(*[UNAVAILABLE] * 50)
    web = setup.pod("web")
    setup.status.submit(web, unschedulable("no"), None)
    task = asyncio.create_task(setup.dispatcher.run())
    await eventually(lambda: len(setup.client.requests) >= 10)
    assert setup.dispatcher.pending == 1
    assert setup.dispatcher.outage.failing == ["status writer"]
    assert max(setup.sleeps.delays) == 1.0  # capped
    setup.client.responses.clear()
    assert await setup.dispatcher.flush(2)
    task.cancel()


async def test_a_write_for_a_deleted_pod_is_dropped_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = Setup()
    web = setup.pod("web")
    setup.status.submit(web, unschedulable("no"), None)
    del setup.pods[web.uid]
    with caplog.at_level(logging.INFO, logger="scheduler.apidispatcher"):
        assert await setup.drain()
    assert setup.client.requests == []
    assert [r.getMessage() for r in caplog.records] == [
        "status of pod default/web not written: the pod is gone"
    ]


@pytest.mark.parametrize(("answer", "level"), [(404, logging.INFO), (422, logging.WARNING)])
async def test_an_answer_a_retry_cannot_change_is_not_retried(
    answer: int, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    setup = Setup(ApiResponse(answer, {"kind": "Status", "message": "no"}))
    setup.status.submit(setup.pod("web"), unschedulable("no"), None)
    with caplog.at_level(logging.INFO, logger="scheduler.apidispatcher"):
        assert await setup.drain()
    assert len(setup.client.requests) == 1
    assert [r.levelno for r in caplog.records] == [level]
    assert setup.sleeps.delays == []


class Call:
    """A call of any type, recording what happens to it."""

    def __init__(self, call_type: str, key: str, log: list[str], *, fails: bool = False) -> None:
        self.call_type = call_type
        self.key = key
        self.log = log
        self.fails = fails

    def merge(self, older: APICall) -> None:
        self.log.append(f"merged {older.call_type}")

    def is_noop(self) -> bool:
        return False

    async def execute(self, client: ApiClient) -> bool:
        if self.fails:
            raise RuntimeError("a bug")
        self.log.append(f"sent {self.call_type} {self.key}")
        return True


RANKS: Mapping[str, int] = {"status": 1, "binding": 2}


async def test_a_more_relevant_call_replaces_a_waiting_one_and_a_less_relevant_one_is_skipped() -> None:
    log: list[str] = []
    dispatcher = APIDispatcher(FakeClient(), RANKS, "test")
    assert dispatcher.add(Call("status", "web", log))
    assert dispatcher.add(Call("binding", "web", log))
    assert not dispatcher.add(Call("status", "web", log))  # a binding is not overwritten
    assert dispatcher.add(Call("binding", "web", log))
    task = asyncio.create_task(dispatcher.run())
    assert await dispatcher.flush(2)
    task.cancel()
    assert log == ["merged binding", "sent binding web"]


async def test_a_call_that_breaks_does_not_stop_the_ones_after_it(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    dispatcher = APIDispatcher(FakeClient(), RANKS, "test")
    dispatcher.add(Call("status", "a", log, fails=True))
    dispatcher.add(Call("status", "b", log))
    task = asyncio.create_task(dispatcher.run())
    assert await dispatcher.flush(2)
    task.cancel()
    assert log == ["sent status b"]
    assert "status call for a failed" in caplog.text


async def test_errors_raised_by_a_call_are_retried_as_transient() -> None:
    answers = [ApiError(503, "ServiceUnavailable", "later"), None]

    class Flaky(Call):
        async def execute(self, client: ApiClient) -> bool:
            error = answers.pop(0)
            if error is not None:
                raise error
            return await super().execute(client)

    log: list[str] = []
    sleeps = Sleeps()
    dispatcher = APIDispatcher(FakeClient(), RANKS, "test", sleep=sleeps)
    dispatcher.add(Flaky("status", "a", log))
    task = asyncio.create_task(dispatcher.run())
    assert await dispatcher.flush(2)
    task.cancel()
    assert log == ["sent status a"]
    assert len(sleeps.delays) == 1
