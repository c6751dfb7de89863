"""Binding conditions: the allocator copies them and orders such pools last; PreBind waits for them
on the injectable clock, fails on a failure condition or the timeout; the next attempt
deallocates the claim."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from scheduler.api import Pod
from scheduler.config import DynamicResourcesArgs
from scheduler.dra.allocator import Allocator
from scheduler.dra.cel import SelectorCache
from scheduler.dra.model import SliceParser
from scheduler.framework import ApiResponse, CycleState, Diagnosis
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.testing import FakeLister, make_node
from scheduler.testing.builders import FakeClient, FakeHandle, Request, pod_dict, table_of
from scheduler.testing.dra import DRIVER, allocated_view, claim, device, device_class, resource_slice

GPU = device_class("gpu", f'device.driver == "{DRIVER}"')
ATTACHABLE = {
    **device("att-0"),
    "bindingConditions": ["attached"],
    "bindingFailureConditions": ["failed"],
    "bindsToNode": True,
}
FABRIC = resource_slice("fabric", [ATTACHABLE], pool="fabric", all_nodes=True)
NODES = [make_node("node-a"), make_node("node-b"), make_node("node-c")]


def test_the_result_copies_the_conditions_and_binds_to_the_node() -> None:
    allocator = Allocator(
        SliceParser().index([FABRIC]), allocated_view(), {"gpu": GPU}.get, SelectorCache(), [claim("c")]
    )
    found = allocator.allocate("node-b", {})
    assert found is not None
    [result] = found.results()
    assert result["devices"]["results"] == [
        {
            "request": "gpu",
            "driver": DRIVER,
            "pool": "fabric",
            "device": "att-0",
            "bindingConditions": ["attached"],
            "bindingFailureConditions": ["failed"],
        }
    ]
    # an allNodes device that binds to its node: the allocation is for the node it was made on
    assert result["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-b"]}]}
        ]
    }


def test_pools_with_binding_conditions_are_searched_last() -> None:
    # "a-fabric" sorts before "b-plain", but devices needing no attachment are taken first
    slices = [
        resource_slice("s1", [ATTACHABLE], pool="a-fabric", all_nodes=True),
        resource_slice("s2", [device("plain-0")], pool="b-plain", all_nodes=True),
    ]
    index = SliceParser().index(slices)
    assert [p.name for p in index.pools_for("node-a", {})] == ["b-plain", "a-fabric"]
    allocator = Allocator(
        index, allocated_view(), {"gpu": GPU}.get, SelectorCache(), [claim("c", count_two())]
    )
    found = allocator.allocate("node-a", {})
    assert found is not None
    assert [r["device"] for r in found.results()[0]["devices"]["results"]] == ["plain-0", "att-0"]


def count_two() -> dict:
    return {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}


# ---------------------------------------------------------------------------- PreBind's wait


def claim_pod() -> Pod:
    raw = pod_dict("p")
    raw["metadata"]["uid"] = "uid-p"
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    return Pod.from_dict(raw)


class ClaimServer(FakeClient):
    """The API server and the claims informer in one: a claim written is stored and shown at once."""

    def __init__(self, claims: FakeLister) -> None:
        super().__init__()
        self.claims = claims
        self.version = 1

    async def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> ApiResponse:
        self.requests.append(
            Request(method, path, body, None, kwargs.get("content_type", "application/json"))
        )
        if method == "PUT":
            return ApiResponse(200, self.store(copy.deepcopy(body)))
        if method == "PATCH":  # Unreserve's JSON patch: the pod's reservation goes
            current = copy.deepcopy(self.claims.get("default/c"))
            current["status"].pop("reservedFor", None)
            return ApiResponse(200, self.store(current))
        raise AssertionError(f"unexpected {method} {path}")

    def store(self, claim: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        claim["metadata"]["resourceVersion"] = str(self.version)
        self.claims.put(claim)
        return claim


class Driver:
    """A cluster with one attachable device, and its driver reporting the device's conditions."""

    def __init__(
        self,
        binding_timeout: float = 600.0,
        slices: tuple[dict, ...] = (FABRIC,),
        gpu_class: dict = GPU,
        the_claim: dict | None = None,
    ) -> None:
        claims = FakeLister([the_claim or claim("c")])
        self.server = ClaimServer(claims)
        self.handle = FakeHandle(
            table_of(NODES),
            client=self.server,
            listers={"resourceslices": list(slices), "deviceclasses": [gpu_class]},
        )
        self.handle.listers["resourceclaims"] = claims
        self.claims = claims
        self.plugin = DynamicResources(DynamicResourcesArgs(binding_timeout=binding_timeout), self.handle)

    def set_condition(self, kind: str, reason: str = "Attached", message: str = "") -> None:
        current = copy.deepcopy(self.claims.get("default/c"))
        current["status"]["devices"] = [
            {
                "driver": DRIVER,
                "pool": "fabric",
                "device": "att-0",
                "conditions": [{"type": kind, "status": "True", "reason": reason, "message": message}],
            }
        ]
        self.server.store(current)

    async def schedule(self, pod: Pod) -> tuple[CycleState, asyncio.Task[Any]]:
        """One cycle placing the pod on node-a, and its PreBind started."""
        state = CycleState()
        _, status = self.plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
        assert status is None
        info = next(i for i in table_of(NODES).infos if i.node.name == "node-a")
        assert self.plugin.filter(state, pod, info) is None
        assert self.plugin.reserve(state, pod, "node-a") is None
        task = asyncio.ensure_future(self.plugin.pre_bind(state, pod, "node-a"))
        await self.handle.clock.advance(0)
        return state, task

    def retry(self, pod: Pod) -> tuple[CycleState, dict[str, Any]]:
        """The pod's next attempt: PreFilter and Filter on every node."""
        state = CycleState()
        self.plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
        return state, {i.node.name: self.plugin.filter(state, pod, i) for i in table_of(NODES).infos}


async def test_pre_bind_waits_until_every_binding_condition_is_true() -> None:
    driver = Driver()
    pod = claim_pod()
    _, task = await driver.schedule(pod)
    written = driver.claims.get("default/c")
    allocation = written["status"]["allocation"]
    assert allocation["devices"]["results"][0]["bindingConditions"] == ["attached"]
    assert allocation["allocationTimestamp"].endswith("Z")
    assert written["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-p"}]
    assert [e.reason for e in driver.handle.events] == ["BindingConditionsPending"]
    assert driver.handle.events[0].message == "waiting for binding conditions for device on node node-a"
    await driver.handle.clock.advance(60)
    assert not task.done()  # still waiting: nothing reported yet
    driver.set_condition("attached")
    await driver.handle.clock.advance(4)
    assert not task.done()  # looked at every 5 s, as upstream: the next look is at 65 s
    await driver.handle.clock.advance(1)
    assert task.done() and task.result() is None


async def test_a_failure_condition_fails_pre_bind_and_the_next_attempt_deallocates() -> None:
    driver = Driver()
    pod = claim_pod()
    state, task = await driver.schedule(pod)
    driver.set_condition("failed", reason="NoRoute", message="fabric port down")
    await driver.handle.clock.advance(5)
    status = task.result()
    assert status is not None and status.message() == (
        'device binding failed: claim=c, reason=NoRoute, message="fabric port down"'
    )
    # the binding cycle unreserves, the pod is tried again: its failed claim fits no node
    driver.plugin.unreserve(state, pod, "node-a")
    await driver.handle.clock.advance(0)
    retry, verdicts = driver.retry(pod)
    assert [v.message() for v in verdicts.values()] == ["resourceclaim not available on the node"] * 3
    _, outcome = await driver.plugin.post_filter(retry, pod, Diagnosis())
    assert outcome is not None and outcome.message() == "deallocation of ResourceClaim completed"
    update = driver.server.requests[-1]
    assert update.path.endswith("/resourceclaims/c/status")
    assert not {"allocation", "reservedFor", "devices"} & set(update.body["status"])


async def test_the_binding_timeout_fails_pre_bind_and_the_claim_is_deallocated_next() -> None:
    driver = Driver(binding_timeout=30)
    pod = claim_pod()
    state, task = await driver.schedule(pod)
    await driver.handle.clock.advance(25)
    assert not task.done()
    await driver.handle.clock.advance(5)
    status = task.result()
    assert status is not None and status.message() == "device binding timeout: context deadline exceeded"
    driver.plugin.unreserve(state, pod, "node-a")
    await driver.handle.clock.advance(1)  # allocated more than bindingTimeout ago, by the wall clock too
    _, verdicts = driver.retry(pod)
    assert [v.message() for v in verdicts.values()] == ["resourceclaim not available on the node"] * 3


async def test_a_claim_waiting_within_the_timeout_stays_where_it_was_allocated() -> None:
    driver = Driver(binding_timeout=600)
    pod = claim_pod()
    state, task = await driver.schedule(pod)
    task.cancel()  # e.g. the scheduler stopped while waiting
    driver.plugin.unreserve(state, pod, "node-a")
    await driver.handle.clock.advance(10)
    _, verdicts = driver.retry(pod)
    assert verdicts["node-a"] is None  # not failed, not timed out: bound to its node
    assert (
        verdicts["node-b"] is not None
        and verdicts["node-b"].message() == "resourceclaim not available on the node"
    )


# ------------------------------------------------------------- the binding-conditions metrics


async def test_a_met_wait_is_recorded_once_per_device_and_counted_per_conditioned_device() -> None:
    """As upstream's PreBind: the wait is observed for every allocated device (by its driver),
    the allocation counted for each device that has binding conditions."""
    nics = resource_slice("nics", [device("nic-0")], driver="nic.example.com", pool="nics", all_nodes=True)
    driver = Driver(
        slices=(FABRIC, nics), gpu_class=device_class("gpu", "true"), the_claim=claim("c", count_two())
    )
    _, task = await driver.schedule(claim_pod())
    devices = driver.claims.get("default/c")["status"]["allocation"]["devices"]["results"]
    assert [d["device"] for d in devices] == ["nic-0", "att-0"]
    assert driver.handle.recorded_metrics.binding_waits == []  # nothing until the wait ends
    await driver.handle.clock.advance(10)
    driver.set_condition("attached")
    await driver.handle.clock.advance(5)
    assert task.result() is None
    assert driver.handle.recorded_metrics.binding_waits == [
        (driver.handle.scheduler_name, "success", 15.0, ["nic.example.com", DRIVER], [DRIVER])
    ]


async def test_a_failed_wait_is_recorded_as_a_failure() -> None:
    driver = Driver()
    _, task = await driver.schedule(claim_pod())
    driver.set_condition("failed", reason="NoRoute")
    await driver.handle.clock.advance(5)
    assert task.result() is not None
    assert driver.handle.recorded_metrics.binding_waits == [
        (driver.handle.scheduler_name, "failure", 5.0, [DRIVER], [DRIVER])
    ]


async def test_a_timed_out_wait_is_recorded_as_a_timeout() -> None:
    driver = Driver(binding_timeout=30)
    _, task = await driver.schedule(claim_pod())
    await driver.handle.clock.advance(30)
    assert task.result() is not None
    assert driver.handle.recorded_metrics.binding_waits == [
        (driver.handle.scheduler_name, "timeout", 30.0, [DRIVER], [DRIVER])
    ]


async def test_a_claim_deleted_while_waiting_is_recorded_as_an_error() -> None:
    driver = Driver()
    _, task = await driver.schedule(claim_pod())
    driver.claims.delete("default/c")
    await driver.handle.clock.advance(5)
    status = task.result()
    assert status is not None and status.message() == "claim default/c got deleted in the meantime"
    # the claims as last read: the deleted one still holds its device
    assert driver.handle.recorded_metrics.binding_waits == [
        (driver.handle.scheduler_name, "error", 5.0, [DRIVER], [DRIVER])
    ]


async def test_pods_without_binding_conditions_record_no_wait() -> None:
    plain = resource_slice("plain", [device("gpu-0")], pool="plain", all_nodes=True)
    driver = Driver(slices=(plain,))
    _, task = await driver.schedule(claim_pod())
    assert task.result() is None
    assert driver.handle.recorded_metrics.binding_waits == []
