"""A gang that fits only by preempting lower-priority pods: the group waits for the preemption as
a whole (PodGroupScheduled False, waiting for preemption), then is bound whole."""

from __future__ import annotations

from tests.gang.conftest import NewCluster, StartScheduler, group_condition, member, node_of, pod_group
from tests.integration.conftest import eventually, pod_manifest


async def test_a_gang_preempts_then_binds_whole(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=2, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))
    for i, node in enumerate(nodes):  # each node is taken by a low-priority pod
        await sim.create("pods", pod_manifest(f"filler-{i}", cpu="3", nodeName=node, priority=0))
    await sim.create("podgroups", pod_group("urgent", 2))
    for i in range(2):
        await sim.create("pods", member(f"urgent-{i}", "urgent", priority=100))
    await eventually(lambda: node_of(sim, "urgent-0") and node_of(sim, "urgent-1"), timeout=20)
    assert node_of(sim, "urgent-0") != node_of(sim, "urgent-1")
    # both fillers made room; nothing was placed before the whole gang could be
    assert sim.store.get("pods", "default", "filler-0") is None
    assert sim.store.get("pods", "default", "filler-1") is None
    await eventually(lambda: (group_condition(sim, "urgent") or {}).get("reason") == "Scheduled")
    attempts = app.metrics.registry.get_sample_value(
        "scheduler_podgroup_schedule_attempts_total",
        {"result": "waiting_on_preemption", "profile": "pyscheduler"},
    )
    assert attempts is not None and attempts >= 1
