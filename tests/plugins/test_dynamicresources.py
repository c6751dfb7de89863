"""DynamicResources: claims checked, allocated per node, assumed, written; upstream's messages."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api import Pod
from scheduler.config import DynamicResourcesArgs
from scheduler.framework import ActionType, ApiResponse, Code, CycleState, Diagnosis, QueueingHint, Status
from scheduler.framework.interface import POD, RESOURCE_CLAIM
from scheduler.plugins.dynamicresources import NO_CLAIMS_TO_DEALLOCATE, DynamicResources
from scheduler.testing import make_node, make_pod, run_profile
from scheduler.testing.builders import FakeClient, FakeHandle, pod_dict, table_of
from scheduler.testing.dra import (
    DRIVER,
    allocated,
    claim,
    device,
    device_class,
    first_available,
    request,
    resource_slice,
)

GPU_CLASS = device_class("gpu", f'device.driver == "{DRIVER}"')
BIG = 'device.attributes["gpu.example.com"].memory >= 32'
NODES = [make_node("node-a"), make_node("node-b"), make_node("node-c")]
SLICE_A = resource_slice("a", [device("gpu-0", memory=40), device("gpu-1", memory=16)], node="node-a")


def claim_pod(name: str, claim_name: str, uid: str | None = None, template: bool = True) -> Pod:
    """A pod whose claim "gpu" was generated from a template as ``claim_name`` (or names it)."""
    raw = pod_dict(name)
    raw["metadata"]["uid"] = uid or f"uid-{name}"
    if template:
        raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
        raw["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim_name}]}
    else:
        raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return Pod.from_dict(raw)


def owned(obj: dict, pod: Pod) -> dict:
    obj["metadata"]["ownerReferences"] = [
        {"kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
    ]
    return obj


def listers(
    claims: list[dict], slices: list[dict] = (SLICE_A,), classes: list[dict] = (GPU_CLASS,)
) -> dict[str, Any]:  # type: ignore[assignment]
    return {"resourceclaims": claims, "resourceslices": list(slices), "deviceclasses": list(classes)}


# ---------------------------------------------------------------------------- the recorded cases


def test_first_pod_gets_the_big_device_the_second_gets_upstreams_message() -> None:
    first = claim_pod("first", "first-gpu")
    c1 = owned(claim("first-gpu", request("gpu", "gpu", BIG)), first)
    outcome = run_profile(nodes=NODES, pod=first, listers=listers([c1]))
    assert outcome.node == "node-a"

    second = claim_pod("second", "second-gpu")
    c2 = owned(claim("second-gpu", request("gpu", "gpu", BIG)), second)
    taken = allocated(c1, "node-a", "gpu-0", reserved=(first.uid,))
    outcome = run_profile(nodes=NODES, pod=second, listers=listers([taken, c2]))
    assert outcome.node == ""
    # the PostFilter half ("still not schedulable, preemption: ...") is in tests/dra/test_integration.py
    assert outcome.message == "0/3 nodes are available: 3 cannot allocate all claims."


def test_a_missing_device_class_gives_upstreams_message() -> None:
    pod = claim_pod("p", "p-gpu")
    c = owned(claim("p-gpu", request("g", "no-such-class")), pod)
    outcome = run_profile(nodes=NODES, pod=pod, listers=listers([c]))
    assert outcome.message == "0/3 nodes are available: request g: device class no-such-class does not exist."


def test_a_pod_without_claims_is_untouched_by_the_plugin() -> None:
    outcome = run_profile(nodes=NODES, pod=make_pod("plain"), listers=listers([]))
    assert outcome.node in {"node-a", "node-b", "node-c"}


# ---------------------------------------------------------------------------- the plugin's points


def plugin_with(claims: list[dict], slices: list[dict] = (SLICE_A,), client: FakeClient | None = None):  # type: ignore[assignment]
    handle = FakeHandle(table_of(NODES), client=client, listers=listers(claims, slices))
    return DynamicResources(None, handle), handle


def filter_all(plugin: DynamicResources, pod: Pod) -> tuple[CycleState, dict[str, Status | None]]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    assert status is None
    infos = table_of(NODES).infos
    return state, {info.node.name: plugin.filter(state, pod, info) for info in infos}


def test_reserve_assumes_the_allocation_so_the_next_pod_gets_another_device() -> None:
    p1, p2 = claim_pod("p1", "c1"), claim_pod("p2", "c2")
    plugin, _ = plugin_with([owned(claim("c1"), p1), owned(claim("c2"), p2)])
    state1, verdicts = filter_all(plugin, p1)
    assert verdicts["node-a"] is None and verdicts["node-b"].message() == "cannot allocate all claims"
    assert plugin.reserve(state1, p1, "node-a") is None
    state2, _ = filter_all(plugin, p2)
    [allocation] = state2.read("DynamicResources").by_node["node-a"].results()
    assert allocation["devices"]["results"][0]["device"] == "gpu-1"
    # a third pod finds the node full; once p1 is unreserved, gpu-0 is free again
    plugin.reserve(state2, p2, "node-a")
    p3 = claim_pod("p3", "c3")
    plugin._handle.lister("resourceclaims").put(owned(claim("c3"), p3))
    _, verdicts = filter_all(plugin, p3)
    assert verdicts["node-a"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    plugin.unreserve(state1, p1, "node-a")
    state3, verdicts = filter_all(plugin, p3)
    assert verdicts["node-a"] is None
    assert (
        state3.read("DynamicResources").by_node["node-a"].results()[0]["devices"]["results"][0]["device"]
        == "gpu-0"
    )


async def test_pre_bind_writes_allocation_and_reservation() -> None:
    pod = claim_pod("p", "c")
    c = owned(claim("c"), pod)
    written = allocated(c, "node-a", "gpu-0", reserved=(pod.uid,))
    client = FakeClient(
        responses=[
            ApiResponse(
                200,
                {
                    **c,
                    "metadata": {**c["metadata"], "finalizers": ["resource.kubernetes.io/delete-protection"]},
                },
            ),
            ApiResponse(200, written),
        ]
    )
    plugin, _ = plugin_with([c], client=client)
    state, _ = filter_all(plugin, pod)
    plugin.reserve(state, pod, "node-a")
    assert await plugin.pre_bind(state, pod, "node-a") is None
    finalizer, status = client.requests
    assert (finalizer.method, finalizer.path) == (
        "PUT",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c",
    )
    assert finalizer.body["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert (status.method, status.path) == (
        "PUT",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c/status",
    )
    assert status.body["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}
    ]
    assert status.body["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": pod.uid}]


async def test_a_shared_claim_only_gains_a_reservation() -> None:
    first = claim_pod("first", "shared", template=False)
    second = claim_pod("second", "shared", template=False)
    shared = allocated(claim("shared"), "node-a", "gpu-0", reserved=(first.uid,))
    client = FakeClient(responses=[ApiResponse(200, shared)])
    plugin, _ = plugin_with([shared], client=client)
    state, verdicts = filter_all(plugin, second)
    assert verdicts == {"node-a": None, "node-b": verdicts["node-b"], "node-c": verdicts["node-c"]}
    assert verdicts["node-b"].message() == "resourceclaim not available on the node"
    assert plugin.reserve(state, second, "node-a") is None
    assert await plugin.pre_bind(state, second, "node-a") is None
    [update] = client.requests
    assert "allocation" in update.body["status"]
    assert [r["uid"] for r in update.body["status"]["reservedFor"]] == [first.uid, second.uid]


async def test_post_filter_deallocates_a_claim_only_this_pod_used() -> None:
    pod = claim_pod("p", "c", template=False)
    stale = allocated(claim("c"), "gone-node", "gpu-0")
    client = FakeClient(responses=[ApiResponse(200, claim("c"))])
    plugin, _ = plugin_with([stale], client=client)
    state, verdicts = filter_all(plugin, pod)
    assert all(v.message() == "resourceclaim not available on the node" for v in verdicts.values())
    _, status = await plugin.post_filter(state, pod, Diagnosis())
    assert status.message() == "deallocation of ResourceClaim completed"
    [update] = client.requests
    assert update.path.endswith("/resourceclaims/c/status") and "allocation" not in update.body["status"]


async def test_post_filter_without_claims_says_there_is_nothing_to_deallocate() -> None:
    plugin, _ = plugin_with([])
    state = CycleState()
    plugin.pre_filter(state, make_pod("p"), None)  # type: ignore[arg-type]
    result, status = await plugin.post_filter(state, make_pod("p"), Diagnosis())
    assert result is None and status.message() == NO_CLAIMS_TO_DEALLOCATE


@pytest.mark.parametrize(
    ("pod", "claims", "message"),
    [
        (
            Pod.from_dict(
                {
                    **pod_dict("p"),
                    "spec": {
                        **pod_dict("p")["spec"],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                    },
                }
            ),
            [],
            'pod "default/p": ResourceClaim not created yet',
        ),
        (claim_pod("p", "missing"), [], 'resourceclaim.resource.k8s.io "missing" not found'),
        (
            claim_pod("p", "c"),
            [claim("c")],
            "ResourceClaim default/c was not created for Pod default/p (Pod is not owner)",
        ),
    ],
)
def test_pre_enqueue_waits_for_the_claims(pod: Pod, claims: list[dict], message: str) -> None:
    plugin, _ = plugin_with(claims)
    status = plugin.pre_enqueue(pod)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == message


def test_a_bad_selector_is_an_error_of_the_pod_not_of_the_scheduler() -> None:
    pod = claim_pod("p", "c")
    plugin, _ = plugin_with([owned(claim("c", request("gpu", "gpu", "device.nope ==")), pod)])
    _, verdicts = filter_all(plugin, pod)
    assert verdicts["node-a"].code == Code.ERROR
    assert verdicts["node-a"].message().startswith("claim default/c: selector #0: CEL compile error: ")


def registered_hint(plugin: DynamicResources, resource: str, action: ActionType) -> Any:
    """The queueing hint the plugin registers for ``action`` on ``resource``."""
    [hint] = [
        h.hint
        for h in plugin.events_to_register()
        if h.event.resource == resource and h.event.action & action
    ]
    return hint


def test_queueing_hints() -> None:
    pod = claim_pod("p", "c")
    c = owned(claim("c"), pod)
    plugin, _ = plugin_with([c])
    after_claim_change = registered_hint(plugin, RESOURCE_CLAIM, ActionType.UPDATE)
    after_claim_delete = registered_hint(plugin, RESOURCE_CLAIM, ActionType.DELETE)
    after_pod_change = registered_hint(plugin, POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    other = claim("other")
    assert after_claim_change(pod, None, c) == QueueingHint.QUEUE
    assert after_claim_change(pod, None, other) == QueueingHint.SKIP
    assert after_claim_change(pod, c, {**c, "metadata": {**c["metadata"], "labels": {"x": "y"}}}) == (
        QueueingHint.SKIP
    )
    freed = allocated(other, "node-a", "gpu-0")
    assert after_claim_change(pod, freed, other) == QueueingHint.QUEUE
    assert after_claim_delete(pod, freed, None) == QueueingHint.QUEUE
    assert after_pod_change(pod, pod, pod) == QueueingHint.QUEUE
    waiting = Pod.from_dict(
        {
            **pod_dict("p"),
            "spec": {
                **pod_dict("p")["spec"],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            },
        }
    )
    assert after_pod_change(waiting, waiting, waiting) == QueueingHint.SKIP


def test_pods_with_claims_are_not_signed() -> None:
    plugin, _ = plugin_with([])
    assert (
        plugin.sign_pod(claim_pod("p", "c"))[1].message() == "pods with dra resource claims are not signable"
    )
    assert plugin.sign_pod(make_pod("plain")) == ((), None)


async def test_unreserve_takes_the_pod_out_of_reserved_for() -> None:
    first, pod = claim_pod("first", "shared", template=False), claim_pod("p", "shared", template=False)
    shared = allocated(claim("shared"), "node-a", "gpu-0", reserved=(first.uid,))
    client = FakeClient()
    plugin, handle = plugin_with([shared], client=client)
    state, _ = filter_all(plugin, pod)
    # PreBind reserved it for the pod, then a later step failed
    handle.lister("resourceclaims").put(
        allocated(claim("shared"), "node-a", "gpu-0", reserved=(first.uid, pod.uid))
    )
    plugin.unreserve(state, pod, "node-a")
    for _ in range(10):
        if client.requests:
            break
        await asyncio.sleep(0)
    [patch] = client.requests
    assert (patch.method, patch.content_type) == ("PATCH", "application/json-patch+json")
    assert patch.body == [
        {"op": "test", "path": "/metadata/uid", "value": "uid-shared"},
        {"op": "test", "path": "/status/reservedFor/1/uid", "value": pod.uid},
        {"op": "remove", "path": "/status/reservedFor/1"},
    ]


def test_first_available_scores_the_earlier_alternative_higher() -> None:
    pod = claim_pod("p", "c")
    prefers_big = first_available(
        "gpu", ("big", "gpu", 'device.attributes["gpu.example.com"].memory >= 64'), ("any", "gpu", "")
    )
    slices = [
        resource_slice("a", [device("gpu-0", memory=16)], node="node-a"),
        resource_slice("b", [device("gpu-0", memory=80)], node="node-b"),
    ]
    plugin, _ = plugin_with([owned(claim("c", prefers_big), pod)], slices)
    state, verdicts = filter_all(plugin, pod)
    assert verdicts["node-a"] is None and verdicts["node-b"] is None
    infos = {info.node.name: info for info in table_of(NODES).infos}
    assert plugin.pre_score(state, pod, list(infos.values())) is None
    assert plugin.score(state, pod, infos["node-a"]) == 7  # the second of at most 8 alternatives
    assert plugin.score(state, pod, infos["node-b"]) == 8


def test_a_pod_without_alternatives_skips_score() -> None:
    pod = claim_pod("p", "c")
    plugin, _ = plugin_with([owned(claim("c"), pod)])
    state, _ = filter_all(plugin, pod)
    assert plugin.pre_score(state, pod, []) == Status.skip()


def test_an_allocation_that_runs_past_the_filter_timeout_is_an_error_for_that_node() -> None:
    pod = claim_pod("p", "c")
    slices = [resource_slice("many", [device(f"d{i}", numa=i) for i in range(40)], node="node-a")]
    never = owned(claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}]), pod)
    handle = FakeHandle(table_of(NODES), listers=listers([never], slices))
    plugin = DynamicResources(DynamicResourcesArgs(filter_timeout=1e-9), handle)
    _, verdicts = filter_all(plugin, pod)
    assert verdicts["node-a"].code == Code.ERROR
    assert verdicts["node-a"].message() == "node node-a: timed out trying to allocate devices"


def test_a_pod_claim_naming_nothing_is_reported_by_pre_filter_not_held() -> None:
    raw = pod_dict("p")
    raw["spec"]["resourceClaims"] = [{"name": "gpu"}]
    pod = Pod.from_dict(raw)
    plugin, _ = plugin_with([])
    assert plugin.pre_enqueue(pod) is None
    _, status = plugin.pre_filter(CycleState(), pod, None)  # type: ignore[arg-type]
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert (
        status.message() == 'pod "default/p", spec.resourceClaim "gpu": none of the supported fields are set'
    )
