"""core/v1 and events.k8s.io/v1 Events as one resource: mapping, selectors, watches, kubectl."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from simcluster import SimCluster
from simcluster.events import to_core, to_events_v1
from tests.support.cluster import local_serving
from tests.support.kubectl import Kubectl, uses_kubectl

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"


def scheduler_event(name: str, pod: str, reason: str = "FailedScheduling", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reason": reason,
        "action": "Scheduling",
        "type": "Warning",
        "note": f"note for {pod}",
        "reportingController": "pyscheduler",
        "reportingInstance": "pyscheduler-1",
        "regarding": {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": pod},
        **extra,
    }


async def request(sim: SimCluster, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.request(method, sim.url + path, **kw) as resp:
        return resp.status, await resp.json()


def test_the_mapping_round_trips_and_spells_out_what_go_always_writes() -> None:
    v1 = scheduler_event("e", "p", series={"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"})
    core = to_core(v1)
    assert core["involvedObject"] == v1["regarding"]
    assert (core["message"], core["reportingComponent"], core["reportingInstance"]) == (
        "note for p",
        "pyscheduler",
        "pyscheduler-1",
    )
    assert (core["source"], core["firstTimestamp"], core["lastTimestamp"]) == ({}, None, None)
    assert core["series"] == v1["series"]
    assert to_events_v1(core) == {**v1, "deprecatedSource": {}, "deprecatedFirstTimestamp": None,
                                  "deprecatedLastTimestamp": None}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "selector", "names"),
    [
        (CORE, "involvedObject.name=a", ["e1", "e3"]),
        (CORE, "involvedObject.kind=Pod,reason=Scheduled", ["e3"]),
        (CORE, "involvedObject.namespace=default,type=Warning", ["e1", "e2"]),
        (CORE, "source=pyscheduler", ["e1", "e2", "e3"]),  # the reporting controller, without a source
        (CORE, "reportingComponent=pyscheduler,involvedObject.name!=a", ["e2"]),
        (V1, "regarding.name=b", ["e2"]),
        (V1, "reportingController=pyscheduler,reason=FailedScheduling", ["e1", "e2"]),
        (V1, "regarding.kind=Pod,type=Normal", ["e3"]),
    ],
)
async def test_field_selectors_of_each_group(
    sim: SimCluster, path: str, selector: str, names: list[str]
) -> None:
    for name, pod, reason, kind in (
        ("e1", "a", "FailedScheduling", "Warning"),
        ("e2", "b", "FailedScheduling", "Warning"),
        ("e3", "a", "Scheduled", "Normal"),
    ):
        await sim.create(
            "events.events.k8s.io", {**scheduler_event(name, pod, reason), "type": kind}, "default"
        )
    status, body = await request(sim, "GET", path, params={"fieldSelector": selector})
    assert status == 200, body
    assert [e["metadata"]["name"] for e in body["items"]] == names


@pytest.mark.parametrize(
    ("path", "label"), [(CORE, "regarding.name"), (V1, "involvedObject.name"), (V1, "source")]
)
async def test_a_field_label_the_group_lacks_is_refused(sim: SimCluster, path: str, label: str) -> None:
    status, body = await request(sim, "GET", path, params={"fieldSelector": f"{label}=x"})
    assert (status, body["message"]) == (400, f"field label not supported: {label}")


async def test_a_watch_of_either_group_sees_the_writes_of_the_other(sim: SimCluster) -> None:
    async with aiohttp.ClientSession() as http:
        params = {"watch": "true", "fieldSelector": "involvedObject.name=p", "timeoutSeconds": "5"}
        async with http.get(sim.url + CORE, params=params) as resp:
            await sim.create("events.events.k8s.io", scheduler_event("e1", "p"), "default")
            await sim.create("events.events.k8s.io", scheduler_event("other", "q"), "default")
            event = json.loads(await resp.content.readline())
    assert event["type"] == "ADDED"
    assert (event["object"]["apiVersion"], event["object"]["message"]) == ("v1", "note for p")
    rv = event["object"]["metadata"]["resourceVersion"]
    # resuming the events.k8s.io view from before the write replays it in that group's form
    async with aiohttp.ClientSession() as http:
        params = {"watch": "true", "resourceVersion": str(int(rv) - 1), "timeoutSeconds": "5"}
        async with http.get(sim.url + V1, params=params) as resp:
            replayed = json.loads(await resp.content.readline())
    assert (replayed["object"]["apiVersion"], replayed["object"]["note"]) == (
        "events.k8s.io/v1",
        "note for p",
    )
    assert replayed["object"]["metadata"]["resourceVersion"] == rv


async def test_deleting_through_one_group_deletes_in_both(sim: SimCluster) -> None:
    await sim.create("events.events.k8s.io", scheduler_event("e1", "p"), "default")
    status, _ = await request(sim, "DELETE", f"{CORE}/e1")
    assert status == 200
    assert sim.store.list("events") == sim.store.list("events.events.k8s.io") == []


# ---- what kubectl shows, with the real scheduler writing the events --------------------------

TOO_BIG = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "huge", "namespace": "default"},
    "spec": {
        "schedulerName": "pyscheduler",
        "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "64"}}}],
    },
}


async def eventually(predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)
    return value


@pytest.fixture
async def with_scheduler(tmp_path: Path) -> AsyncIterator[Kubectl]:
    """A SimCluster with the scheduler running against it and a too-big pod waiting."""
    async with SimCluster(nodes=3, kubelet_delay=0.01) as sim:
        config = default_config()
        config.leader_election.leader_elect = False
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=local_serving())
        task = asyncio.create_task(app.run())
        try:
            await sim.create("pods", TOO_BIG)
            await eventually(lambda: sim.store.list("events.events.k8s.io", "default"))
            yield Kubectl(sim, kubeconfig, tmp_path)
        finally:
            app.shutting_down.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 15)


@uses_kubectl
async def test_kubectl_shows_the_schedulers_failed_scheduling_event(with_scheduler: Kubectl) -> None:
    kubectl = with_scheduler
    [event] = kubectl.sim.store.list("events.events.k8s.io", "default")
    note = event["note"]
    assert note.startswith("0/3 nodes are available: 3 Insufficient cpu.")

    described = await kubectl("describe", "pod", "huge")
    events = described[described.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[3].split()[:2] == ["Warning", "FailedScheduling"]
    assert "pyscheduler" in events[3] and note in events[3]

    listed = (await kubectl("get", "events")).splitlines()
    assert listed[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert listed[1].split()[1:4] == ["Warning", "FailedScheduling", "pod/huge"]

    selected = await kubectl(
        "get", "events", "--field-selector", "reason=FailedScheduling,involvedObject.name=huge"
    )
    assert "pod/huge" in selected
    assert (
        "No resources found"
        in (await kubectl.run("get", "events", "--field-selector", "reason=Scheduled")).err
    )

    for_pod = (await kubectl("events", "--for", "pod/huge")).splitlines()
    assert for_pod[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert for_pod[1].split()[1:4] == ["Warning", "FailedScheduling", "Pod/huge"]
