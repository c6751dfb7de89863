"""VolumeBinding: claim sorting in PreFilter, per-node volume choice in Filter, and the
Reserve → PreBind → Unreserve life of the chosen bindings (upstream volume_binding_test.go)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from scheduler.framework import ActionType, ApiResponse, Code, CycleState, QueueingHint, Status
from scheduler.framework.interface import CSI_STORAGE_CAPACITY, STORAGE_CLASS
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
)
from scheduler.plugins.volumebinding.storage import ANN_SELECTED_NODE
from scheduler.testing.builders import FakeClient, FakeHandle, make_node, make_pod, table_of
from scheduler.testing.storage import (
    HOSTNAME,
    ZONE,
    affinity,
    capacity,
    csi_driver,
    pv,
    pvc,
    storage_class,
    volume_pod,
)

NODES = [
    make_node("node-a", labels={ZONE: "a"}),
    make_node("node-b", labels={ZONE: "b"}),
    make_node("node-c", labels={ZONE: "b"}),
]
CLASSES = [
    storage_class("local"),
    storage_class("fast", mode="Immediate", provisioner="csi.example.com"),
    storage_class("dynamic", provisioner="csi.example.com"),
    storage_class(
        "zonal",
        provisioner="csi.example.com",
        allowed_topologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}],
    ),
    storage_class("tracked", provisioner="tracked.csi.example.com"),
]


def make_plugin(
    objects: dict[str, list[dict[str, Any]]], client: FakeClient | None = None, timeout: int = 600
):
    listers = {"storageclasses": CLASSES, **objects}
    handle = FakeHandle(table_of(NODES), client=client, listers=listers)
    plugin = VolumeBinding(SimpleNamespace(bind_timeout_seconds=timeout), handle)
    plugin.binder.poll_interval = 0.005
    return plugin, handle


def run_filters(
    plugin: VolumeBinding, handle: FakeHandle, pod
) -> tuple[Status | None, dict[str, Status | None]]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot)
    if status is not None:
        return status, {}
    return None, {info.name: plugin.filter(state, pod, info) for info in handle.snapshot.node_infos()}


def reasons(by_node: dict[str, Status | None]) -> dict[str, tuple[str, ...]]:
    return {name: status.reasons if status else () for name, status in by_node.items()}


def test_a_pod_without_claims_is_skipped_cheaply():
    plugin, handle = make_plugin({})
    _, status = plugin.pre_filter(CycleState(), make_pod("plain"), handle.snapshot)
    assert status is not None and status.is_skip


@pytest.mark.parametrize(
    ("objects", "claim", "message"),
    [
        ({}, "data", 'persistentvolumeclaim "data" not found'),
        (
            {"persistentvolumeclaims": [pvc("data", storage_class="fast")]},
            "data",
            ERR_UNBOUND_IMMEDIATE,
        ),
        (
            {"persistentvolumeclaims": [pvc("data", storage_class=None)]},
            "data",
            ERR_UNBOUND_IMMEDIATE,
        ),
        (
            {"persistentvolumeclaims": [pvc("data", storage_class="local", volume_name="pv-1")]},
            "data",
            ERR_UNBOUND_IMMEDIATE,
        ),
    ],
    ids=[
        "a missing claim is unresolvable with upstream's not-found message",
        "an unbound claim of an Immediate class waits for the PV controller",
        "an unbound claim without a class is immediate too",
        "a claim pre-bound to a volume but not bound yet is treated as immediate",
    ],
)
def test_pre_filter_rejects_claims_the_scheduler_cannot_help(objects, claim, message):
    plugin, handle = make_plugin(objects)
    status, _ = run_filters(plugin, handle, volume_pod("p", claim))
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


NO_PV = (ERR_REASON_BIND_CONFLICT,)


@pytest.mark.parametrize(
    ("objects", "claims", "expected"),
    [
        (
            {
                "persistentvolumeclaims": [pvc("data", volume_name="pv-a", bound=True)],
                "persistentvolumes": [
                    pv("pv-a", node_affinity=affinity(HOSTNAME, "node-a"), claim=("default", "data"))
                ],
            },
            ("data",),
            {"node-a": (), "node-b": (ERR_REASON_NODE_CONFLICT,), "node-c": (ERR_REASON_NODE_CONFLICT,)},
        ),
        (
            {"persistentvolumeclaims": [pvc("data", volume_name="gone", bound=True)]},
            ("data",),
            {n: (ERR_REASON_PV_NOT_EXIST,) for n in ("node-a", "node-b", "node-c")},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data")],
                "persistentvolumes": [pv("pv-b", node_affinity=affinity(HOSTNAME, "node-b"))],
            },
            ("data",),
            {"node-a": NO_PV, "node-b": (), "node-c": NO_PV},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data", size="20Gi")],
                "persistentvolumes": [pv("pv-b", size="10Gi", node_affinity=affinity(HOSTNAME, "node-b"))],
            },
            ("data",),
            {n: NO_PV for n in ("node-a", "node-b", "node-c")},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data", modes=("ReadWriteMany",))],
                "persistentvolumes": [pv("pv-b", node_affinity=affinity(HOSTNAME, "node-b"))],
            },
            ("data",),
            {n: NO_PV for n in ("node-a", "node-b", "node-c")},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data")],
                "persistentvolumes": [
                    pv("pv-b", phase="Released", node_affinity=affinity(HOSTNAME, "node-b"))
                ],
            },
            ("data",),
            {n: NO_PV for n in ("node-a", "node-b", "node-c")},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data")],
                "persistentvolumes": [pv("pv-z", node_affinity=affinity(ZONE, "b"), storage_class="other")],
            },
            ("data",),
            {n: NO_PV for n in ("node-a", "node-b", "node-c")},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("one"), pvc("two")],
                "persistentvolumes": [pv("only", node_affinity=affinity(ZONE, "b"))],
            },
            ("one", "two"),
            {n: NO_PV for n in ("node-a", "node-b", "node-c")},
        ),
        (
            {"persistentvolumeclaims": [pvc("data", storage_class="dynamic")]},
            ("data",),
            {"node-a": (), "node-b": (), "node-c": ()},
        ),
        (
            {"persistentvolumeclaims": [pvc("data", storage_class="zonal")]},
            ("data",),
            {"node-a": (), "node-b": NO_PV, "node-c": NO_PV},
        ),
        (
            {
                "persistentvolumeclaims": [
                    pvc("data", storage_class="dynamic", annotations={ANN_SELECTED_NODE: "node-c"})
                ]
            },
            ("data",),
            {"node-a": NO_PV, "node-b": NO_PV, "node-c": ()},
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data", storage_class="tracked", size="5Gi")],
                "csidrivers": [csi_driver("tracked.csi.example.com", storage_capacity=True)],
                "csistoragecapacities": [
                    capacity("cap-a", "tracked", "100Gi", {ZONE: "a"}),
                    capacity("cap-b", "tracked", "1Gi", {ZONE: "b"}),
                ],
            },
            ("data",),
            {
                "node-a": (),
                "node-b": (ERR_REASON_NOT_ENOUGH_SPACE,),
                "node-c": (ERR_REASON_NOT_ENOUGH_SPACE,),
            },
        ),
        (
            {
                "persistentvolumeclaims": [pvc("data", storage_class="tracked")],
                "csidrivers": [csi_driver("tracked.csi.example.com", storage_capacity=False)],
            },
            ("data",),
            {"node-a": (), "node-b": (), "node-c": ()},
        ),
    ],
    ids=[
        "a bound volume pinned to one node keeps the pod there",
        "a claim bound to a volume that no longer exists fails everywhere",
        "a delayed claim finds the only matching local volume on its node",
        "a volume smaller than the request does not match",
        "a volume without the requested access mode does not match",
        "a volume that is not Available does not match",
        "a volume of another class does not match",
        "two claims never share one volume",
        "a class with a provisioner can provision on every node",
        "allowed topologies of the class limit provisioning to their zone",
        "a claim already selected for a node keeps the pod on that node",
        "storage capacity tracking needs enough capacity reachable from the node",
        "a driver without capacity tracking ignores capacity objects",
    ],
)
def test_filter_checks_each_node_against_the_pods_claims(objects, claims, expected):
    plugin, handle = make_plugin(objects)
    status, by_node = run_filters(plugin, handle, volume_pod("p", *claims))
    assert status is None
    assert reasons(by_node) == expected
    assert all(s is None or s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE for s in by_node.values())


def with_spec(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``obj`` with extra spec fields (builders do not know every field)."""
    return {**obj, "spec": {**obj["spec"], **fields}}


def pinned(*terms: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, Any]:
    """A PV nodeAffinity from terms of ``(key, operator, values)`` expressions."""
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k, "operator": op, "values": list(v)} for k, op, v in term]}
                for term in terms
            ]
        }
    }


def bound_pv(name: str, node_affinity: dict[str, Any]) -> dict[str, Any]:
    return pv(name, node_affinity=node_affinity, claim=("default", f"claim-{name}"))


def bound_claim(name: str) -> dict[str, Any]:
    return pvc(f"claim-{name}", volume_name=name, bound=True)


ON_A = pinned([(HOSTNAME, "In", ("node-a",))])
ON_B = pinned([(HOSTNAME, "In", ("node-b",))])
ON_A_OR_B = pinned([(HOSTNAME, "In", ("node-a", "node-b"))])


@pytest.mark.parametrize(
    ("volumes", "claims", "expected"),
    [
        ({"one": ON_A}, ("one",), {"node-a"}),
        ({"one": affinity(ZONE, "b")}, ("one",), {"node-b", "node-c"}),
        ({"one": ON_A_OR_B, "two": ON_B}, ("one", "two"), {"node-b"}),
        ({"one": ON_A, "two": ON_B}, ("one", "two"), set()),
        ({"one": ON_A, "two": affinity(ZONE, "a")}, ("one", "two"), {"node-a"}),
        ({"one": ON_A}, ("one", "gone"), set()),
        (
            {"one": pinned([(HOSTNAME, "In", ("node-a",))], [(HOSTNAME, "In", ("node-c",))])},
            ("one",),
            {"node-a", "node-c"},
        ),
        (
            {"one": pinned([(HOSTNAME, "In", ("node-a", "node-b")), (HOSTNAME, "In", ("node-b", "node-c"))])},
            ("one",),
            {"node-b"},
        ),
        ({"one": pinned([(HOSTNAME, "NotIn", ("node-a",))])}, ("one",), {"node-b", "node-c"}),
        (
            {"one": pinned([(HOSTNAME, "In", ("node-a",))], [(ZONE, "In", ("b",))])},
            ("one",),
            {"node-a", "node-b", "node-c"},
        ),
    ],
    ids=[
        "a bound local volume fits only its host",
        "a volume pinned by zone fits the zone's nodes",
        "the nodes of several volumes intersect",
        "local volumes on different hosts fit no node",
        "a zonal volume next to a local one leaves the local one's host",
        "a bound volume that no longer exists fits no node",
        "the terms of one volume unite",
        "the expressions within one term intersect",
        "a NotIn hostname expression excludes that host only",
        "a term without a hostname expression widens the volume's nodes",
    ],
)
def test_pre_filter_never_narrows_the_nodes_filter_decides_each(volumes, claims, expected):
    """v1.36's VolumeBinding has no GetEligibleNodes: PreFilter returns no PreFilterResult, so the
    other nodes get Filter's reasons (not "didn't satisfy plugin(s)") in the message."""
    plugin, handle = make_plugin(
        {
            "persistentvolumeclaims": [bound_claim(name) for name in claims],
            "persistentvolumes": [bound_pv(name, aff) for name, aff in volumes.items()],
        }
    )
    pod = volume_pod("p", *(f"claim-{n}" for n in claims))
    state = CycleState()
    assert plugin.pre_filter(state, pod, handle.snapshot) == (None, None)
    passed = {info.name for info in handle.snapshot.node_infos() if plugin.filter(state, pod, info) is None}
    assert passed == expected


def test_a_metadata_name_term_of_a_volume_matches_no_node_as_upstream_checks_labels_only():
    by_name = {
        "required": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
            ]
        }
    }
    plugin, handle = make_plugin(
        {"persistentvolumeclaims": [bound_claim("one")], "persistentvolumes": [bound_pv("one", by_name)]}
    )
    status, by_node = run_filters(plugin, handle, volume_pod("p", "claim-one"))
    assert status is None
    assert reasons(by_node) == {name: (ERR_REASON_NODE_CONFLICT,) for name in ("node-a", "node-b", "node-c")}


def test_pre_filter_does_not_narrow_for_claims_still_to_be_bound():
    objects = {
        "persistentvolumeclaims": [pvc("data")],
        "persistentvolumes": [pv("pv-b", node_affinity=ON_B)],
    }
    plugin, handle = make_plugin(objects)
    result, status = plugin.pre_filter(CycleState(), volume_pod("p", "data"), handle.snapshot)
    assert (result, status) == (None, None)


GOLD = {"volumeAttributesClassName": "gold"}
SILVER = {"volumeAttributesClassName": "silver"}


@pytest.mark.parametrize(
    ("claim_fields", "volume_fields", "prebound", "matches"),
    [
        ({}, {}, False, True),
        (GOLD, GOLD, False, True),
        (GOLD, {}, False, False),
        ({}, GOLD, False, False),
        (GOLD, SILVER, False, False),
        ({"volumeAttributesClassName": ""}, {}, False, True),
        (GOLD, GOLD, True, True),
        (GOLD, SILVER, True, False),
    ],
    ids=[
        "neither side naming an attributes class matches",
        "the same attributes class matches",
        "a claim asking for a class does not take a volume without one",
        "a claim without a class does not take a volume with one",
        "different attributes classes do not match",
        "an empty class name is the same as none",
        "a volume pre-bound to the claim matches with the same class",
        "even a volume pre-bound to the claim is refused with another class",
    ],
)
def test_a_volume_matches_only_a_claim_of_the_same_attributes_class(
    claim_fields, volume_fields, prebound, matches
):
    volume = pv("pv-b", node_affinity=ON_B, claim=("default", "data") if prebound else None)
    objects = {
        "persistentvolumeclaims": [with_spec(pvc("data"), **claim_fields)],
        "persistentvolumes": [with_spec(volume, **volume_fields)],
    }
    plugin, handle = make_plugin(objects)
    _, by_node = run_filters(plugin, handle, volume_pod("p", "data"))
    assert reasons(by_node)["node-b"] == (() if matches else NO_PV)


def test_the_smallest_volume_that_fits_is_chosen():
    volumes = [
        pv(name, size=size, node_affinity=affinity(ZONE, "b"))
        for name, size in (("big", "100Gi"), ("small", "6Gi"), ("tiny", "1Gi"))
    ]
    plugin, handle = make_plugin(
        {"persistentvolumeclaims": [pvc("data", size="5Gi")], "persistentvolumes": volumes}
    )
    state = CycleState()
    pod = volume_pod("p", "data")
    plugin.pre_filter(state, pod, handle.snapshot)
    assert plugin.filter(state, pod, handle.snapshot.get("node-b")) is None
    plugin.reserve(state, pod, "node-b")
    assert plugin.binder.pv_cache.get("small")["spec"]["claimRef"]["name"] == "data"


def test_reserve_takes_the_volume_from_the_next_pod_and_unreserve_gives_it_back():
    objects = {
        "persistentvolumeclaims": [pvc("first"), pvc("second")],
        "persistentvolumes": [pv("only", node_affinity=affinity(HOSTNAME, "node-b"))],
    }
    plugin, handle = make_plugin(objects)
    first, second = volume_pod("first", "first"), volume_pod("second", "second")
    state = CycleState()
    plugin.pre_filter(state, first, handle.snapshot)
    assert plugin.filter(state, first, handle.snapshot.get("node-b")) is None
    assert plugin.reserve(state, first, "node-b") is None

    _, by_node = run_filters(plugin, handle, second)
    assert reasons(by_node)["node-b"] == NO_PV

    plugin.unreserve(state, first, "node-b")
    _, by_node = run_filters(plugin, handle, second)
    assert reasons(by_node)["node-b"] == ()


def test_an_assumption_gives_way_once_the_informer_has_a_newer_object():
    objects = {"persistentvolumeclaims": [pvc("data")], "persistentvolumes": [pv("only")]}
    plugin, handle = make_plugin(objects)
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    plugin.filter(state, pod, handle.snapshot.get("node-a"))
    plugin.reserve(state, pod, "node-a")
    assert plugin.binder.pv_cache.is_assumed("only")
    handle.lister("persistentvolumes").put(pv("only", phase="Released"))  # a newer resourceVersion
    assert plugin.binder.pv_cache.get("only")["status"]["phase"] == "Released"
    assert not plugin.binder.pv_cache.is_assumed("only")


async def test_pre_bind_writes_what_this_pod_reserved_even_after_another_pod_took_the_volume():
    """An unrelated PV update drops pod A's assumption and pod B reserves the PV: A's PreBind must
    still write A's own claimRef (on the old resourceVersion, so the server refuses it), and A's
    Unreserve must leave B's assumption alone."""
    objects = {
        "persistentvolumeclaims": [pvc("a"), pvc("b")],
        "persistentvolumes": [pv("only", node_affinity=affinity(HOSTNAME, "node-b"))],
    }
    conflict = {"kind": "Status", "reason": "Conflict", "message": "the object has been modified"}
    client = FakeClient(responses=[ApiResponse(409, conflict)])
    plugin, handle = make_plugin(objects, client)
    pod_a, pod_b = volume_pod("a", "a"), volume_pod("b", "b")
    state_a, state_b = CycleState(), CycleState()
    plugin.pre_filter(state_a, pod_a, handle.snapshot)
    plugin.filter(state_a, pod_a, handle.snapshot.get("node-b"))
    assert plugin.reserve(state_a, pod_a, "node-b") is None
    original_version = handle.lister("persistentvolumes").get("only")["metadata"]["resourceVersion"]
    relabelled = pv("only", node_affinity=affinity(HOSTNAME, "node-b"))
    relabelled["metadata"] = {**relabelled["metadata"], "resourceVersion": "12345", "labels": {"x": "y"}}
    handle.lister("persistentvolumes").put(relabelled)
    plugin.pre_filter(state_b, pod_b, handle.snapshot)
    assert plugin.filter(state_b, pod_b, handle.snapshot.get("node-b")) is None
    assert plugin.reserve(state_b, pod_b, "node-b") is None

    status = await plugin.pre_bind(state_a, pod_a, "node-b")
    assert status is not None and status.code == Code.ERROR
    [request] = client.requests
    assert request.body["spec"]["claimRef"]["name"] == "a"
    assert request.body["metadata"]["resourceVersion"] == original_version
    plugin.unreserve(state_a, pod_a, "node-b")
    assert plugin.binder.pv_cache.get("only")["spec"]["claimRef"]["name"] == "b"


def _as_written(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server answers to a PUT: the object with a newer resourceVersion."""
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": "900000"}}


async def test_pre_bind_writes_the_claim_ref_and_waits_until_the_claim_is_bound():
    claim = pvc("data")
    volume = pv("only", node_affinity=affinity(ZONE, "a"))
    answered = _as_written(pv("only", node_affinity=affinity(ZONE, "a"), claim=("default", "data")))
    answered["spec"]["claimRef"]["uid"] = claim["metadata"]["uid"]  # the API keeps what was written
    client = FakeClient(responses=[ApiResponse(200, answered)])
    plugin, handle = make_plugin({"persistentvolumeclaims": [claim], "persistentvolumes": [volume]}, client)
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    plugin.filter(state, pod, handle.snapshot.get("node-a"))
    plugin.reserve(state, pod, "node-a")

    async def pv_controller() -> None:
        await asyncio.sleep(0.02)
        handle.lister("persistentvolumes").put(answered)
        await asyncio.sleep(0.02)
        assert not done.done()  # the claim is not bound yet: PreBind still waits
        handle.lister("persistentvolumeclaims").put(pvc("data", volume_name="only", bound=True))

    done = asyncio.ensure_future(plugin.pre_bind(state, pod, "node-a"))
    await pv_controller()
    assert await done is None
    [request] = client.requests
    assert (request.method, request.path) == ("PUT", "/api/v1/persistentvolumes/only")
    assert request.body["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "data",
        "uid": "uid-pvc-data",
        "resourceVersion": claim["metadata"]["resourceVersion"],
    }
    assert request.body["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


async def test_pre_bind_asks_for_provisioning_by_annotating_the_selected_node():
    claim = pvc("data", storage_class="dynamic")
    client = FakeClient(responses=[ApiResponse(200, _as_written(claim))])
    plugin, handle = make_plugin({"persistentvolumeclaims": [claim]}, client, timeout=0)
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    plugin.filter(state, pod, handle.snapshot.get("node-c"))
    plugin.reserve(state, pod, "node-c")
    status = await plugin.pre_bind(state, pod, "node-c")
    [request] = client.requests
    assert (request.method, request.path) == ("PUT", "/api/v1/namespaces/default/persistentvolumeclaims/data")
    assert request.body["metadata"]["annotations"][ANN_SELECTED_NODE] == "node-c"
    # nobody provisions here: the (zero) bind timeout runs out
    assert status is not None and status.code == Code.ERROR
    # upstream's poll gives up with its context's error
    assert status.reasons == ("binding volumes: context deadline exceeded",)


async def test_pre_bind_fails_when_the_provisioner_gives_the_claim_back():
    claim = pvc("data", storage_class="dynamic")
    client = FakeClient(responses=[ApiResponse(200, _as_written(claim))])
    plugin, handle = make_plugin({"persistentvolumeclaims": [claim]}, client)
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    plugin.filter(state, pod, handle.snapshot.get("node-c"))
    plugin.reserve(state, pod, "node-c")
    handle.lister("persistentvolumeclaims").put(_as_written(claim))  # selected-node removed again
    status = await plugin.pre_bind(state, pod, "node-c")
    assert status is not None and status.reasons == ('binding volumes: provisioning failed for PVC "data"',)


async def test_pre_bind_fails_with_the_api_error_and_unreserve_reverts():
    client = FakeClient(responses=[ApiResponse(409, {"message": "the object has been modified"})])
    plugin, handle = make_plugin(
        {"persistentvolumeclaims": [pvc("data")], "persistentvolumes": [pv("only")]}, client
    )
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    plugin.filter(state, pod, handle.snapshot.get("node-a"))
    plugin.reserve(state, pod, "node-a")
    status = await plugin.pre_bind(state, pod, "node-a")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "the object has been modified"  # the API's message, as client-go's error
    plugin.unreserve(state, pod, "node-a")
    assert not plugin.binder.pv_cache.is_assumed("only")


async def test_reserve_and_pre_bind_do_nothing_for_pods_without_claims_or_already_bound():
    client = FakeClient()
    objects = {
        "persistentvolumeclaims": [pvc("data", volume_name="pv-a", bound=True)],
        "persistentvolumes": [pv("pv-a", claim=("default", "data"))],
    }
    plugin, handle = make_plugin(objects, client)
    for pod in (make_pod("plain"), volume_pod("bound", "data")):
        state = CycleState()
        plugin.pre_filter(state, pod, handle.snapshot)
        if plugin.name not in state.skip_filter_plugins:
            plugin.filter(state, pod, handle.snapshot.get("node-a"))
        assert plugin.reserve(state, pod, "node-a") is None
        assert await plugin.pre_bind(state, pod, "node-a") is None
    assert client.requests == []


@pytest.mark.parametrize(
    ("namespace", "name", "queued"),
    [("default", "data", True), ("default", "other", False), ("elsewhere", "data", False)],
    ids=["the pod's own claim queues it", "another claim does not", "a claim of another namespace does not"],
)
def test_claim_events_queue_only_pods_that_use_the_claim(namespace, name, queued):
    plugin, _ = make_plugin({})
    hint = next(e.hint for e in plugin.events_to_register() if e.event.resource == "PersistentVolumeClaim")
    assert hint is not None
    result = hint(volume_pod("p", "data"), None, pvc(name, namespace=namespace))
    assert (result.name == "QUEUE") is queued


def registered_hint(resource: str) -> Any:
    """The queueing hint VolumeBinding registers for changes to ``resource``."""
    plugin, _ = make_plugin({})
    [hint] = [h.hint for h in plugin.events_to_register() if h.event.resource == resource]
    return hint


@pytest.mark.parametrize(
    ("before", "after", "hint"),
    [
        ("1Gi", "2Gi", QueueingHint.QUEUE),
        ("2Gi", "1Gi", QueueingHint.SKIP),
        ("1Gi", None, QueueingHint.SKIP),
        (None, "1Gi", QueueingHint.QUEUE),
    ],
    ids=[
        "a limit that grew queues",
        "a limit that shrank does not",
        "a limit that went away does not, as upstream",
        "a limit that appeared queues",
    ],
)
def test_a_storage_capacity_change_queues_the_pod_only_if_it_may_help(before, after, hint):
    old = capacity("cap", "tracked", before or "0", {ZONE: "a"})
    new = capacity("cap", "tracked", after or "0", {ZONE: "a"})
    for obj, amount in ((old, before), (new, after)):
        if amount is None:
            del obj["capacity"]
    assert registered_hint(CSI_STORAGE_CAPACITY)(volume_pod("p", "data"), old, new) == hint


def test_a_storage_class_without_a_binding_mode_is_an_internal_error_as_upstream():
    unset = storage_class("unset", mode=None)
    plugin, handle = make_plugin({"persistentvolumeclaims": [pvc("data", storage_class="unset")]})
    handle.lister("storageclasses").put(unset)
    status, _ = run_filters(plugin, handle, volume_pod("p", "data"))
    assert status == Status(Code.ERROR, ('VolumeBindingMode not set for StorageClass "unset"',))


def test_node_taint_changes_do_not_requeue_as_upstream_with_queueing_hints():
    plugin, _ = make_plugin({})
    [node_event] = [e.event for e in plugin.events_to_register() if e.event.resource == "Node"]
    assert node_event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL


@pytest.mark.parametrize(
    ("before", "after", "hint"),
    [
        (None, [], QueueingHint.SKIP),
        ([], [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}], QueueingHint.QUEUE),
    ],
    ids=["a missing allowedTopologies equals an empty one", "new allowed topologies queue"],
)
def test_a_storage_class_update_queues_only_for_other_allowed_topologies(before, after, hint):
    old, new = storage_class("c"), storage_class("c")
    for obj, terms in ((old, before), (new, after)):
        if terms is not None:
            obj["allowedTopologies"] = terms
    assert registered_hint(STORAGE_CLASS)(volume_pod("p", "data"), old, new) == hint


def test_a_volume_pre_bound_by_name_gets_the_claims_uid_written_at_reserve():
    """GetBindVolumeToClaim: a claimRef naming the claim without its uid is rewritten, and no
    bound-by-controller annotation is added (the user bound it)."""
    claim = pvc("data")
    prebound = pv("only", claim=("default", "data"))
    plugin, handle = make_plugin({"persistentvolumeclaims": [claim], "persistentvolumes": [prebound]})
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    assert plugin.filter(state, pod, handle.snapshot.get("node-a")) is None
    plugin.reserve(state, pod, "node-a")
    assumed = plugin.binder.pv_cache.get("only")
    assert assumed["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert "pv.kubernetes.io/bound-by-controller" not in (assumed["metadata"].get("annotations") or {})


async def test_pre_bind_fails_when_the_written_volume_lost_its_claim_ref_uid():
    claim = pvc("data")
    answered = _as_written(pv("only", claim=("default", "data")))  # claimRef without uid
    client = FakeClient(responses=[ApiResponse(200, answered)])
    plugin, handle = make_plugin(
        {"persistentvolumeclaims": [claim], "persistentvolumes": [pv("only")]}, client
    )
    pod = volume_pod("p", "data")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    plugin.filter(state, pod, handle.snapshot.get("node-a"))
    plugin.reserve(state, pod, "node-a")
    handle.lister("persistentvolumes").put(answered)
    status = await plugin.pre_bind(state, pod, "node-a")
    assert status is not None and status.reasons == ('binding volumes: ClaimRef got reset for pv "only"',)
