"""The REST protocol through kubernetes_asyncio over real HTTP, as the scheduler will use it."""

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


def status_of(err: ApiException) -> dict:
    return json.loads(err.body)


async def collect(stream: watch.Watch, func, count: int, **kwargs) -> list[tuple[str, dict]]:
    events = []
    async for event in stream.stream(func, _request_timeout=5, **kwargs):
        events.append((event["type"], event["raw_object"]))
        if len(events) == count:
            stream.stop()
    return events


async def test_nodes_are_listed_with_their_default_labels_and_capacity(core: client.CoreV1Api) -> None:
    nodes = (await core.list_node()).items
    assert [n.metadata.name for n in nodes] == ["node-0000", "node-0001", "node-0002"]
    first = nodes[0]
    assert first.metadata.labels["topology.kubernetes.io/zone"] == "zone-a"
    assert nodes[2].metadata.labels["topology.kubernetes.io/zone"] == "zone-c"
    assert first.metadata.labels["kubernetes.io/hostname"] == "node-0000"
    assert first.status.allocatable == {
        "cpu": "4",
        "memory": "16Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    assert [(c.type, c.status) for c in first.status.conditions][-1] == ("Ready", "True")


async def test_created_pods_get_server_fields_and_a_growing_resource_version(
    pod: PodFactory, core: client.CoreV1Api
) -> None:
    a = await core.create_namespaced_pod("default", pod("a"))
    b = await core.create_namespaced_pod("default", pod("b"))
    assert a.metadata.uid and a.metadata.creation_timestamp
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert a.status.phase == "Pending"
    assert a.spec.priority == 0


async def test_creating_an_existing_pod_answers_409_already_exists(
    pod: PodFactory, core: client.CoreV1Api
) -> None:
    await core.create_namespaced_pod("default", pod("dup"))
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("default", pod("dup"))
    assert err.value.status == 409
    body = status_of(err.value)
    assert (body["kind"], body["reason"], body["message"]) == (
        "Status",
        "AlreadyExists",
        'pods "dup" already exists',
    )


async def test_reading_a_missing_pod_answers_404_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod("ghost", "default")
    body = status_of(err.value)
    assert (err.value.status, body["reason"], body["message"]) == (404, "NotFound", 'pods "ghost" not found')


async def test_a_stale_update_answers_409_conflict(pod: PodFactory, core: client.CoreV1Api) -> None:
    created = await core.create_namespaced_pod("default", pod("p"))
    created.metadata.labels = {"v": "1"}
    await core.replace_namespaced_pod("p", "default", created)
    created.metadata.labels = {"v": "2"}
    with pytest.raises(ApiException) as err:
        await core.replace_namespaced_pod("p", "default", created)
    body = status_of(err.value)
    assert (err.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "p": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_binding_sets_the_node_and_a_second_binding_conflicts(
    pod: PodFactory, core: client.CoreV1Api
) -> None:
    await core.create_namespaced_pod("default", pod("web-1"))
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="web-1"),
        target=client.V1ObjectReference(kind="Node", name="node-0001"),
    )
    resp = await core.create_namespaced_pod_binding("web-1", "default", body, _preload_content=False)
    assert resp.status == 201
    assert json.loads(await resp.read()) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    bound = await core.read_namespaced_pod("web-1", "default")
    assert bound.spec.node_name == "node-0001"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in bound.status.conditions)
    again = await core.create_namespaced_pod_binding("web-1", "default", body, _preload_content=False)
    status = json.loads(await again.read())
    assert (again.status, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on pods/binding "web-1": '
        'pod web-1 is already assigned to node "node-0001"'
    )


async def test_binding_a_missing_pod_answers_404(core: client.CoreV1Api) -> None:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="x"), target=client.V1ObjectReference(name="node-0000")
    )
    resp = await core.create_namespaced_pod_binding("x", "default", body, _preload_content=False)
    assert resp.status == 404
    assert json.loads(await resp.read())["message"] == 'pods "x" not found'


async def test_the_simulated_kubelet_runs_bound_pods(
    pod: PodFactory, sim: SimCluster, core: client.CoreV1Api
) -> None:
    await core.create_namespaced_pod("default", pod("run", nodeName="node-0002"))
    for _ in range(100):
        current = sim.store.get("pods", "default", "run")
        if current and current["status"]["phase"] == "Running":
            break
        await asyncio.sleep(0.01)
    assert current is not None
    assert current["status"]["phase"] == "Running"
    assert {c["type"]: c["status"] for c in current["status"]["conditions"]}["Ready"] == "True"
    assert current["status"]["hostIP"] == "10.0.0.3"


@pytest.mark.parametrize(
    ("label_selector", "field_selector", "expected"),
    [
        ("app=web", "", ["w1", "w2"]),
        ("app in (web,db)", "", ["d1", "w1", "w2"]),
        ("app notin (web)", "", ["d1", "x"]),
        ("!app", "", ["x"]),
        ("", "spec.nodeName=", ["d1", "w1", "x"]),
        ("", "spec.nodeName=node-0000", ["w2"]),
        ("app=web", "spec.schedulerName=pyscheduler,spec.nodeName=", ["w1"]),
        ("", "metadata.name=d1", ["d1"]),
    ],
)
async def test_list_filters_by_label_and_field_selectors(
    pod: PodFactory,
    sim: SimCluster,
    core: client.CoreV1Api,
    label_selector: str,
    field_selector: str,
    expected: list[str],
) -> None:
    await sim.create("pods", pod("w1", labels={"app": "web"}), "default")
    await sim.create("pods", pod("w2", labels={"app": "web"}, nodeName="node-0000"), "default")
    await sim.create("pods", pod("d1", labels={"app": "db"}), "default")
    await sim.create("pods", pod("x"), "default")
    found = await core.list_namespaced_pod(
        "default", label_selector=label_selector, field_selector=field_selector
    )
    assert sorted(p.metadata.name for p in found.items) == expected


async def test_list_pages_with_limit_and_continue(
    pod: PodFactory, sim: SimCluster, core: client.CoreV1Api
) -> None:
    for i in range(7):
        await sim.create("pods", pod(f"p{i}"), "default")
    names, token, pages = [], None, 0
    while True:
        page = await core.list_namespaced_pod("default", limit=3, _continue=token)
        names += [p.metadata.name for p in page.items]
        pages += 1
        token = page.metadata._continue
        if pages == 1:
            assert page.metadata.remaining_item_count == 4
        if not token:
            break
    assert pages == 3
    assert names == [f"p{i}" for i in range(7)]


async def test_watch_resumes_from_a_resource_version(pod: PodFactory, core: client.CoreV1Api) -> None:
    await core.create_namespaced_pod("default", pod("before"))
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    await core.create_namespaced_pod("default", pod("after"))
    await core.delete_namespaced_pod("before", "default")
    events = await collect(
        watch.Watch(), core.list_namespaced_pod, 2, namespace="default", resource_version=rv
    )
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "after"), ("DELETED", "before")]
    assert int(events[1][1]["metadata"]["resourceVersion"]) > int(events[0][1]["metadata"]["resourceVersion"])


async def test_watch_without_a_version_starts_with_the_current_objects(core: client.CoreV1Api) -> None:
    events = await collect(watch.Watch(), core.list_node, 3)
    assert [t for t, _ in events] == ["ADDED"] * 3


async def test_watch_sees_a_pod_leave_a_field_selector_when_it_is_bound(
    pod: PodFactory, core: client.CoreV1Api
) -> None:
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    await core.create_namespaced_pod("default", pod("sel"))
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="sel"), target=client.V1ObjectReference(name="node-0000")
    )
    await core.create_namespaced_pod_binding("sel", "default", body, _preload_content=False)
    events = await collect(
        watch.Watch(),
        core.list_namespaced_pod,
        2,
        namespace="default",
        resource_version=rv,
        field_selector="spec.nodeName=",
    )
    assert [t for t, _ in events] == ["ADDED", "DELETED"]


async def test_watch_from_a_compacted_version_fails_with_410_expired(
    pod: PodFactory, sim: SimCluster, core: client.CoreV1Api
) -> None:
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    await core.create_namespaced_pod("default", pod("c1"))
    sim.faults.compact()
    with pytest.raises(ApiException) as err:
        await collect(watch.Watch(), core.list_namespaced_pod, 1, namespace="default", resource_version=rv)
    assert err.value.status == 410


async def test_a_version_older_than_the_history_window_is_expired(
    pod: PodFactory, core: client.CoreV1Api
) -> None:
    async with SimCluster(nodes=0, kubelet=False, history_size=2) as small:
        for i in range(4):
            await small.create("pods", pod(f"h{i}"), "default")
        first = int(small.store.get("pods", "default", "h0")["metadata"]["resourceVersion"])
        async with aiohttp.ClientSession() as http:
            url = f"{small.url}/api/v1/namespaces/default/pods?watch=1&resourceVersion={first}"
            async with http.get(url) as resp:
                event = json.loads(await resp.content.readline())
        assert event["type"] == "ERROR"
        assert event["object"]["code"] == 410
        assert event["object"]["reason"] == "Expired"
        assert event["object"]["message"].startswith(f"too old resource version: {first} (")


async def test_watch_sends_bookmarks_when_asked(core: client.CoreV1Api) -> None:
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    events = await collect(
        watch.Watch(),
        core.list_namespaced_pod,
        1,
        namespace="default",
        resource_version=rv,
        allow_watch_bookmarks=True,
    )
    kind, obj = events[0]
    assert kind == "BOOKMARK"
    assert int(obj["metadata"]["resourceVersion"]) >= int(rv)


async def test_watch_ends_after_timeout_seconds(core: client.CoreV1Api) -> None:
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    events = [
        e
        async for e in watch.Watch().stream(
            core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
        )
    ]
    assert events == []


async def test_status_patch_merges_conditions_by_type(pod: PodFactory, core: client.CoreV1Api) -> None:
    await core.create_namespaced_pod("default", pod("st"))
    patch = {
        "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    }
    await core.patch_namespaced_pod_status("st", "default", patch)
    patch = {"status": {"conditions": [{"type": "Other", "status": "True"}]}}
    out = await core.patch_namespaced_pod_status("st", "default", patch)
    assert [(c.type, c.status) for c in out.status.conditions] == [
        ("PodScheduled", "False"),
        ("Other", "True"),
    ]


async def test_a_status_update_leaves_the_spec_alone(pod: PodFactory, core: client.CoreV1Api) -> None:
    created = await core.create_namespaced_pod("default", pod("s2"))
    created.spec.node_name = "node-0000"
    created.status.phase = "Failed"
    out = await core.replace_namespaced_pod_status("s2", "default", created)
    assert (out.spec.node_name, out.status.phase) == (None, "Failed")


async def test_lease_updates_use_optimistic_concurrency(api_client: client.ApiClient) -> None:
    leases = client.CoordinationV1Api(api_client)
    body = {"metadata": {"name": "pyscheduler"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = await leases.create_namespaced_lease("kube-system", body)
    created.spec.holder_identity = "b"
    await leases.replace_namespaced_lease("pyscheduler", "kube-system", created)
    created.spec.holder_identity = "c"
    with pytest.raises(ApiException) as err:
        await leases.replace_namespaced_lease("pyscheduler", "kube-system", created)
    assert err.value.status == 409
    assert (await leases.read_namespaced_lease("pyscheduler", "kube-system")).spec.holder_identity == "b"


async def test_events_of_both_api_groups_are_one_resource(
    sim: SimCluster, api_client: client.ApiClient
) -> None:
    ev = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "FailedScheduling",
        "message": "0/3 nodes are available",
        "source": {"component": "kubelet", "host": "node-0000"},
        "count": 3,
    }
    await client.CoreV1Api(api_client).create_namespaced_event("default", ev)
    new = {
        "metadata": {"name": "e2"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reason": "Scheduled",
        "action": "Binding",
        "regarding": {"kind": "Pod", "name": "q"},
        "note": "Successfully assigned default/q to node-0001",
        "reportingController": "pyscheduler",
        "reportingInstance": "x",
        "type": "Normal",
    }
    await client.EventsV1Api(api_client).create_namespaced_event("default", new)
    core = {
        e.metadata.name: e
        for e in (await client.CoreV1Api(api_client).list_namespaced_event("default")).items
    }
    # read as JSON: a core event has `eventTime: null`, which kubernetes_asyncio's EventsV1Event refuses
    url = f"{sim.url}/apis/events.k8s.io/v1/namespaces/default/events"
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        v1 = {e["metadata"]["name"]: e for e in (await resp.json())["items"]}
    assert sorted(core) == sorted(v1) == ["e1", "e2"]
    assert core["e1"].metadata.resource_version == v1["e1"]["metadata"]["resourceVersion"]
    assert v1["e1"]["eventTime"] is None
    assert (v1["e1"]["note"], v1["e1"]["regarding"]["name"], v1["e1"]["deprecatedCount"]) == (
        ev["message"],
        "p",
        3,
    )
    assert v1["e1"]["deprecatedSource"] == {"component": "kubelet", "host": "node-0000"}
    assert (core["e2"].message, core["e2"].involved_object.name) == (new["note"], "q")
    assert (core["e2"].reporting_component, core["e2"].reporting_instance, core["e2"].action) == (
        "pyscheduler",
        "x",
        "Binding",
    )


async def test_creating_in_a_missing_namespace_is_not_found(pod: PodFactory, core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("nowhere", pod("p"))
    assert status_of(err.value)["message"] == 'namespaces "nowhere" not found'


@pytest.mark.parametrize(("value", "code"), [("True", 200), ("1", 200), ("false", 200), ("yes", 400)])
async def test_boolean_query_parameters_parse_like_go(sim: SimCluster, value: str, code: int) -> None:
    url = f"{sim.url}/api/v1/nodes?watch={value}&timeoutSeconds=0"
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        assert resp.status == code


async def test_unknown_paths_answer_a_404_status(sim: SimCluster) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{sim.url}/apis/nope.example.com/v1/things") as resp,
    ):
        assert resp.status == 404
        assert (await resp.json())["kind"] == "Status"
