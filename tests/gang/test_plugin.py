"""GangScheduling's PreEnqueue and Permit on their own (FakeHandle, fake clock)."""

from __future__ import annotations

from typing import Any

from scheduler.framework import Code, CycleState, Pod
from scheduler.plugins.gangscheduling import PODGROUPS, GangScheduling
from scheduler.testing import FakeHandle, make_pod, run_permit
from tests.support.gang import pod_group


def gang_pod(name: str, group: str = "train") -> Pod:
    pod = make_pod(name)
    pod.pod_group = group
    return pod


def handle_with(group: dict[str, Any] | None, *pods: Pod) -> FakeHandle:
    return FakeHandle(listers={PODGROUPS: [group] if group else []}, pods=pods)


def test_pre_enqueue_waits_for_the_pod_group_then_for_min_count() -> None:
    first, second = gang_pod("a"), gang_pod("b")
    plugin = GangScheduling(None, handle_with(None, first))
    status = plugin.pre_enqueue(first)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'waiting for pods\'s pod group "train" to appear in scheduling queue'

    handle = handle_with(pod_group("train", 2), first)
    plugin = GangScheduling(None, handle)
    status = plugin.pre_enqueue(first)
    assert status is not None
    assert status.message() == "waiting for minCount pods from a gang to appear in scheduling queue"
    handle.pod_groups.add(second)
    assert plugin.pre_enqueue(first) is None


def test_pods_without_a_gang_pass() -> None:
    plugin = GangScheduling(None, handle_with(pod_group("train", None)))
    assert plugin.pre_enqueue(make_pod("plain")) is None
    assert plugin.pre_enqueue(gang_pod("basic")) is None
    assert plugin.permit(CycleState(), gang_pod("basic"), "node") == (None, 0.0)


async def test_permit_holds_members_until_min_count_then_allows_them_together() -> None:
    pods = [gang_pod(f"p{i}") for i in range(3)]
    handle = handle_with(pod_group("train", 3), *pods)
    plugin = GangScheduling(None, handle)
    first = run_permit(plugin, pod=pods[0], node_name="n0", handle=handle)
    second = run_permit(plugin, pod=pods[1], node_name="n1", handle=handle)
    assert first.is_waiting and second.is_waiting
    assert first.status is not None
    assert first.status.message() == "waiting for minCount pods from a gang to be scheduled"
    assert first.timeout == 300.0  # upstream's five minutes
    assert {p.name for p in handle.activated} == {"p1", "p2"}  # the pending ones, tried at once
    third = run_permit(plugin, pod=pods[2], node_name="n2", handle=handle)
    assert third.status is None
    await handle.clock.advance(0)
    assert first.ended.result() is None and second.ended.result() is None


async def test_a_gang_short_of_min_count_is_rejected_after_five_minutes() -> None:
    pods = [gang_pod(f"p{i}") for i in range(3)]
    handle = handle_with(pod_group("train", 3), *pods)
    plugin = GangScheduling(None, handle)
    waiting = run_permit(plugin, pod=pods[0], node_name="n0", handle=handle)
    await handle.clock.advance(299)
    assert waiting.is_waiting
    await handle.clock.advance(1)
    status = waiting.ended.result()
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == "rejected due to timeout after waiting 5m0s at plugin GangScheduling"


def test_queueing_hints_follow_the_group() -> None:
    plugin = GangScheduling(None, handle_with(pod_group("train", 2)))
    pod_hint, group_hint = (entry.hint for entry in plugin.events_to_register())
    assert pod_hint is not None and group_hint is not None
    me = gang_pod("a")
    assert pod_hint(me, None, gang_pod("b")).name == "QUEUE"
    assert pod_hint(me, None, gang_pod("c", group="other")).name == "SKIP"
    assert group_hint(me, None, pod_group("train", 2)).name == "QUEUE"
    assert group_hint(me, None, pod_group("other", 2)).name == "SKIP"
