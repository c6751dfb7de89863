"""Informers against the simulated API server over real HTTP: list, watch, resume, relist."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest
from aiohttp import web

from scheduler.api import MalformedObject, Node, Pod
from scheduler.client import Informer, InformerGroup, KubeClient
from scheduler.client.backoff import Backoff
from scheduler.framework.interface import ApiResponse

PODS = "/api/v1/pods"


class Recorder:
    """An EventHandler that remembers what it was told, and whether the informer had synced."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.informer: Informer[Any] | None = None
        self.seen_before_sync = 0

    def _note(self, kind: str, obj: Pod) -> None:
        self.events.append((kind, obj.name))
        if self.informer is not None and not self.informer.synced.is_set():
            self.seen_before_sync += 1

    def on_add(self, obj: Pod) -> None:
        self._note("add", obj)

    def on_update(self, old: Pod, new: Pod) -> None:
        assert old.name == new.name
        self._note("update", new)

    def on_delete(self, obj: Pod) -> None:
        self._note("delete", obj)


class CountingClient:
    """Wraps a KubeClient and remembers the parameters of every LIST."""

    def __init__(self, inner: KubeClient) -> None:
        self.inner = inner
        self.lists: list[dict[str, str]] = []

    async def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> ApiResponse:
        if method == "GET":
            self.lists.append(dict(kwargs.get("params") or {}))
        return await self.inner.request(method, path, body, **kwargs)

    def stream_lines(
        self, path: str, params: Mapping[str, str] | None = None, **kwargs: Any
    ) -> AsyncIterator[bytes]:
        return self.inner.stream_lines(path, params, **kwargs)


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


@pytest.fixture
def client(kube: KubeClient) -> CountingClient:
    return CountingClient(kube)


@pytest.fixture
async def start() -> AsyncIterator[Callable[..., Any]]:
    tasks: list[asyncio.Task[None]] = []

    def run(informer: Informer[Any]) -> asyncio.Task[None]:
        task = asyncio.create_task(informer.run())
        tasks.append(task)
        return task

    yield run
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def pod_informer(client: Any, handler: Recorder, **kwargs: Any) -> Informer[Pod]:
    informer = Informer(
        client, PODS, decode=Pod.from_dict, handler=handler, backoff=Backoff(0.01, 0.05), **kwargs
    )
    handler.informer = informer
    return informer


async def create(sim: Any, pod: Callable[..., dict[str, Any]], *names: str, **labels: str) -> None:
    for name in names:
        await sim.create("pods", pod(name, **labels))


async def label(kube: KubeClient, name: str, **labels: str) -> None:
    patch = {"metadata": {"labels": labels}}
    path = f"/api/v1/namespaces/default/pods/{name}"
    resp = await kube.request("PATCH", path, patch, content_type="application/merge-patch+json")
    assert resp.status == 200


async def test_list_then_watch_delivers_adds_updates_and_deletes(
    sim: Any, client: CountingClient, kube: KubeClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, "a", "b")
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert sorted(recorder.events) == [("add", "a"), ("add", "b")]
    assert recorder.seen_before_sync == 2  # the handler had all of the list before "synced"

    await create(sim, pod, "c")
    await label(kube, "a", tier="web")
    await kube.request("DELETE", "/api/v1/namespaces/default/pods/b")
    await until(lambda: len(recorder.events) == 5)
    assert recorder.events[2:] == [("add", "c"), ("update", "a"), ("delete", "b")]
    assert sorted(informer.store.keys()) == ["default/a", "default/c"]
    assert informer.store.get("default/a").labels == {"tier": "web"}


async def test_bookmarks_advance_the_resume_point_without_object_changes(
    sim: Any, client: CountingClient, start: Any
) -> None:
    informer = pod_informer(client, Recorder())
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    listed = int(informer.resource_version or 0)
    await sim.create("namespaces", {"metadata": {"name": "elsewhere"}})  # moves the global revision
    await until(lambda: int(informer.resource_version or 0) > listed)


async def test_a_dropped_watch_resumes_and_delivers_missed_events_exactly_once(
    sim: Any, client: CountingClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, "a")
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    await until(lambda: sim.faults.drop_watches("pods") > 0)
    await create(sim, pod, "b", "c")
    await until(lambda: len(recorder.events) >= 3)
    await asyncio.sleep(0.2)  # room for any duplicate to show up
    assert recorder.events == [("add", "a"), ("add", "b"), ("add", "c")]
    assert len(client.lists) == 1  # resumed from the resourceVersion, no relist


async def test_gone_after_a_disconnect_relists_and_reconciles_without_ghosts(
    sim: Any, client: CountingClient, kube: KubeClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, "stays", "changes", "vanishes")
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    task = start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    await kube.request("DELETE", "/api/v1/namespaces/default/pods/vanishes")
    await label(kube, "changes", v="2")
    await create(sim, pod, "appears")
    sim.faults.compact()  # the informer's resourceVersion is now older than any history
    recorder.events.clear()

    start(informer)
    await until(lambda: len(recorder.events) >= 3)
    await asyncio.sleep(0.2)
    assert sorted(recorder.events) == [("add", "appears"), ("delete", "vanishes"), ("update", "changes")]
    assert sorted(informer.store.keys()) == ["default/appears", "default/changes", "default/stays"]
    assert len(client.lists) == 2


def labelled(informer: Informer[Pod], value: str, namespace: str = "default") -> list[str]:
    return sorted(p.name for p in informer.store.with_label(namespace, "g", value))


async def test_the_store_label_index_follows_watch_events_and_relists(
    sim: Any, client: CountingClient, kube: KubeClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, "a", "b", g="x")
    await sim.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    await sim.create("pods", pod("c", namespace="other", g="x"))
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    task = start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert labelled(informer, "x") == ["a", "b"]  # built from what was listed
    assert labelled(informer, "x", "other") == ["c"]
    await label(kube, "b", g="y")
    await create(sim, pod, "d", g="x")
    await kube.request("DELETE", "/api/v1/namespaces/default/pods/a")
    await until(lambda: ("delete", "a") in recorder.events and ("add", "d") in recorder.events)
    assert (labelled(informer, "x"), labelled(informer, "y")) == (["d"], ["b"])

    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await label(kube, "d", g="y")
    await kube.request("DELETE", "/api/v1/namespaces/default/pods/b")
    sim.faults.compact()  # the restart relists: the difference passes through the index too
    start(informer)
    await until(lambda: "default/b" not in informer.store and labelled(informer, "y") == ["d"])
    assert labelled(informer, "x") == []
    assert len(client.lists) == 2


async def test_a_watch_error_event_with_410_relists_and_unchanged_objects_stay_silent(
    sim: Any, client: CountingClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, "a", "b")
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    sim.faults.force_gone_next_watch("pods")
    await until(lambda: sim.faults.drop_watches("pods") > 0)
    await until(lambda: len(client.lists) == 2)
    await create(sim, pod, "c")
    await until(lambda: ("add", "c") in recorder.events)
    assert sorted(recorder.events) == [("add", "a"), ("add", "b"), ("add", "c")]


async def test_the_list_is_paginated_and_every_page_is_delivered(
    sim: Any, client: CountingClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, *(f"p{i}" for i in range(5)))
    recorder = Recorder()
    informer = pod_informer(client, recorder, page_size=2)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    assert sorted(name for _, name in recorder.events) == [f"p{i}" for i in range(5)]
    assert [p.get("limit") for p in client.lists] == ["2", "2", "2"]
    assert [bool(p.get("continue")) for p in client.lists] == [False, True, True]


async def test_each_next_page_is_asked_for_before_the_current_one_is_decoded(
    sim: Any, client: CountingClient, pod: Any, start: Any
) -> None:
    await create(sim, pod, *(f"p{i}" for i in range(5)))
    lists_when_decoded: dict[str, int] = {}  # pod name -> LIST requests sent when it was decoded

    def decode(obj: dict[str, Any]) -> Pod:
        lists_when_decoded[obj["metadata"]["name"]] = len(client.lists)
        return Pod.from_dict(obj)

    recorder = Recorder()
    informer = Informer(client, PODS, decode=decode, handler=recorder, page_size=2)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    # pages p0 p1 | p2 p3 | p4: the second page was requested before p0 was decoded, the third before p2
    assert lists_when_decoded == {"p0": 2, "p1": 2, "p2": 3, "p3": 3, "p4": 3}
    assert sorted(name for _, name in recorder.events) == [f"p{i}" for i in range(5)]


async def test_a_malformed_object_is_logged_and_skipped_while_the_rest_is_delivered(
    sim: Any, client: CountingClient, pod: Any, start: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def picky(raw: dict[str, Any]) -> Pod:
        obj = Pod.from_dict(raw)
        if obj.labels.get("broken"):
            raise MalformedObject("Pod", obj.key, "label broken is set")
        return obj

    await create(sim, pod, "good-1")
    await create(sim, pod, "bad-1", broken="yes")
    recorder = Recorder()
    informer = Informer(client, PODS, decode=picky, handler=recorder, backoff=Backoff(0.01, 0.05))
    with caplog.at_level(logging.WARNING, logger="scheduler.client.informer"):
        start(informer)
        await asyncio.wait_for(informer.synced.wait(), 5)
        await create(sim, pod, "bad-2", broken="yes")
        await create(sim, pod, "good-2")
        await until(lambda: len(recorder.events) == 2)
    assert recorder.events == [("add", "good-1"), ("add", "good-2")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("default/bad-1" in m and "label broken is set" in m for m in warnings)
    assert any("default/bad-2" in m for m in warnings)
    assert "default/bad-1" not in informer.store


class Malformed:
    """A MalformedHandler that remembers what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def malformed(self, key: str, obj: Any, error: MalformedObject) -> None:
        self.calls.append(("malformed", key))

    def gone(self, key: str) -> None:
        self.calls.append(("gone", key))


def reports(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "skipping malformed" in r.getMessage()]


async def test_items_that_are_not_even_objects_are_reported_once_and_the_informer_syncs(
    sim: Any, client: CountingClient, pod: Any, start: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await create(sim, pod, "good")
    sim.faults.inject_raw("pods", None, name="null")
    sim.faults.inject_raw("pods", {"metadata": "x"}, name="meta")
    cpu = {
        "metadata": {"name": "cpu", "uid": "u"},
        "spec": {"containers": [{"resources": {"requests": {"cpu": "?"}}}]},
    }
    sim.faults.inject_raw("pods", cpu)
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    with caplog.at_level(logging.WARNING, logger="scheduler.client.informer"):
        start(informer)
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert recorder.events == [("add", "good")]
        assert sorted(reports(caplog)) == [
            "informer pods: skipping malformed Pod <no metadata>: metadata: must be an object, "
            'got string "x"',
            "informer pods: skipping malformed Pod <no metadata>: must be an object, got null",
            "informer pods: skipping malformed Pod cpu: spec.containers[0].resources.requests[cpu]: "
            'invalid quantity "?"',
        ]
        sim.faults.force_gone_next_watch("pods")  # a relist sees them all again, and says nothing
        await until(lambda: sim.faults.drop_watches("pods") > 0)
        await until(lambda: len(client.lists) == 2)
        sim.faults.inject_raw("pods", 42, name="number")  # by watch
        await until(lambda: len(reports(caplog)) == 4)
    assert reports(caplog)[-1].endswith("Pod <no metadata>: must be an object, got number 42")
    assert informer.store.keys() == ["default/good"]


async def test_a_good_object_turned_bad_is_kept_unless_another_object_took_its_name(
    sim: Any, client: CountingClient, pod: Any, start: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await create(sim, pod, "a")
    recorder, malformed = Recorder(), Malformed()
    informer = pod_informer(client, recorder, malformed=malformed)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    good = sim.store.get("pods", "default", "a")
    bad = {**good, "spec": {**good["spec"], "priority": "high"}}
    with caplog.at_level(logging.WARNING, logger="scheduler.client.informer"):
        sim.faults.inject_raw("pods", bad)
        sim.faults.inject_raw("pods", {**bad, "metadata": {**bad["metadata"], "labels": {"new": "version"}}})
        await until(lambda: malformed.calls == [("malformed", "default/a")])
        assert informer.store.get("default/a") is not None  # the last good version
        sim.faults.inject_raw("pods", {**bad, "metadata": {**bad["metadata"], "uid": "another"}})
        await until(lambda: ("delete", "a") in recorder.events)
    assert "default/a" not in informer.store
    assert [line.endswith("; keeping its last good version") for line in reports(caplog)] == [True, False]
    assert malformed.calls == [("malformed", "default/a")] * 2  # another object, another report
    sim.faults.inject_raw("pods", good)
    await until(lambda: ("add", "a") in recorder.events[1:])
    assert malformed.calls[-1] == ("gone", "default/a")


async def test_a_failing_handler_is_logged_and_does_not_stop_the_informer(
    sim: Any, client: CountingClient, pod: Any, start: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()

    class Grumpy(Recorder):
        def on_add(self, obj: Pod) -> None:
            recorder.on_add(obj)
            if obj.name == "first":
                raise RuntimeError("handler bug")

    informer = pod_informer(client, Grumpy())
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    await create(sim, pod, "first", "second")
    await until(lambda: len(recorder.events) == 2)
    assert any("handler bug" in (r.exc_text or "") or r.exc_info for r in caplog.records)


async def test_an_informer_group_reports_per_informer_sync_for_readiness(client: CountingClient) -> None:
    pods = pod_informer(client, Recorder())
    nodes: Informer[Node] = Informer(client, "/api/v1/nodes", decode=Node.from_dict, handler=Recorder())
    group = InformerGroup([pods, nodes])
    assert group.synced() == {"pods": False, "nodes": False}
    group.start()
    try:
        assert await group.wait_synced(timeout=5)
        assert group.synced() == {"pods": True, "nodes": True}
        assert sorted(n.name for n in group["nodes"].store.list()) == ["node-0000", "node-0001"]
    finally:
        await group.stop()


async def test_wait_synced_times_out_while_the_server_is_down(client_for: Any) -> None:
    client = await client_for("http://127.0.0.1:9")
    informer = Informer(client, PODS, decode=Pod.from_dict, handler=Recorder(), backoff=Backoff(0.01))
    group = InformerGroup([informer])
    group.start()
    try:
        assert await group.wait_synced(timeout=0.2) is False
        assert group.synced() == {"pods": False}
    finally:
        await group.stop()
        await client.close()


async def test_an_expired_continue_token_restarts_the_list_in_one_request(
    scripted: Any, client_for: Any
) -> None:
    """Scripted server: page 2 answers 410, so the informer lists again without a limit."""
    seen: list[dict[str, str]] = []

    def item(name: str) -> dict[str, Any]:
        meta = {"name": name, "namespace": "default", "uid": name, "resourceVersion": "5"}
        return {"metadata": meta, "spec": {"containers": []}}

    async def handler(request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        if query.get("watch"):
            await asyncio.sleep(5)  # a quiet watch; the test ends first
            return web.Response(status=200)
        seen.append(query)
        if "continue" in query:
            status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "continue expired"}
            return web.json_response(status, status=410)
        if "limit" in query:
            return web.json_response(
                {"items": [item("a")], "metadata": {"resourceVersion": "5", "continue": "t"}}
            )
        return web.json_response({"items": [item("a"), item("b")], "metadata": {"resourceVersion": "6"}})

    client = await client_for(await scripted(handler))
    recorder = Recorder()
    informer = pod_informer(client, recorder, page_size=1)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()
    assert sorted(recorder.events) == [("add", "a"), ("add", "b")]
    assert [("limit" in q, "continue" in q) for q in seen] == [(True, False), (True, True), (False, False)]
    assert informer.resource_version == "6"


async def test_a_watch_cut_by_the_network_resumes_at_once_without_a_relist(
    sim: Any, pod: Any, start: Any, tmp_path: Any
) -> None:
    from scheduler.client import load_client_config
    from simcluster.proxy import FaultProxy

    async with FaultProxy(sim.host, sim.port) as proxy:
        kubeconfig = sim.write_kubeconfig(tmp_path / "via-proxy")
        kubeconfig.write_text(kubeconfig.read_text().replace(sim.url, proxy.url))
        async with KubeClient(await load_client_config(str(kubeconfig)), qps=0) as kube:
            client = CountingClient(kube)
            recorder = Recorder()
            # a backoff this long would show: the resume must not wait for it
            informer = Informer(client, PODS, decode=Pod.from_dict, handler=recorder, backoff=Backoff(30, 60))
            start(informer)
            await asyncio.wait_for(informer.synced.wait(), 5)
            await create(sim, pod, "before")
            await until(lambda: ("add", "before") in recorder.events)
            await asyncio.sleep(1.1)  # the watch has now run long enough to count as healthy
            assert proxy.cut() >= 1
            await create(sim, pod, "after")
            await until(lambda: ("add", "after") in recorder.events, timeout=3)
            assert len(client.lists) == 1  # resumed from its resourceVersion, no relist


async def test_after_an_api_server_restart_the_informer_relists_and_misses_nothing(
    sim: Any, client: CountingClient, pod: Any, start: Any
) -> None:
    recorder = Recorder()
    informer = pod_informer(client, recorder)
    start(informer)
    await asyncio.wait_for(informer.synced.wait(), 5)
    await create(sim, pod, "a")
    await until(lambda: ("add", "a") in recorder.events)
    await sim.restart(down_for=0.2)
    await create(sim, pod, "b")
    await until(lambda: ("add", "b") in recorder.events)
    assert len(client.lists) == 2  # the history was gone: one relist
    assert recorder.events.count(("add", "a")) == 1
