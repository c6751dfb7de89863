"""Cache accounting: NodeInfo and NodeTable rows always equal a from-scratch recomputation."""

from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest

from scheduler.api import Node, Pod, Resource
from scheduler.cache import Cache, CacheError
from scheduler.framework import NodeInfo, NodeTable
from scheduler.metrics import SchedulerMetrics
from scheduler.testing import make_node, make_pod, required_pod_affinity

# the required (anti-)affinity terms the cache tracks per node
AFFINITY = required_pod_affinity({"app": "x"})
ANTI_AFFINITY = required_pod_affinity({"app": "x"}, anti=True)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def without_zero_scalars(resource: Resource) -> Resource:
    """Removing a pod leaves its extended resources at 0 in the sum; 0 and absent are the same."""
    copy = resource.copy()
    copy.scalar = {name: value for name, value in copy.scalar.items() if value}
    return copy


def assert_matches_recomputation(cache: Cache, expected: dict[str, list[Pod]]) -> None:
    """Every present node's NodeInfo and table row equal ones rebuilt from its node and pods."""
    assert cache.node_count() == len(expected)
    for name, pods in expected.items():
        info = cache.get_node_info(name)
        assert info is not None, name
        fresh = NodeInfo(node=info.node)
        for pod in pods:
            fresh.add_pod(pod)
        assert set(info.pods) == set(fresh.pods), name
        assert without_zero_scalars(info.requested) == without_zero_scalars(fresh.requested), name
        assert info.non_zero_requested == fresh.non_zero_requested, name
        assert info.used_ports == fresh.used_ports, name
        assert info.pvc_ref_counts == fresh.pvc_ref_counts, name
        assert set(info.pods_with_affinity) == set(fresh.pods_with_affinity), name
        assert set(info.pods_with_required_anti_affinity) == set(fresh.pods_with_required_anti_affinity)
        table = NodeTable()
        table.add(fresh)
        live = cache.table
        assert live.valid[info.slot]
        assert live.info(info.slot) is info
        np.testing.assert_array_equal(live.alloc[info.slot], table.alloc[0])
        np.testing.assert_array_equal(live.requested[info.slot], table.requested[0])
        np.testing.assert_array_equal(live.non_zero[info.slot], table.non_zero[0])
        assert live.unschedulable[info.slot] == table.unschedulable[0]
        assert live.has_hard_taints[info.slot] == table.has_hard_taints[0]
        for resource in table.scalar_alloc:
            alloc, requested = live.scalar(resource)
            assert alloc[info.slot] == table.scalar_alloc[resource][0]
            assert requested[info.slot] == table.scalar_requested[resource][0]
    assert int(cache.table.valid.sum()) == len(expected)


# ---------------------------------------------------------------------------- pods and nodes


def test_adding_pods_accounts_requests_ports_claims_and_affinity():
    cache = Cache()
    cache.add_node(make_node("n1"))
    pods = [
        make_pod(
            "a",
            uid="uid-a",
            requests={"cpu": "500m", "memory": "1Gi"},
            host_ports=[(8080, "TCP")],
            node_name="n1",
        ),
        make_pod("b", uid="uid-b", pvcs=["data"], affinity=ANTI_AFFINITY, node_name="n1"),
        make_pod(
            "c", uid="uid-c", requests={"cpu": "1", "example.com/gpu": "1"}, affinity=AFFINITY, node_name="n1"
        ),
    ]
    for pod in pods:
        cache.add_pod(pod)
    assert_matches_recomputation(cache, {"n1": pods})
    assert cache.pod_count() == 3


@pytest.mark.parametrize(
    "removed",
    [["a"], ["b"], ["a", "b"], ["a", "b", "c"]],
    ids=["first", "middle", "two", "all"],
)
def test_removing_pods_gives_back_exactly_what_they_took(removed):
    cache = Cache()
    cache.add_node(make_node("n1"))
    pods = {
        "a": make_pod(
            "a", uid="uid-a", requests={"cpu": "500m"}, host_ports=[(80, "TCP")], pvcs=["x"], node_name="n1"
        ),
        "b": make_pod(
            "b", uid="uid-b", requests={"memory": "1Gi"}, pvcs=["x"], affinity=ANTI_AFFINITY, node_name="n1"
        ),
        "c": make_pod("c", uid="uid-c", requests={"example.com/gpu": "2"}, node_name="n1"),
    }
    for pod in pods.values():
        cache.add_pod(pod)
    for name in removed:
        cache.remove_pod(pods[name])
    assert_matches_recomputation(cache, {"n1": [p for n, p in pods.items() if n not in removed]})


def test_updating_a_pod_replaces_its_accounting():
    cache = Cache()
    cache.add_node(make_node("n1"))
    old = make_pod("a", uid="uid-a", requests={"cpu": "500m"}, host_ports=[(80, "TCP")], node_name="n1")
    new = make_pod(
        "a", uid="uid-a", requests={"cpu": "1", "memory": "2Gi"}, host_ports=[(81, "TCP")], node_name="n1"
    )
    cache.add_pod(old)
    cache.update_pod(old, new)
    assert_matches_recomputation(cache, {"n1": [new]})
    assert cache.get_node_info("n1").pods["uid-a"] is new


def test_updating_a_node_rewrites_its_row_and_keeps_its_pods():
    cache = Cache()
    old = make_node("n1", cpu="2")
    cache.add_node(old)
    pod = make_pod("a", uid="uid-a", requests={"cpu": "1"}, node_name="n1")
    cache.add_pod(pod)
    new = make_node("n1", cpu="8", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}])
    info = cache.update_node(old, new)
    assert info.node is new
    assert cache.table.alloc[info.slot][0] == 8000
    assert cache.table.unschedulable[info.slot]
    assert cache.table.has_hard_taints[info.slot]
    assert_matches_recomputation(cache, {"n1": [pod]})


def test_pods_that_arrive_before_their_node_are_attached_when_it_arrives():
    cache = Cache()
    pod = make_pod("early", uid="uid-early", requests={"cpu": "1"}, node_name="late-node")
    cache.add_pod(pod)
    assert cache.get_node_info("late-node") is None
    assert cache.node_count() == 0
    assert len(cache.snapshot()) == 0
    cache.add_node(make_node("late-node"))
    assert_matches_recomputation(cache, {"late-node": [pod]})
    assert [i.name for i in cache.snapshot().node_infos()] == ["late-node"]


def test_a_deleted_node_leaves_the_table_while_its_pods_can_still_be_deleted():
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    pods = [make_pod(f"p{i}", uid=f"uid-p{i}", requests={"cpu": "100m"}, node_name="n1") for i in range(3)]
    for pod in pods:
        cache.add_pod(pod)
    slot = cache.get_node_info("n1").slot
    cache.remove_node(make_node("n1"))
    assert cache.get_node_info("n1") is None
    assert not cache.table.valid[slot]
    assert [i.name for i in cache.snapshot().node_infos()] == ["n2"]
    assert cache.pod_count() == 3
    for pod in pods:
        cache.remove_pod(pod)
    cache.remove_pod(pods[0])  # a repeated delete is harmless too
    assert cache.pod_count() == 0
    assert cache.dump()["nodes"] == {"n2": {"pods": [], "present": True}}


def test_a_node_that_comes_back_finds_the_pods_still_on_it():
    cache = Cache()
    cache.add_node(make_node("n1"))
    pod = make_pod("a", uid="uid-a", requests={"cpu": "1"}, node_name="n1")
    cache.add_pod(pod)
    cache.remove_node(make_node("n1"))
    cache.add_node(make_node("n1", cpu="16"))
    assert_matches_recomputation(cache, {"n1": [pod]})


def test_table_slots_are_recycled_and_rows_cleared():
    cache = Cache()
    cache.add_node(make_node("n1"))
    slot = cache.get_node_info("n1").slot
    cache.remove_node(make_node("n1"))
    info = cache.add_node(make_node("n2", cpu="1"))
    assert info.slot == slot
    assert cache.table.alloc[slot][0] == 1000


# ---------------------------------------------------------------------------- assume / confirm / forget


def test_an_assumed_pod_counts_on_its_node_until_forgotten():
    cache = Cache()
    cache.add_node(make_node("n1"))
    pod = make_pod("a", uid="uid-a", requests={"cpu": "2"}, node_name="n1")
    cache.assume_pod(pod)
    assert cache.is_assumed("uid-a")
    assert cache.assumed_count() == 1
    assert_matches_recomputation(cache, {"n1": [pod]})
    cache.forget_pod(pod)
    assert not cache.is_assumed("uid-a")
    assert cache.pod_count() == 0
    assert_matches_recomputation(cache, {"n1": []})


def test_the_informer_confirms_an_assumed_pod():
    cache = Cache()
    cache.add_node(make_node("n1"))
    assumed = make_pod("a", uid="uid-a", requests={"cpu": "2"}, node_name="n1")
    cache.assume_pod(assumed)
    cache.finish_binding(assumed)
    bound = make_pod("a", uid="uid-a", requests={"cpu": "2"}, node_name="n1")
    cache.add_pod(bound)
    assert not cache.is_assumed("uid-a")
    assert cache.get_node_info("n1").pods["uid-a"] is bound
    assert_matches_recomputation(cache, {"n1": [bound]})
    # A confirmed pod is not forgotten by a late binding failure.
    cache.forget_pod(assumed)
    assert_matches_recomputation(cache, {"n1": [bound]})


def test_confirmation_on_another_node_moves_the_pod():
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    cache.assume_pod(make_pod("a", uid="uid-a", requests={"cpu": "2"}, node_name="n1"))
    bound = make_pod("a", uid="uid-a", requests={"cpu": "2"}, node_name="n2")
    cache.add_pod(bound)
    assert_matches_recomputation(cache, {"n1": [], "n2": [bound]})


def test_an_update_event_can_confirm_an_assumed_pod():
    cache = Cache()
    cache.add_node(make_node("n1"))
    assumed = make_pod("a", uid="uid-a", requests={"cpu": "1"}, node_name="n1")
    cache.assume_pod(assumed)
    cache.update_pod(make_pod("a", uid="uid-a", requests={"cpu": "1"}), assumed)
    assert not cache.is_assumed("uid-a")
    assert cache.pod_count() == 1


@pytest.mark.parametrize(
    ("finish", "elapsed", "expires"),
    [
        (True, 29.0, False),
        (True, 31.0, True),
        (False, 3600.0, False),  # binding still running: never expires
    ],
    ids=["before the ttl", "after the ttl", "binding not finished"],
)
def test_assumed_pods_expire_only_after_binding_finished_and_the_ttl(finish, elapsed, expires):
    clock = FakeClock()
    cache = Cache(assumed_pod_ttl=30.0, clock=clock)
    cache.add_node(make_node("n1"))
    pod = make_pod("a", uid="uid-a", requests={"cpu": "1"}, node_name="n1")
    cache.assume_pod(pod)
    if finish:
        cache.finish_binding(pod)
    clock.now += elapsed
    expired = cache.cleanup_expired_assumed_pods()
    assert [p.uid for p in expired] == (["uid-a"] if expires else [])
    assert cache.is_assumed("uid-a") is not expires
    assert_matches_recomputation(cache, {"n1": [] if expires else [pod]})


def test_a_confirmed_pod_never_expires():
    clock = FakeClock()
    cache = Cache(assumed_pod_ttl=30.0, clock=clock)
    cache.add_node(make_node("n1"))
    pod = make_pod("a", uid="uid-a", node_name="n1")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    cache.add_pod(pod)
    clock.now += 3600
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.pod_count() == 1


@pytest.mark.parametrize(
    "pod",
    [make_pod("unassigned", uid="uid-unassigned"), make_pod("known", uid="uid-known", node_name="n1")],
    ids=["without a node", "already in the cache"],
)
def test_assuming_an_impossible_pod_is_refused(pod):
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("known", uid="uid-known", node_name="n1"))
    with pytest.raises(CacheError):
        cache.assume_pod(pod)


# ---------------------------------------------------------------------------- randomized model check


def test_random_event_sequences_keep_the_cache_equal_to_a_model():
    rng = random.Random(20240601)
    cache = Cache()
    nodes: dict[str, Node] = {}
    placed: dict[str, Pod] = {}  # uid -> pod (bound or assumed)
    assumed: set[str] = set()
    counter = 0
    for _ in range(600):
        op = rng.choice(["node+", "node+", "node-", "pod+", "pod+", "pod-", "assume", "forget", "confirm"])
        if op == "node+":
            name = f"n{rng.randrange(6)}"
            node = make_node(name, cpu=str(rng.randrange(1, 9)), zone=rng.choice(["a", "b", ""]))
            if name in nodes:
                cache.update_node(nodes[name], node)
            else:
                cache.add_node(node)
            nodes[name] = node
        elif op == "node-" and nodes:
            name = rng.choice(sorted(nodes))
            cache.remove_node(nodes.pop(name))
        elif op in ("pod+", "assume"):
            counter += 1
            cpu = f"{rng.randrange(1, 500)}m"
            # Unique: NodeInfo (like upstream) keeps a set of used ports, not a count.
            port = rng.choice([0, 0, 1000 + counter])
            claim = rng.choice(["", "c1"])
            anti_affinity = rng.random() < 0.2
            pod = make_pod(
                f"p{counter}",
                uid=f"uid-p{counter}",
                requests={"cpu": cpu},
                host_ports=[(port, "TCP")] if port else (),
                pvcs=[claim] if claim else (),
                affinity=ANTI_AFFINITY if anti_affinity else None,
                node_name=f"n{rng.randrange(7)}",  # n6 never exists: a pod whose node never arrives
            )
            if op == "pod+":
                cache.add_pod(pod)
            else:
                cache.assume_pod(pod)
                assumed.add(pod.uid)
            placed[pod.uid] = pod
        elif op == "pod-" and placed:
            uid = rng.choice(sorted(placed))
            cache.remove_pod(placed.pop(uid))
            assumed.discard(uid)
        elif op == "forget" and assumed:
            uid = rng.choice(sorted(assumed))
            cache.forget_pod(placed.pop(uid))
            assumed.discard(uid)
        elif op == "confirm" and assumed:
            uid = rng.choice(sorted(assumed))
            bound = placed[uid].on_node(f"n{rng.randrange(6)}")
            cache.add_pod(bound)
            placed[uid] = bound
            assumed.discard(uid)
        expected = {name: [p for p in placed.values() if p.node_name == name] for name in nodes}
        assert_matches_recomputation(cache, expected)
        assert cache.pod_count() == len(placed)
        assert cache.assumed_count() == len(assumed)
        snap = cache.snapshot()
        assert sorted(i.name for i in snap.node_infos()) == sorted(nodes)
        assert [cache.table.info(int(s)).name for s in snap.order] == [i.name for i in snap.node_infos()]
        assert {i.name for i in snap.have_pods_with_required_anti_affinity()} == {
            p.node_name for p in placed.values() if p.affinity and p.node_name in nodes
        }


# ---------------------------------------------------------------------------- metrics


def test_cache_size_gauges_follow_the_contents():
    metrics = SchedulerMetrics()
    registry = metrics.registry
    cache = Cache(metrics=metrics)
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("a", uid="uid-a", node_name="n1"))
    cache.assume_pod(make_pod("b", uid="uid-b", node_name="n1"))

    def value(kind: str) -> float:
        return registry.get_sample_value("scheduler_cache_size", {"type": kind})

    assert (value("nodes"), value("pods"), value("assumed_pods")) == (1, 2, 1)
    cache.remove_node(make_node("n1"))
    assert (value("nodes"), value("pods"), value("assumed_pods")) == (0, 2, 1)


# ---------------------------------------------------------------------------- holding


async def test_a_second_holder_waits_for_the_first_and_sees_its_deferred_changes():
    cache = Cache()
    cache.add_node(make_node("n1"))
    order: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        await cache.until_released()
        with cache.held():
            order.append("first holds")
            await release.wait()  # e.g. an extender answering
            cache.add_node(make_node("n2"))  # an informer change meanwhile: deferred
            assert cache.get_node_info("n2") is None

    async def second() -> None:
        await cache.until_released()
        with cache.held():
            order.append(f"second holds, nodes: {cache.node_count()}")

    tasks = [asyncio.create_task(first()), asyncio.create_task(second())]
    await asyncio.sleep(0)
    assert order == ["first holds"]  # the second waits instead of failing with CacheError
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["first holds", "second holds, nodes: 2"]


async def test_until_released_does_not_yield_when_nobody_holds_the_cache():
    cache = Cache()
    waiting = cache.until_released()
    with pytest.raises(StopIteration):  # finished at its first step: nothing in between can hold it
        waiting.send(None)
