"""Members held before the queue until the PodGroup and ``minCount`` members exist; a group whose
members differ; two gangs competing for the same room."""

from __future__ import annotations

import asyncio

from tests.support.cluster import eventually
from tests.support.gang import (
    NewCluster,
    StartScheduler,
    group_condition,
    member,
    node_of,
    pod_condition,
    pod_group,
)


async def test_min_count_is_reached_by_a_later_pod(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=3, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    await sim.create("podgroups", pod_group("job", 3))
    await sim.create("pods", member("job-0", "job", cpu="1"))
    await sim.create("pods", member("job-1", "job", cpu="1"))
    # held at PreEnqueue: gated in the queue, no PodScheduled condition written
    await eventually(lambda: app.queue.pending()["gated"] == 2)
    await asyncio.sleep(0.3)  # give a wrong write the time to land before checking there is none
    assert pod_condition(sim, "job-0") is None and pod_condition(sim, "job-1") is None
    assert not node_of(sim, "job-0") and not node_of(sim, "job-1")

    await sim.create("pods", member("job-2", "job", cpu="1"))
    names = ("job-0", "job-1", "job-2")
    await eventually(lambda: all(node_of(sim, name) for name in names))
    await eventually(lambda: (group_condition(sim, "job") or {}).get("reason") == "Scheduled")


async def test_members_wait_for_their_pod_group_to_exist(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=2, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    await sim.create("pods", member("early-0", "early", cpu="1"))
    await sim.create("pods", member("early-1", "early", cpu="1"))
    await eventually(lambda: app.queue.pending()["gated"] == 2)
    await sim.create("podgroups", pod_group("early", 2))
    await eventually(lambda: node_of(sim, "early-0") and node_of(sim, "early-1"))


async def test_a_group_whose_pods_differ_is_placed_whole(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    """A 3-cpu leader and workers of 2, 2 and 1 cpu on two 4-cpu nodes, tried in priority order
    (the largest first): the group fits only packed exactly, and is placed whole."""
    sim = await new_cluster(nodes=2, bookmark_interval=0.5)
    await start_scheduler(sim)
    await sim.create("podgroups", pod_group("mixed", 4))
    await sim.create("pods", member("mixed-leader", "mixed", cpu="3", priority=10))
    for i, (cpu, priority) in enumerate((("2", 5), ("2", 5), ("1", 1))):
        await sim.create("pods", member(f"mixed-worker-{i}", "mixed", cpu=cpu, priority=priority))
    names = ("mixed-leader", "mixed-worker-0", "mixed-worker-1", "mixed-worker-2")
    await eventually(lambda: all(node_of(sim, name) for name in names))
    assert node_of(sim, "mixed-worker-2") == node_of(sim, "mixed-leader")
    assert node_of(sim, "mixed-worker-0") == node_of(sim, "mixed-worker-1") != node_of(sim, "mixed-leader")
    await eventually(lambda: (group_condition(sim, "mixed") or {}).get("reason") == "Scheduled")


async def test_two_gangs_that_fit_alone_but_not_together(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    """Two gangs of 3 x 3-cpu pods on four 4-cpu nodes: one is bound whole, the other not at all."""
    sim = await new_cluster(nodes=4, bookmark_interval=0.5)
    await start_scheduler(sim)
    for gang in ("blue", "green"):
        await sim.create("podgroups", pod_group(gang, 3))
    for i in range(3):
        for gang in ("blue", "green"):  # interleaved, so neither gang arrives first whole
            await sim.create("pods", member(f"{gang}-{i}", gang))

    def bound(gang: str) -> int:
        return sum(bool(node_of(sim, f"{gang}-{i}")) for i in range(3))

    await eventually(lambda: {bound("blue"), bound("green")} == {0, 3})
    waiting = "blue" if bound("blue") == 0 else "green"
    await eventually(lambda: (group_condition(sim, waiting) or {}).get("reason") == "Unschedulable")
    await asyncio.sleep(1.5)  # several retries of the waiting gang (backoff 0.2-1 s)
    assert {bound("blue"), bound("green")} == {0, 3}
    assert all(pod_condition(sim, f"{waiting}-{i}") for i in range(3))
