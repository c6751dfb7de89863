"""Who belongs to which pod group, as the pod informer's events tell it."""

from __future__ import annotations

import random
from collections.abc import Set
from typing import Any

import pytest

from scheduler.api import MalformedObject, Pod
from scheduler.cache.pod_groups import UNSCHEDULED_POD_ADD, PodGroupMembers
from scheduler.testing import pod_dict


def member(name: str, group: str = "g", node: str = "") -> Pod:
    obj = pod_dict(name, uid=f"uid-{name}", node_name=node)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return Pod.from_dict(obj)


class Assumed:
    """The cache's assumed pods, as a dict uid -> node."""

    def __init__(self, nodes: dict[str, str] | None = None) -> None:
        self.nodes = nodes or {}

    def assumed_uids(self) -> Set[str]:
        return self.nodes.keys()

    def assumed_node(self, uid: str) -> str:
        return self.nodes.get(uid, "")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def on_add(self, pod: Pod) -> None:
        self.calls.append(("add", pod.name))

    def on_update(self, old: Pod, new: Pod) -> None:
        self.calls.append(("update", new.name))

    def on_delete(self, pod: Pod) -> None:
        self.calls.append(("delete", pod.name))

    def on_cluster_event(self, event: Any, old: Any, new: Any) -> None:
        self.calls.append(("event", event.label))


def test_the_pod_names_its_group_and_a_bad_one_is_reported_with_its_field() -> None:
    assert member("a").pod_group == "g"
    obj = pod_dict("bad")
    obj["spec"]["schedulingGroup"] = "g"
    with pytest.raises(MalformedObject, match=r"spec\.schedulingGroup: must be an object"):
        Pod.from_dict(obj)


def test_members_are_counted_placed_when_bound_or_assumed() -> None:
    members = PodGroupMembers(Assumed({"uid-b": "node-1"}))
    for pod in (member("a", node="node-0"), member("b"), member("c"), member("other", group="h")):
        members.add(pod)
    group = members.get("default", "g")
    assert group is not None and group.all_count == 3
    assert {p.name: p.node_name for p in group.scheduled_pods()} == {"a": "node-0", "b": "node-1"}
    assert [p.name for p in group.unscheduled_pods()] == ["c"]
    assert len(group.scheduled_uids()) == 2
    members.remove(member("c"))
    assert group.all_count == 2


async def test_member_events_come_first_and_wake_held_gangs() -> None:
    members = PodGroupMembers()
    inner, queue = Recorder(), Recorder()
    handler = members.handler(inner, queue, wake_gangs=True)
    handler.on_add(member("a"))
    handler.on_add(Pod.from_dict(pod_dict("plain")))
    assert inner.calls == [("add", "a"), ("add", "plain")]
    assert queue.calls == [("event", UNSCHEDULED_POD_ADD.label)]  # only for a pending member
    bound = member("a", node="node-0")
    handler.on_update(member("a"), bound)
    group = members.get("default", "g")
    assert group is not None and [p.node_name for p in group.scheduled_pods()] == ["node-0"]
    handler.on_delete(bound)
    assert members.get("default", "g") is None


def test_the_counts_kept_from_the_events_equal_a_recount_from_the_pods() -> None:
    """The bound uids a group keeps as pods come, change and go (and the cache's assumed ones)
    give what a scan of every member would."""
    rng = random.Random(7)
    assumed = Assumed()
    members = PodGroupMembers(assumed)
    seen: dict[str, Pod] = {}  # the informer's store: uid -> pod
    for _ in range(2000):
        name, group = f"p{rng.randrange(30)}", rng.choice(("g", "h"))
        uid = f"uid-{name}"
        action = rng.random()
        if action < 0.5:
            # a pod keeps its group (the field is immutable); it may be bound meanwhile
            pod = member(name, seen[uid].pod_group if uid in seen else group, rng.choice(("", "n1", "n2")))
            members.add(pod)
            seen[uid] = pod
        elif action < 0.7 and uid in seen:
            members.remove(seen.pop(uid))
        elif action < 0.85:
            assumed.nodes[uid] = "n3"
        else:
            assumed.nodes.pop(uid, None)
        for key in ("g", "h"):
            state = members.get("default", key)
            pods = [p for p in seen.values() if p.pod_group == key]
            placed = {p.uid for p in pods if p.node_name or p.uid in assumed.nodes}
            if state is None:
                assert not pods
                continue
            assert state.scheduled_uids() == placed
            assert [p.uid for p in state.unscheduled_pods()] == [p.uid for p in pods if p.uid not in placed]
            assert {p.uid for p in state.scheduled_pods()} == placed
