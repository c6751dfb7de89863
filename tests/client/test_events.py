"""Events written in the background, with repeats folded into a series."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler.api import Pod
from scheduler.apidispatcher.events import WARNING, EventRecorder, micro_time
from scheduler.client import KubeClient

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t


@pytest.fixture
async def target(sim: Any, pod: Any) -> Pod:
    return Pod.from_dict(await sim.create("pods", pod("web-1")))


@pytest.fixture
async def recorder(kube: KubeClient) -> Any:
    rec = EventRecorder(kube, scheduler_name="pyscheduler", identity="pyscheduler-abc", now=Clock())
    task = asyncio.create_task(rec.run())
    yield rec
    await rec.close(timeout=2)
    assert task.done()


async def events(kube: KubeClient) -> list[dict[str, Any]]:
    resp = await kube.request("GET", EVENTS)
    return resp.body["items"]


async def test_an_event_is_written_with_the_upstream_fields(
    kube: KubeClient, recorder: Any, target: Pod
) -> None:
    recorder.record(target, WARNING, "FailedScheduling", "Scheduling", "0/2 nodes are available.")
    assert await recorder.flush(2)
    [event] = await events(kube)
    assert event["reportingController"] == "pyscheduler"
    assert event["reportingInstance"] == "pyscheduler-abc"
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "FailedScheduling", "Scheduling")
    assert event["note"] == "0/2 nodes are available."
    assert event["eventTime"] == "2026-01-02T03:04:05.678901Z"
    assert event["metadata"]["name"].startswith("web-1.")
    regarding = event["regarding"]
    assert (regarding["kind"], regarding["namespace"], regarding["name"]) == ("Pod", "default", "web-1")
    assert regarding["uid"] == target.uid
    assert "series" not in event


async def test_repeats_of_the_same_event_become_one_event_with_a_series(
    kube: KubeClient, recorder: Any, target: Pod
) -> None:
    clock: Clock = recorder.now
    for _ in range(3):
        recorder.record(target, WARNING, "FailedScheduling", "Scheduling", "0/2 nodes are available.")
        assert await recorder.flush(2)
        clock.t += timedelta(seconds=10)
    [event] = await events(kube)
    assert event["series"]["count"] == 3
    assert event["series"]["lastObservedTime"] == micro_time(clock.t - timedelta(seconds=10))
    assert event["eventTime"] == "2026-01-02T03:04:05.678901Z"  # the first observation stays


async def test_repeats_queued_together_are_coalesced_into_one_write(kube: KubeClient, target: Pod) -> None:
    writes: list[str] = []

    class Spy:
        async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
            writes.append(method)
            return await kube.request(method, path, body, **kw)

    rec = EventRecorder(Spy(), scheduler_name="pyscheduler", identity="i")  # type: ignore[arg-type]
    for _ in range(5):
        rec.record(target, WARNING, "FailedScheduling", "Scheduling", "same")
    task = asyncio.create_task(rec.run())
    await rec.close(timeout=2)
    assert task.done()
    assert writes == ["POST"]
    [event] = await events(kube)
    assert event["series"]["count"] == 5


@pytest.mark.parametrize(
    ("second", "expected_events"),
    [
        ({"note": "0/2 nodes are available."}, 1),
        ({"note": "0/3 nodes are available."}, 2),
        ({"reason": "Scheduled", "event_type": "Normal"}, 2),
    ],
)
async def test_only_identical_events_are_aggregated(
    kube: KubeClient, recorder: Any, target: Pod, second: dict[str, str], expected_events: int
) -> None:
    first = {"event_type": WARNING, "reason": "FailedScheduling", "action": "Scheduling"}
    first["note"] = "0/2 nodes are available."
    recorder.record(target, **first)
    assert await recorder.flush(2)
    recorder.record(target, **(first | second))
    assert await recorder.flush(2)
    assert len(await events(kube)) == expected_events


async def test_an_event_after_the_window_starts_a_new_event(
    kube: KubeClient, recorder: Any, target: Pod
) -> None:
    recorder.record(target, WARNING, "FailedScheduling", "Scheduling", "n")
    assert await recorder.flush(2)
    recorder.now.t += timedelta(minutes=7)
    recorder.record(target, WARNING, "FailedScheduling", "Scheduling", "n")
    assert await recorder.flush(2)
    assert [e.get("series") for e in await events(kube)] == [None, None]


async def test_only_the_newest_unwritten_event_of_an_object_waits(kube: KubeClient, target: Pod) -> None:
    rec = EventRecorder(kube, scheduler_name="pyscheduler", identity="i")
    for i in range(5):
        rec.record(target, WARNING, "FailedScheduling", "Scheduling", f"note {i}")
    assert rec.waiting == 1  # memory stays bounded by the number of objects
    task = asyncio.create_task(rec.run())
    await rec.close(timeout=2)
    assert task.done()
    assert [e["note"] for e in await events(kube)] == ["note 4"]


async def test_a_series_whose_event_was_deleted_is_created_again(
    kube: KubeClient, recorder: Any, target: Pod
) -> None:
    recorder.record(target, WARNING, "FailedScheduling", "Scheduling", "n")
    assert await recorder.flush(2)
    [event] = await events(kube)
    await kube.request("DELETE", f"{EVENTS}/{event['metadata']['name']}")
    recorder.record(target, WARNING, "FailedScheduling", "Scheduling", "n")
    assert await recorder.flush(2)
    [again] = await events(kube)
    assert again["series"]["count"] == 2


async def test_an_event_is_retried_until_the_api_server_takes_it(
    sim: Any, kube: KubeClient, target: Pod
) -> None:
    sim.faults.set_error("create", "events.events.k8s.io", 1.0, code=503)
    rec = EventRecorder(kube, scheduler_name="pyscheduler", identity="i", retry_delay=0.01, retry_cap=0.05)
    rec.record(target, WARNING, "FailedScheduling", "Scheduling", "n")
    task = asyncio.create_task(rec.run())
    assert not await rec.flush(0.3)  # still failing: nothing given up
    assert rec.outage.failing == ["event writer"]
    sim.faults.clear()
    assert await rec.flush(2)
    await rec.close(timeout=2)
    assert task.done()
    [event] = await events(kube)
    assert event["note"] == "n"


async def test_an_event_the_server_refuses_for_good_is_not_retried(
    sim: Any, kube: KubeClient, target: Pod
) -> None:
    sim.faults.set_error("create", "events.events.k8s.io", 1.0, code=422)
    rec = EventRecorder(kube, scheduler_name="pyscheduler", identity="i", retry_delay=0.01)
    rec.record(target, WARNING, "FailedScheduling", "Scheduling", "n")
    task = asyncio.create_task(rec.run())
    assert await rec.flush(2)
    sim.faults.clear()
    await rec.close(timeout=2)
    assert task.done()
    assert await events(kube) == []
