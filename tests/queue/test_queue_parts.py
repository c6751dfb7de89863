"""The queue's building blocks: the keyed heap, event labels, pod update events."""

from __future__ import annotations

import dataclasses
import random

import pytest

from scheduler.api import Pod, Resource, Toleration
from scheduler.framework import ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.interface import ASSIGNED_POD, NODE, UNSCHEDULED_POD, WILDCARD
from scheduler.queue import ProfilesPolicy, event_label, pod_update_events
from scheduler.queue.heap import KeyedHeap
from scheduler.queue.in_flight import InFlight
from scheduler.testing import pod_dict


def test_keyed_heap_matches_a_sorted_model_under_random_pushes_updates_and_removals():
    rng = random.Random(7)
    heap: KeyedHeap[str] = KeyedHeap()
    model: dict[str, int] = {}
    for step in range(3000):
        op = rng.random()
        uid = f"u{rng.randrange(50)}"
        if op < 0.5:
            key = rng.randrange(20)
            heap.push(uid, key, f"{uid}@{step}")
            model[uid] = key
        elif op < 0.7:
            assert (heap.remove(uid) is not None) == (model.pop(uid, None) is not None)
        else:
            item = heap.pop()
            if not model:
                assert item is None
                continue
            smallest = min(model.values())
            popped_uid = item.split("@")[0]
            assert model.pop(popped_uid) == smallest
        assert len(heap) == len(model)
        assert all(uid in heap for uid in model)


def test_keyed_heap_pops_equal_keys_in_insertion_order_and_peeks_without_removing():
    heap: KeyedHeap[str] = KeyedHeap()
    for name in "cab":
        heap.push(name, 1, name)
    heap.push("a", 1, "a2")  # an update goes behind the others with the same key
    assert heap.peek() == "c"
    assert [heap.pop() for _ in range(3)] == ["c", "b", "a2"]
    assert heap.peek() is None and heap.pop() is None


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ClusterEvent(NODE, ActionType.ADD), "NodeAdd"),
        (ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT), "NodeUpdateNodeTaint"),
        (ClusterEvent(ASSIGNED_POD, ActionType.DELETE), "AssignedPodDelete"),
        (ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE), "UnschedulablePodUpdate"),
        (
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATIONS),
            "UnschedulablePodUpdatePodToleration",
        ),
        (ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout"), "UnschedulableTimeout"),
        (ClusterEvent(NODE, ActionType.ADD | ActionType.DELETE), "NodeAdd|Delete"),
    ],
)
def test_event_labels_follow_upstream_spelling(event, label):
    assert event_label(event) == label


BASE = Pod(
    uid="u",
    namespace="ns",
    name="p",
    labels={"app": "a"},
    requests=Resource(milli_cpu=500, memory=100),
    scheduling_gates=("g",),
)


@pytest.mark.parametrize(
    ("change", "actions"),
    [
        ({"labels": {"app": "b"}}, [ActionType.UPDATE_POD_LABEL]),
        ({"requests": Resource(milli_cpu=250, memory=100)}, [ActionType.UPDATE_POD_SCALE_DOWN]),
        ({"requests": Resource(milli_cpu=900, memory=100)}, [ActionType.UPDATE_OTHER]),
        ({"scheduling_gates": ()}, [ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED]),
        ({"tolerations": (Toleration("k", "Exists", "", ""),)}, [ActionType.UPDATE_POD_TOLERATIONS]),
        ({"annotations": {"x": "y"}}, [ActionType.UPDATE_OTHER]),
        ({"labels": {}, "scheduling_gates": ()},
         [ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED]),
    ],
    ids=["labels", "scale down", "scale up", "gates removed", "toleration added", "other", "two changes"],
)  # fmt: skip
def test_pod_updates_are_classified_like_upstream(change, actions):
    new = dataclasses.replace(BASE, **change)
    assert pod_update_events(BASE, new) == [ClusterEvent(UNSCHEDULED_POD, a) for a in actions]
    bound = dataclasses.replace(new, node_name="n1")
    assert {e.resource for e in pod_update_events(BASE, bound)} == {ASSIGNED_POD}


def test_in_flight_keeps_events_only_while_an_older_pod_needs_them():
    flight = InFlight()
    event = ClusterEvent(NODE, ActionType.ADD)
    assert not flight.record(event, None, "before")  # nobody in flight: dropped
    flight.start("a")
    flight.record(event, None, "e1")
    flight.start("b")
    flight.record(event, None, "e2")
    assert [new for _, _, new, _ in flight.events_since_start("a")] == ["e1", "e2"]
    assert [new for _, _, new, _ in flight.events_since_start("b")] == ["e2"]
    flight.finish("a")
    assert [new for _, _, new, _ in flight.events_since_start("b")] == ["e2"]
    flight.finish("b")
    assert len(flight) == 0
    flight.start("c")
    assert flight.events_since_start("c") == []


def _first_occurrences(events: list) -> list:
    """The distinct events in the order they first appear (what a verdict over them reads)."""
    seen: list = []
    for event in events:
        if event not in seen:
            seen.append(event)
    return seen


def test_in_flight_keeps_one_force_activation_per_pod_that_every_pod_in_flight_sees():
    """A repeated force-activation is not kept when an earlier one is visible to every pod in
    flight: each pod still sees the same distinct events in the same first order as with every
    repeat kept (the verdicts read the best over them, the first to reach it naming it)."""
    rng = random.Random(11)
    kept, every = InFlight(), InFlight()
    activation = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")
    node_add = ClusterEvent(NODE, ActionType.ADD)
    pods = {uid: Pod.from_dict(pod_dict(uid, uid=uid)) for uid in ("a", "b", "c", "d")}
    flying: set[str] = set()
    repeats = 0
    for _ in range(3000):
        uid = rng.choice(sorted(pods))
        action = rng.random()
        if action < 0.15 and uid not in flying:
            kept.start(uid)
            every.start(uid)
            flying.add(uid)
        elif action < 0.3 and uid in flying:
            kept.finish(uid)
            every.finish(uid)
            flying.discard(uid)
        elif action < 0.4:
            kept.record(node_add, None, uid)
            every.record(node_add, None, uid)
        else:
            before = len(kept.events_since_start(next(iter(flying)))) if flying else 0
            kept.activated(activation, pods[uid])
            every.record(activation, None, pods[uid])
            repeats += bool(flying) and len(kept.events_since_start(next(iter(flying)))) == before
        for flown in flying:
            assert _first_occurrences(kept.events_since_start(flown)) == _first_occurrences(
                every.events_since_start(flown)
            )
    assert repeats > 100  # repeats were left out, and the comparison above held with them out


class FakeProfile:
    def __init__(self, gate: str) -> None:
        self.gate = gate

    def pre_enqueue(self, pod: Pod):
        return self.gate, None

    def events_to_register(self):
        return {self.gate: [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD))]}


def test_profiles_policy_picks_the_profile_named_by_the_pods_scheduler_name():
    policy = ProfilesPolicy({"pyscheduler": FakeProfile("A"), "other": FakeProfile("B")})
    mine = Pod(uid="1", namespace="ns", name="a", scheduler_name="pyscheduler")
    theirs = Pod(uid="2", namespace="ns", name="b", scheduler_name="other")
    stranger = Pod(uid="3", namespace="ns", name="c", scheduler_name="nobody")
    assert policy.pre_enqueue(mine) == ("A", None)
    assert list(policy.hints(theirs)) == ["B"]
    assert policy.pre_enqueue(stranger) == ("", None)
    assert policy.hints(stranger) == {}
