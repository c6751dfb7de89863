"""A gang that cannot fully fit reserves nothing; once it fits, it is bound at once (issue 15's
recordings from a v1.36.2 control plane, both gates on)."""

from __future__ import annotations

from scheduler.app import SchedulerApp
from simcluster import SimCluster
from tests.support.cluster import eventually
from tests.support.gang import (
    NewCluster,
    StartScheduler,
    group_condition,
    member,
    node,
    node_of,
    pod_condition,
    pod_group,
)

FIT_MESSAGE = (
    "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are "
    "available: 2 No preemption victims found for incoming pod."
)
GANG_MESSAGE = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more "
    "plugins asked to wait and no plugin rejected pod"
)
NAMES = ("train-0", "train-1", "train-2", "train-3")


async def test_a_gang_that_does_not_fit_binds_nothing_then_binds_whole(
    new_cluster: NewCluster,
    start_scheduler: StartScheduler,
) -> None:
    sim = await new_cluster(nodes=2, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    await sim.create("podgroups", pod_group("train", 4))
    for name in NAMES:
        await sim.create("pods", member(name, "train"))

    def reported() -> bool:
        return all(pod_condition(sim, name) for name in NAMES) and group_condition(sim, "train") is not None

    await eventually(reported)
    assert not any(node_of(sim, name) for name in NAMES)
    messages = sorted(pod_condition(sim, name)["message"] for name in NAMES)  # type: ignore[index]
    assert messages == sorted([FIT_MESSAGE, FIT_MESSAGE, GANG_MESSAGE, GANG_MESSAGE])
    assert {pod_condition(sim, name)["reason"] for name in NAMES} == {"Unschedulable"}  # type: ignore[index]
    cond = group_condition(sim, "train")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        "pod group is unschedulable",
    )
    assert cond["observedGeneration"] == 1
    assert attempts(app, "unschedulable") >= 1

    await sim.create("nodes", node("extra-0"))
    await sim.create("nodes", node("extra-1"))
    await eventually(lambda: all(node_of(sim, name) for name in NAMES))
    assert len({node_of(sim, name) for name in NAMES}) == 4
    await eventually(lambda: (group_condition(sim, "train") or {}).get("status") == "True")
    cond = group_condition(sim, "train")
    assert cond is not None and cond["reason"] == "Scheduled"
    assert attempts(app, "scheduled") == 1
    duration = app.metrics.registry.get_sample_value(
        "scheduler_podgroup_scheduling_algorithm_duration_seconds_count", {}
    )
    assert duration is not None and duration >= 2


def attempts(app: SchedulerApp, result: str) -> float:
    labels = {"result": result, "profile": "pyscheduler"}
    return app.metrics.registry.get_sample_value("scheduler_podgroup_schedule_attempts_total", labels) or 0.0


async def test_a_gang_too_big_for_its_nodes_is_bound_once_two_nodes_arrive_in_one_request(
    new_cluster: NewCluster,
    start_scheduler: StartScheduler,
) -> None:
    """Twenty runs in a row: four 3-cpu members on two 4-cpu nodes, then two more nodes created
    together, while the gang is still being tried (even runs) or once every member was reported
    (odd runs): bound whole each time."""
    sim = await new_cluster(nodes=0, bookmark_interval=0.5)
    await start_scheduler(sim)
    for run in range(20):
        names = [f"gang-{run}-{i}" for i in range(4)]
        for i in range(2):
            await sim.create("nodes", node(f"n-{run}-{i}", labels={"run": str(run)}))
        await sim.create("podgroups", pod_group(f"train-{run}", 4))
        for name in names:
            await sim.create("pods", member(name, f"train-{run}", nodeSelector={"run": str(run)}))
        await until_reported(sim, names, every=run % 2 == 1)
        assert [name for name in names if node_of(sim, name)] == []
        for i in (2, 3):  # one request: no event is handled between the two
            await sim.create("nodes", node(f"n-{run}-{i}", labels={"run": str(run)}))
        await until_bound(sim, names)


async def until_reported(sim: SimCluster, names: list[str], *, every: bool) -> None:
    some_or_all = all if every else any
    await eventually(lambda: some_or_all(pod_condition(sim, name) for name in names))


async def until_bound(sim: SimCluster, names: list[str]) -> None:
    await eventually(lambda: all(node_of(sim, name) for name in names), timeout=10)
