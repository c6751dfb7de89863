"""TopologyAwareWorkloadScheduling: a group constrained to one domain of a node label goes into one
domain, or not at all."""

from __future__ import annotations

from tests.support.cluster import eventually
from tests.support.gang import (
    TOPOLOGY_GATES,
    NewCluster,
    StartScheduler,
    group_condition,
    member,
    node_of,
    pod_group,
)

ZONE = "topology.kubernetes.io/zone"
TWO_ZONES = {
    "nodeGroups": [
        {"namePrefix": "a-", "count": 2, "labels": {ZONE: "a"}},
        {"namePrefix": "b-", "count": 2, "labels": {ZONE: "b"}},
    ]
}


def zone_of(node: str) -> str:
    return node.split("-", 1)[0]


async def test_a_topology_constrained_group_lands_in_one_zone(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(node_template=TWO_ZONES, bookmark_interval=0.5)
    await start_scheduler(sim, features=TOPOLOGY_GATES)
    await sim.create("podgroups", pod_group("ring", 3, topology_key=ZONE))
    names = [f"ring-{i}" for i in range(3)]
    for name in names:
        await sim.create("pods", member(name, "ring", cpu="2"))
    await eventually(lambda: all(node_of(sim, name) for name in names))
    assert len({zone_of(node_of(sim, name)) for name in names}) == 1
    await eventually(lambda: (group_condition(sim, "ring") or {}).get("reason") == "Scheduled")


async def test_a_group_that_fits_only_across_zones_waits(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(node_template=TWO_ZONES, bookmark_interval=0.5)
    await start_scheduler(sim, features=TOPOLOGY_GATES)
    await sim.create("podgroups", pod_group("wide", 3, topology_key=ZONE))
    names = [f"wide-{i}" for i in range(3)]
    for name in names:
        await sim.create("pods", member(name, "wide", cpu="3"))  # two per zone at most
    await eventually(lambda: group_condition(sim, "wide") is not None)
    condition = group_condition(sim, "wide")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert (
        condition["message"]
        == "0/2 placements are available, first placement status: pod group is unschedulable"
    )
    assert not any(node_of(sim, name) for name in names)


async def test_a_later_member_joins_the_domain_its_group_is_in(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(node_template=TWO_ZONES, bookmark_interval=0.5)
    await start_scheduler(sim, features=TOPOLOGY_GATES)
    await sim.create("podgroups", pod_group("grow", 2, topology_key=ZONE))
    for i in range(2):
        await sim.create("pods", member(f"grow-{i}", "grow", cpu="1"))
    await eventually(lambda: node_of(sim, "grow-0") and node_of(sim, "grow-1"))
    zone = zone_of(node_of(sim, "grow-0"))
    for i in range(2, 5):  # the least allocated nodes are in the other zone, the group's are not
        await sim.create("pods", member(f"grow-{i}", "grow", cpu="1"))
        await eventually(lambda i=i: node_of(sim, f"grow-{i}"))
        assert zone_of(node_of(sim, f"grow-{i}")) == zone
