"""Coscheduling's pod-group metrics: upstream's scheduler_podgroup_* names (as the Workload API's
cycle reports them) and pyscheduler_pending_podgroups."""

from __future__ import annotations

from scheduler.app import SchedulerApp
from simcluster import SimCluster
from tests.support.cluster import eventually
from tests.support.coscheduling import PODGROUPS, bound, member, podgroup


def _sample(app: SchedulerApp, name: str, **labels: str) -> float:
    return app.metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_gang_placed_whole_counts_one_scheduled_attempt(sim: SimCluster, scheduler) -> None:
    names = [f"a-{i}" for i in range(4)]
    app = await scheduler(sim)
    assert _sample(app, "pyscheduler_pending_podgroups", profile="pyscheduler") == 0
    await sim.create(PODGROUPS, podgroup("a", 4))
    for name in names:
        await sim.create("pods", member(name, "a"))
    await eventually(lambda: bound(sim, names) == names)
    labels = {"result": "scheduled", "profile": "pyscheduler"}
    assert _sample(app, "scheduler_podgroup_schedule_attempts_total", **labels) == 1
    assert _sample(app, "scheduler_podgroup_scheduling_attempt_duration_seconds_count", **labels) == 1
    assert _sample(app, "pyscheduler_pending_podgroups", profile="pyscheduler") == 0


async def test_a_gang_that_cannot_fit_counts_unschedulable_attempts_and_stays_pending(
    sim: SimCluster, scheduler
) -> None:
    app = await scheduler(sim, podGroupBackoffSeconds=60)
    await sim.create(PODGROUPS, podgroup("a", 5))  # five 3-CPU pods, room for four
    for i in range(5):
        await sim.create("pods", member(f"a-{i}", "a"))
    labels = {"result": "unschedulable", "profile": "pyscheduler"}
    await eventually(lambda: _sample(app, "scheduler_podgroup_schedule_attempts_total", **labels) >= 1)
    assert (
        _sample(app, "scheduler_podgroup_schedule_attempts_total", result="scheduled", profile="pyscheduler")
        == 0
    )
    assert _sample(app, "pyscheduler_pending_podgroups", profile="pyscheduler") == 1
