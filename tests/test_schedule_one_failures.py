"""The failure paths of one pod's cycles, on a fake clock: what is reported, what is undone, where
the pod goes next. Upstream's counterparts are in schedule_one.go (prepareForBindingCycle,
bindingCycle, handleBindingCycleError, handleSchedulingFailure)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api import Node, Pod
from scheduler.build import build_scheduler
from scheduler.config import PluginRef, default_config
from scheduler.framework import Code, Status
from scheduler.framework.interface import ApiResponse
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import available_plugins
from scheduler.testing import FakeClock, make_node, make_pod

CONFLICT = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Conflict",
    "code": 409,
    "message": 'Operation cannot be fulfilled on pods/binding "web": '
    'pod web is already assigned to node "n2"',
}
UNAVAILABLE = {
    "kind": "Status",
    "status": "Failure",
    "reason": "ServiceUnavailable",
    "code": 503,
    "message": "boom",
}


@dataclass
class ScriptedApi:
    """The API as the binder sees it: answers for bindings, taken in order (201 once exhausted)."""

    bindings: list[ApiResponse] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        self.sent.append(f"{method} {path}")
        if path.endswith("/binding"):
            return self.bindings.pop(0) if self.bindings else ApiResponse(201, {"kind": "Status"})
        return ApiResponse(200, {})


class Writes:
    """Events and status changes the scheduler asked for."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.status: list[tuple[str, dict | None, str | None]] = []

    def record(self, obj: Any, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append((obj.name, reason, note))

    def submit(self, pod: Pod, condition: dict | None, nominated: str | None) -> None:
        self.status.append((pod.name, condition, nominated))

    async def write_now(self, pod: Pod, condition: dict | None, nominated: str | None) -> None:
        self.status.append((pod.name, condition, nominated))

    def reasons(self, pod: str) -> list[str]:
        return [reason for name, reason, _ in self.events if name == pod]

    def condition(self, pod: str) -> dict | None:
        found = [c for name, c, _ in self.status if name == pod and c is not None]
        return found[-1] if found else None


class RejectAtReserve:
    name = "RejectAtReserve"
    unreserved: list[str] = []

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def reserve(self, state: Any, pod: Pod, node_name: str) -> Status | None:
        return Status.unschedulable("no room in the reservation book")

    def unreserve(self, state: Any, pod: Pod, node_name: str) -> None:
        RejectAtReserve.unreserved.append(pod.name)


class RejectAtPermit:
    name = "RejectAtPermit"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def permit(self, state: Any, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return Status.unschedulable("not permitted today"), 0.0


class WaitAtPermit:
    """Holds every pod for up to five minutes, as a gang plugin does."""

    name = "WaitAtPermit"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def permit(self, state: Any, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT, ("waiting for the others",)), 300.0


class Harness:
    """The default profile (+ ``extra`` plugins) on nodes of 2 cpu, against a scripted API."""

    def __init__(self, extra: Sequence[type] = (), nodes: Sequence[str] = ("n1",)) -> None:
        self.clock = FakeClock()
        self.api = ScriptedApi()
        self.writes = Writes()
        self.pods: dict[str, Pod] = {}  # what the informer has
        config = default_config()
        registry = in_tree_registry()
        for plugin in extra:
            registry[plugin.name] = plugin
            config.profiles[0].plugins.multi_point.enabled.append(PluginRef(plugin.name))
        available_plugins(config, registry)
        parts = build_scheduler(
            config,
            registry,
            self.api,
            events=self.writes,
            status=self.writes,
            current_pod=lambda pod: self.pods.get(pod.name),
            clock=self.clock,
        )
        self.cache, self.queue, self.scheduler = parts.cache, parts.queue, parts.scheduler
        self.fwk = parts.frameworks["pyscheduler"]
        for name in nodes:
            self.cache.add_node(node(name))

    async def attempt(self, pod: Pod) -> None:
        """Queue ``pod``, run one scheduling cycle; the binding cycle runs on in the background."""
        self.pods[pod.name] = pod
        self.queue.add(pod)
        await self.scheduler.attempt(await asyncio.wait_for(self.queue.pop(), 1))
        await self.clock.advance(0)

    async def bindings_done(self) -> None:
        assert await self.scheduler.wait_for_bindings(2)

    def where(self, pod: Pod) -> str:
        """Which part of the queue holds the pod ("" when it is not queued)."""
        return self.queue.position(pod.uid)

    def requested_cpu(self, node_name: str) -> int:
        info = self.cache.get_node_info(node_name)
        return info.requested.milli_cpu if info else 0


def node(name: str) -> Node:
    return make_node(name, cpu="2", memory=0, pods=10)


def pod(name: str = "web", cpu: str = "1") -> Pod:
    return make_pod(name, uid=f"uid-{name}", requests={"cpu": cpu}, images=["x"])


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (RejectAtReserve, "0/1 nodes are available: 1 no room in the reservation book."),
        (RejectAtPermit, "0/1 nodes are available: 1 not permitted today."),
    ],
)
async def test_a_rejection_at_reserve_or_permit_undoes_the_assumption_and_reports(plugin, message) -> None:
    RejectAtReserve.unreserved.clear()
    harness = Harness([plugin])
    web = pod()
    await harness.attempt(web)
    assert harness.requested_cpu("n1") == 0 and not harness.cache.is_assumed(web.uid)
    if plugin is RejectAtReserve:
        assert RejectAtReserve.unreserved == ["web"]
    assert harness.writes.reasons("web") == ["FailedScheduling"]
    condition = harness.writes.condition("web")
    assert (condition["reason"], condition["message"]) == ("Unschedulable", message)
    assert harness.where(web) == "unschedulable"
    assert harness.api.sent == []  # nothing was bound


async def test_a_pod_waiting_at_permit_is_bound_once_allowed() -> None:
    harness = Harness([WaitAtPermit])
    web = pod()
    await harness.attempt(web)
    assert harness.cache.is_assumed(web.uid) and harness.requested_cpu("n1") == 1000
    assert harness.api.sent == []  # holding: no binding yet
    harness.fwk.waiting_pods.get(web.uid).allow("WaitAtPermit")
    await harness.bindings_done()
    assert harness.api.sent == ["POST /api/v1/namespaces/default/pods/web/binding"]
    assert harness.writes.reasons("web") == ["Scheduled"]


async def test_a_pod_rejected_while_waiting_at_permit_gives_its_room_back_and_is_requeued() -> None:
    harness = Harness([WaitAtPermit])
    web = pod()
    await harness.attempt(web)
    harness.fwk.waiting_pods.get(web.uid).reject("WaitAtPermit", "the gang fell apart")
    await harness.bindings_done()
    assert harness.requested_cpu("n1") == 0 and not harness.cache.is_assumed(web.uid)
    assert harness.writes.condition("web")["message"] == "0/1 nodes are available: 1 the gang fell apart."
    assert harness.where(web) == "unschedulable"


async def test_a_pod_waiting_at_permit_times_out_after_the_plugins_timeout() -> None:
    harness = Harness([WaitAtPermit])
    web = pod()
    await harness.attempt(web)
    await harness.clock.advance(299)
    assert harness.cache.is_assumed(web.uid)
    await harness.clock.advance(2)
    await harness.bindings_done()
    assert not harness.cache.is_assumed(web.uid)
    assert harness.writes.condition("web")["message"] == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin WaitAtPermit."
    )
    assert harness.where(web) == "unschedulable"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (ApiResponse(409, CONFLICT), 'running Bind plugin "DefaultBinder": ' + CONFLICT["message"]),
        (ApiResponse(503, UNAVAILABLE), 'running Bind plugin "DefaultBinder": boom'),
    ],
)
async def test_a_failed_binding_is_an_error_retried_after_backoff(answer, message) -> None:
    harness = Harness()
    harness.api.bindings.append(answer)
    web = pod()
    await harness.attempt(web)
    await harness.bindings_done()
    assert harness.requested_cpu("n1") == 0 and not harness.cache.is_assumed(web.uid)
    condition = harness.writes.condition("web")
    assert (condition["reason"], condition["message"]) == ("SchedulerError", message)
    assert harness.where(web) == "backoff"  # an error, not a rejection: no waiting for an event


async def test_a_pod_deleted_between_its_decision_and_its_binding_is_not_bound() -> None:
    harness = Harness([WaitAtPermit])
    web = pod()
    await harness.attempt(web)
    del harness.pods["web"]
    harness.queue.delete(web)  # what the informer's delete does
    harness.fwk.waiting_pods.get(web.uid).allow("WaitAtPermit")
    await harness.bindings_done()
    assert harness.api.sent == []
    assert harness.requested_cpu("n1") == 0
    assert harness.writes.condition("web") is None  # nothing written about a pod that is gone
    assert harness.where(web) == ""


async def test_a_node_deleted_while_its_pod_is_binding_leaves_a_consistent_cache() -> None:
    harness = Harness([WaitAtPermit], nodes=("n1", "n2"))
    web = pod(cpu="2")
    await harness.attempt(web)
    chosen = harness.fwk.waiting_pods.get(web.uid).node_name
    harness.cache.remove_node(node(chosen))
    harness.fwk.waiting_pods.get(web.uid).allow("WaitAtPermit")
    await harness.bindings_done()
    # the API server binds to names (a real one does not check the node); the cache keeps the
    # pod accounted until it is deleted, and scheduling goes on on the other node
    assert harness.writes.reasons("web") == ["Scheduled"]
    assert harness.cache.node_count() == 1
    other = pod("other", cpu="2")
    await harness.attempt(other)
    harness.fwk.waiting_pods.get(other.uid).allow("WaitAtPermit")
    await harness.bindings_done()
    assert harness.writes.reasons("other") == ["Scheduled"]


async def test_an_assumed_pod_whose_binding_is_never_confirmed_expires_and_frees_its_node() -> None:
    harness = Harness()
    web = pod(cpu="2")
    await harness.attempt(web)
    await harness.bindings_done()
    assert harness.requested_cpu("n1") == 2000  # assumed, the informer has not confirmed it yet
    await harness.clock.advance(29)
    assert harness.cache.cleanup_expired_assumed_pods() == []
    await harness.clock.advance(2)
    assert [p.name for p in harness.cache.cleanup_expired_assumed_pods()] == ["web"]
    assert harness.requested_cpu("n1") == 0
