"""DynamicResources and extended resources backed by DRA: the special claim is built per node,
allocated with the real allocator, assumed at Reserve, created and recorded at PreBind, deleted
when the pod does not get the node; upstream's messages."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from scheduler.api import Pod
from scheduler.framework import ActionType, ApiResponse, Code, CycleState, Diagnosis, QueueingHint, Status
from scheduler.framework.interface import RESOURCE_CLAIM
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.testing import make_node, make_pod, run_profile
from scheduler.testing.builders import FakeClient, FakeHandle, table_of
from scheduler.testing.dra import DRIVER, device, resource_slice
from tests.support.cluster import eventually

GPU = "example.com/gpu"
GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        "extendedResourceName": GPU,
    },
}
# node-a has two devices, node-b none, node-c a device plugin's gpu in allocatable
NODES = [make_node("node-a"), make_node("node-b"), make_node("node-c", extra={GPU: 1})]
SLICE_A = resource_slice("a", [device("gpu-0"), device("gpu-1")], node="node-a")
FINALIZER = "resource.kubernetes.io/delete-protection"


def gpu_pod(name: str, count: str = "1", **requests: str) -> Pod:
    return make_pod(name, uid=f"uid-{name}", requests={GPU: count, **requests})


def plugin_with(claims: list[dict] = (), client: FakeClient | None = None):  # type: ignore[assignment]
    listers = {"resourceclaims": list(claims), "resourceslices": [SLICE_A], "deviceclasses": [GPU_CLASS]}
    handle = FakeHandle(table_of(NODES), client=client, listers=listers)
    return DynamicResources(None, handle), handle


def filter_all(plugin: DynamicResources, pod: Pod) -> tuple[CycleState, dict[str, Status | None]]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    assert status is None
    return state, {info.node.name: plugin.filter(state, pod, info) for info in table_of(NODES).infos}


def node_claim(state: CycleState, node: str) -> dict[str, Any]:
    return state.read("DynamicResources").extended_by_node[node].claim


def devices(state: CycleState, node: str) -> list[str]:
    [allocation] = state.read("DynamicResources").by_node[node].results()
    return [r["device"] for r in allocation["devices"]["results"]]


def test_filter_asks_devices_only_of_nodes_without_the_resource() -> None:
    plugin, _ = plugin_with()
    state, verdicts = filter_all(plugin, gpu_pod("p"))
    assert verdicts["node-a"] is None
    assert verdicts["node-b"].message() == "cannot allocate all claims"
    assert verdicts["node-c"] is None  # the device plugin's: NodeResourcesFit counts it
    assert set(state.read("DynamicResources").extended_by_node) == {"node-a"}
    assert node_claim(state, "node-a")["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "container-0-request-0",
                    "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
                }
            ]
        }
    }
    assert devices(state, "node-a") == ["gpu-0"]


def test_a_pod_without_served_resources_is_skipped() -> None:
    plugin, _ = plugin_with()
    state = CycleState()
    _, status = plugin.pre_filter(state, make_pod("p", requests={"example.com/other": "1"}), None)  # type: ignore[arg-type]
    assert status is not None and status.code == Code.SKIP


def test_a_resource_neither_served_nor_advertised_cannot_fit() -> None:
    plugin, _ = plugin_with()
    _, verdicts = filter_all(plugin, gpu_pod("p", **{"example.com/tpu": "1"}))
    assert {name: v.message() for name, v in verdicts.items() if v is not None} == {
        "node-a": "cannot fit resource",
        "node-b": "cannot fit resource",
        "node-c": "cannot fit resource",
    }
    assert verdicts["node-a"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_more_than_the_node_has_cannot_be_allocated() -> None:
    plugin, _ = plugin_with()
    _, verdicts = filter_all(plugin, gpu_pod("p", count="3"))
    assert verdicts["node-a"].message() == "cannot allocate all claims"


def test_reserve_assumes_each_pods_devices_apart() -> None:
    # two pods of one namespace: their in-memory claims share a name, never their devices
    plugin, _ = plugin_with()
    p1, p2, p3 = gpu_pod("p1"), gpu_pod("p2"), gpu_pod("p3")
    s1, _ = filter_all(plugin, p1)
    assert plugin.reserve(s1, p1, "node-a") is None
    s2, _ = filter_all(plugin, p2)
    assert devices(s2, "node-a") == ["gpu-1"]
    assert plugin.reserve(s2, p2, "node-a") is None
    _, verdicts = filter_all(plugin, p3)
    assert verdicts["node-a"].message() == "cannot allocate all claims"
    plugin.unreserve(s1, p1, "node-a")
    s3, verdicts = filter_all(plugin, p3)
    assert verdicts["node-a"] is None and devices(s3, "node-a") == ["gpu-0"]


def test_reserve_on_a_device_plugin_node_assumes_nothing() -> None:
    plugin, _ = plugin_with()
    pod = gpu_pod("p")
    state, _ = filter_all(plugin, pod)
    assert plugin.reserve(state, pod, "node-c") is None
    _, verdicts = filter_all(plugin, gpu_pod("other", count="2"))
    assert verdicts["node-a"] is None  # both devices still free


def created_claim(state: CycleState, name: str = "p-extended-resources-x7k2q") -> dict[str, Any]:
    claim = copy.deepcopy(node_claim(state, "node-a"))
    claim["metadata"].update(name=name, uid="uid-claim", resourceVersion="1")
    return claim


def reserved_on_node_a(pod: Pod) -> tuple[DynamicResources, FakeHandle, FakeClient, CycleState, dict]:
    """Filter and Reserve done; the client answers PreBind's create, finalizer and status
    writes; returns the claim as the last write left it."""
    client = FakeClient()
    plugin, handle = plugin_with(client=client)
    state, _ = filter_all(plugin, pod)
    assert plugin.reserve(state, pod, "node-a") is None
    created = created_claim(state)
    with_finalizer = copy.deepcopy(created)
    with_finalizer["metadata"].update(finalizers=[FINALIZER], resourceVersion="2")
    written = copy.deepcopy(with_finalizer)
    written["metadata"]["resourceVersion"] = "3"
    reservation = [{"resource": "pods", "name": pod.name, "uid": pod.uid}]
    written["status"] = {
        "allocation": state.read("DynamicResources").allocations[0],
        "reservedFor": reservation,
    }
    client.responses = [
        ApiResponse(201, created),
        ApiResponse(200, with_finalizer),
        ApiResponse(200, written),
    ]
    return plugin, handle, client, state, written


async def test_pre_bind_creates_the_claim_records_allocation_and_names_it_in_the_pod() -> None:
    pod = gpu_pod("p")
    plugin, handle, client, state, written = reserved_on_node_a(pod)
    handle.lister("resourceclaims").put(written)  # what the informer shows: PreBind waits for it
    assert await plugin.pre_bind(state, pod, "node-a") is None

    create, finalizer, status, patch = client.requests
    assert handle.recorded_metrics.claim_creates == ["success"]
    assert (create.method, create.path) == (
        "POST",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
    )
    meta = create.body["metadata"]
    assert "name" not in meta and "uid" not in meta and "status" not in create.body
    assert meta["generateName"] == "p-extended-resources-"
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": pod.uid, "controller": True}
    ]
    assert create.body["spec"]["devices"]["requests"][0]["name"] == "container-0-request-0"
    assert finalizer.method == "PUT" and finalizer.body["metadata"]["finalizers"] == [FINALIZER]
    assert status.path.endswith("/resourceclaims/p-extended-resources-x7k2q/status")
    assert status.body["status"]["allocation"]["devices"]["results"] == [
        {"request": "container-0-request-0", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}
    ]
    assert status.body["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": pod.uid}]
    assert (patch.method, patch.path, patch.content_type) == (
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        "application/merge-patch+json",
    )
    assert patch.body == {
        "status": {
            "extendedResourceClaimStatus": {
                "resourceClaimName": "p-extended-resources-x7k2q",
                "requestMappings": [
                    {"containerName": "c0", "resourceName": GPU, "requestName": "container-0-request-0"}
                ],
            }
        }
    }
    # the written claim holds gpu-0 for the next pod
    _, verdicts = filter_all(plugin, gpu_pod("next", count="2"))
    assert verdicts["node-a"].message() == "cannot allocate all claims"


async def test_until_the_informer_shows_the_created_claim_its_devices_stay_taken() -> None:
    pod = gpu_pod("p")
    plugin, handle, client, state, written = reserved_on_node_a(pod)
    binding = asyncio.create_task(plugin.pre_bind(state, pod, "node-a"))
    await eventually(lambda: len(client.requests) == 3)  # created, finalizer added, status written
    _, verdicts = filter_all(plugin, gpu_pod("next", count="2"))
    assert verdicts["node-a"].message() == "cannot allocate all claims"
    assert not binding.done()
    handle.lister("resourceclaims").put(written)
    assert await asyncio.wait_for(binding, 5) is None
    _, verdicts = filter_all(plugin, gpu_pod("next", count="2"))
    assert verdicts["node-a"].message() == "cannot allocate all claims"  # now the informer's claim


async def test_pre_bind_on_a_device_plugin_node_writes_nothing() -> None:
    client = FakeClient()
    plugin, _ = plugin_with(client=client)
    pod = gpu_pod("p")
    state, _ = filter_all(plugin, pod)
    plugin.reserve(state, pod, "node-c")
    assert await plugin.pre_bind(state, pod, "node-c") is None
    assert client.requests == []


async def test_a_failed_pre_bind_deletes_the_created_claim_at_unreserve() -> None:
    pod = gpu_pod("p")
    client = FakeClient()
    plugin, _ = plugin_with(client=client)
    state, _ = filter_all(plugin, pod)
    plugin.reserve(state, pod, "node-a")
    created = created_claim(state)
    refused = ApiResponse(422, {"kind": "Status", "message": "nope"})
    client.responses = [ApiResponse(201, created), refused]
    status = await plugin.pre_bind(state, pod, "node-a")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "add finalizer to claim default/p-extended-resources-x7k2q: nope"

    protected = copy.deepcopy(created)
    protected["metadata"]["finalizers"] = [FINALIZER]
    client.requests.clear()
    client.responses = [ApiResponse(200, protected), ApiResponse(200, created), ApiResponse(200, {})]
    plugin.unreserve(state, pod, "node-a")
    await eventually(lambda: len(client.requests) == 3)  # the deletion runs in the background, as upstream's
    get, update, delete = client.requests
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/p-extended-resources-x7k2q"
    assert [(r.method, r.path) for r in (get, update, delete)] == [
        ("GET", path),
        ("PUT", path),
        ("DELETE", path),
    ]
    assert update.body["metadata"]["finalizers"] == []
    # and its devices are free again
    _, verdicts = filter_all(plugin, gpu_pod("next", count="2"))
    assert verdicts["node-a"] is None


async def test_a_special_claim_from_an_earlier_cycle_is_deleted_and_the_pod_tried_anew() -> None:
    pod = gpu_pod("p")
    first, _ = filter_all(plugin_with()[0], pod)
    stale = created_claim(first)
    client = FakeClient(responses=[ApiResponse(200, stale), ApiResponse(200, {})])
    plugin, _ = plugin_with([stale], client=client)
    state, verdicts = filter_all(plugin, pod)
    assert {v.message() for v in verdicts.values()} == {"cannot schedule extended resource claim"}
    _, status = await plugin.post_filter(state, pod, Diagnosis())
    assert status.message() == "deletion of ResourceClaim completed"
    assert [r.method for r in client.requests] == ["GET", "DELETE"]  # no finalizer to drop


def test_the_whole_profile_places_the_pod_on_a_node_with_a_device_or_the_resource() -> None:
    listers = {"resourceclaims": [], "resourceslices": [SLICE_A], "deviceclasses": [GPU_CLASS]}
    outcome = run_profile(nodes=NODES[:2], pod=gpu_pod("p"), listers=listers)
    assert outcome.node == "node-a"
    outcome = run_profile(nodes=NODES, pod=gpu_pod("p", count="3"), listers=listers)
    assert outcome.message == (
        "0/3 nodes are available: 1 Insufficient example.com/gpu, 2 cannot allocate all claims."
    )


def test_deleting_the_pods_stale_special_claim_requeues_it() -> None:
    plugin, _ = plugin_with()
    pod = gpu_pod("p")
    first, _ = filter_all(plugin, pod)
    stale = created_claim(first)  # not allocated: only its owner cares that it is gone
    delete = next(
        e
        for e in plugin.events_to_register()
        if e.event.resource == RESOURCE_CLAIM and e.event.action == ActionType.DELETE
    )
    assert delete.hint(pod, stale, None) == QueueingHint.QUEUE
    assert delete.hint(gpu_pod("other"), stale, None) == QueueingHint.SKIP
