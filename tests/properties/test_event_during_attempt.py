"""An event that arrives while pods are being tried is never lost: for every point of a gang's (or
a pod's) attempts at which the event can reach the scheduler, the pods it helps are placed.

On virtual time with the in-memory API (``tests.support.world``): the scheduler runs cycle by
cycle, and the watch event under test is delivered after the k-th cycle, for every k until
nothing is left to try.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.config import default_config
from scheduler.testing.dra import claim, device, device_class, resource_slice
from tests.support.world import (
    COSCHEDULING_GROUPS,
    GANG_GATES,
    WORKLOAD_GROUPS,
    World,
    coscheduling_config,
    coscheduling_group,
    coscheduling_member,
    node,
    pod,
    workload_group,
    workload_member,
)

GANG = [f"gang-{i}" for i in range(4)]


def coscheduling_world(seed: int) -> World:
    world = World(coscheduling_config(), seed=seed)
    world.cluster.create_object(COSCHEDULING_GROUPS, coscheduling_group("train", 4, 60))
    for name in GANG:
        world.cluster.create_pod(coscheduling_member(name, "train", 3))
    return world


def workload_world(seed: int) -> World:
    world = World(default_config(features=GANG_GATES), features=GANG_GATES, seed=seed)
    world.cluster.create_object(WORKLOAD_GROUPS, workload_group("train", 4))
    for name in GANG:
        world.cluster.create_pod(workload_member(name, "train", 3))
    return world


def bound(world: World, names: list[str]) -> list[str]:
    return sorted(p.name for p in world.bound() if p.name in names)


async def add_two_nodes_after(world: World, cycles: int) -> None:
    """Two 4-cpu nodes, then four 3-cpu members; ``cycles`` scheduling cycles later, two more
    nodes in one watch read (one ``kubectl create -f`` of two documents)."""
    for name in ("n0", "n1"):
        world.cluster.create_node(node(name, 4))
    world.cluster.deliver()
    await world.schedule(cycles)
    world.cluster.create_node(node("n2", 4))
    world.cluster.create_node(node("n3", 4))
    world.cluster.deliver()


@pytest.mark.parametrize(
    "make_world", [coscheduling_world, workload_world], ids=["Coscheduling", "Workload API"]
)
@pytest.mark.parametrize("seed", range(5))
def test_two_nodes_arriving_at_any_point_of_a_gangs_attempts_place_it_whole(
    make_world: Callable[[int], World], seed: int
) -> None:
    """Five seeds (the scheduler's tie-breaks), and every point of the attempts from before the
    first cycle to after the last."""
    for cycles in range(12):
        world = make_world(seed)
        try:
            world.run(add_two_nodes_after(world, cycles))
            world.run(world.quiesce(horizon=15.0, budget=200))
            assert bound(world, GANG) == GANG, f"after {cycles} cycles"
        finally:
            world.close()


def test_a_node_the_scheduler_had_not_seen_when_it_tried_a_pod_places_it_once_its_event_arrives() -> None:
    world = World(default_config())
    try:
        world.cluster.create_node(node("small", 1))
        web = world.cluster.create_pod(pod("web", 2))
        world.cluster.deliver()
        world.cluster.create_node(node("big", 4))  # in the API, its event on the way
        world.run(world.schedule(1))
        assert world.queue.position(web.uid) == "unschedulable"
        world.cluster.deliver()  # the node and web's PodScheduled=False in one read
        world.run(world.schedule(5))  # no time passes: the idle loop pops it from backoffQ
        world.cluster.deliver()
        assert [p.node_name for p in world.bound()] == ["big"]
    finally:
        world.close()


def test_a_preemptor_is_bound_when_its_victims_deletion_arrives_with_its_own_nomination() -> None:
    world = World(default_config())
    try:
        world.cluster.create_node(node("n", 2))
        world.cluster.create_pod(pod("victim", 2), node="n")
        world.cluster.deliver()
        urgent = world.cluster.create_pod(pod("urgent", 2, priority=10))
        world.cluster.deliver()
        world.run(world.schedule(1))  # preempts: the victim's deletion is sent, its event held
        assert "default/victim" not in world.cluster.pods
        assert world.queue.position(urgent.uid) == "unschedulable"
        world.cluster.deliver()  # the victim's status and deletion, urgent's nomination: one read
        world.run(world.schedule(5))
        world.cluster.deliver()
        assert [(p.name, p.node_name) for p in world.bound()] == [("urgent", "n")]
    finally:
        world.close()


def test_a_pod_waiting_for_a_device_is_bound_once_the_slice_that_offers_it_arrives() -> None:
    world = World(default_config())
    try:
        world.cluster.create_node(node("gpu-node", 4))
        world.cluster.create_object("deviceclasses", device_class("gpu"))
        world.cluster.create_object("resourceclaims", claim("train-gpu"))
        spec = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "train-gpu"}]}
        train = world.cluster.create_pod(pod("train", 1, **spec))
        world.cluster.deliver()
        world.run(world.schedule(1))
        assert world.queue.position(train.uid) == "unschedulable"
        world.cluster.create_object("resourceslices", resource_slice("s", [device("gpu-0")], node="gpu-node"))
        world.cluster.deliver()  # the slice, with train's PodScheduled=False, in one read
        world.run(world.schedule(5))
        world.cluster.deliver()
        assert [p.node_name for p in world.bound()] == ["gpu-node"]
        allocation = world.cluster.objects["resourceclaims"]["default/train-gpu"]["status"]["allocation"]
        assert [r["device"] for r in allocation["devices"]["results"]] == ["gpu-0"]
    finally:
        world.close()
