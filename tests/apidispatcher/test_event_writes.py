"""The Event recorder's writes on its dispatcher: one call per object, the series' PATCH."""

from __future__ import annotations

import asyncio

from scheduler.apidispatcher.events import WARNING, EventRecorder
from scheduler.framework.interface import ApiResponse
from scheduler.testing.builders import FakeClient, make_pod

EXISTS = ApiResponse(409, {"kind": "Status", "reason": "AlreadyExists", "message": "exists"})


async def drain(recorder: EventRecorder) -> bool:
    task = asyncio.create_task(recorder.run())
    landed = await recorder.flush(2)
    await recorder.close(timeout=1)
    assert task.done()
    return landed


async def test_a_series_whose_create_was_lost_is_patched_in_the_same_attempt() -> None:
    """The create landed but its answer was lost: the retry's 409 means the Event is there, so
    the count it lacks is PATCHed at once, not after a backoff."""
    client = FakeClient([EXISTS], default=ApiResponse(200, {}))
    # a backoff would outlast the flush below
    recorder = EventRecorder(client, scheduler_name="pyscheduler", identity="i", retry_delay=60)
    web = make_pod("web")
    recorder.record(web, WARNING, "FailedScheduling", "Scheduling", "n")
    recorder.record(web, WARNING, "FailedScheduling", "Scheduling", "n")
    assert await drain(recorder)
    assert [r.method for r in client.requests] == ["POST", "PATCH"]
    assert client.requests[1].body["series"]["count"] == 2
    assert recorder.outage.failing == []


async def test_events_about_different_objects_wait_side_by_side() -> None:
    client = FakeClient(default=ApiResponse(201, {}))
    recorder = EventRecorder(client, scheduler_name="pyscheduler", identity="i")
    for name in ("a", "b", "c"):
        recorder.record(make_pod(name), WARNING, "FailedScheduling", "Scheduling", "n")
    assert recorder.waiting == 3
    assert await drain(recorder)
    assert [r.body["regarding"]["name"] for r in client.requests] == ["a", "b", "c"]
