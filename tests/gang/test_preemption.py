"""A gang that fits only by preempting lower-priority pods: the group waits for the preemption as
a whole (PodGroupScheduled False, waiting for preemption), then is bound whole."""

from __future__ import annotations

from scheduler.app import SchedulerApp
from scheduler.plugins.gangscheduling import PODGROUPS
from tests.support.cluster import eventually, pod_manifest
from tests.support.gang import NewCluster, StartScheduler, group_condition, member, node_of, pod_group


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


def _victims_evicted(app: object) -> float:
    registry = app.metrics.registry  # type: ignore[attr-defined]
    return registry.get_sample_value("scheduler_preemption_victims_count") or 0.0


async def test_a_gang_that_cannot_fit_even_with_preemption_evicts_nobody(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=2, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))
    for i, node in enumerate(nodes):
        await sim.create("pods", pod_manifest(f"filler-{i}", cpu="3", nodeName=node, priority=0))
    # three 3-cpu members on two 4-cpu nodes: two could preempt a node each, the third fits nowhere
    await sim.create("podgroups", pod_group("big", 3))
    await _seen(app, PODGROUPS, "big", 2)
    for i in range(3):
        await sim.create("pods", member(f"big-{i}", "big", priority=100))
    await eventually(lambda: (group_condition(sim, "big") or {}).get("reason") == "Unschedulable", timeout=20)
    await eventually(
        lambda: (
            (
                app.metrics.registry.get_sample_value(
                    "scheduler_podgroup_schedule_attempts_total",
                    {"result": "unschedulable", "profile": "pyscheduler"},
                )
                or 0
            )
            >= 2
        )
    )
    for i in range(2):
        filler = sim.store.get("pods", "default", f"filler-{i}")
        assert filler is not None and not (filler["metadata"].get("deletionTimestamp"))
    assert _victims_evicted(app) == 0
    pending = app.metrics.registry.get_sample_value(
        "pyscheduler_pending_podgroups", {"profile": "pyscheduler"}
    )
    assert pending == 1
    assert not any(node_of(sim, f"big-{i}") for i in range(3))
    assert not any(
        (stored_pod.get("status") or {}).get("nominatedNodeName")
        for stored_pod in (sim.store.get("pods", "default", f"big-{i}") or {} for i in range(3))
    )


async def test_a_gang_evicts_exactly_what_it_needs(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=3, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))
    for i, node in enumerate(nodes):
        await sim.create("pods", pod_manifest(f"filler-{i}", cpu="3", nodeName=node, priority=0))
    await sim.create("podgroups", pod_group("pair", 2))
    await _seen(app, PODGROUPS, "pair", 3)
    for i in range(2):
        await sim.create("pods", member(f"pair-{i}", "pair", priority=100))
    await eventually(lambda: node_of(sim, "pair-0") and node_of(sim, "pair-1"), timeout=20)
    await eventually(lambda: (group_condition(sim, "pair") or {}).get("reason") == "Scheduled")
    left = [i for i in range(3) if sim.store.get("pods", "default", f"filler-{i}") is not None]
    assert len(left) == 1  # two victims, one per member, all evicted together
    registry = app.metrics.registry
    assert registry.get_sample_value("scheduler_preemption_victims_sum") == 2  # one per member
    assert registry.get_sample_value("pyscheduler_pending_podgroups", {"profile": "pyscheduler"}) == 0


async def _seen(app: SchedulerApp, group_kind: str, group: str, pods: int) -> None:
    """Until the scheduler's cache holds ``pods`` pods and its lister the PodGroup ``group``."""
    assert app.scheduler is not None
    scheduler = app.scheduler
    groups = scheduler.frameworks["pyscheduler"].handle.lister(group_kind)

    def seen() -> bool:
        placed = sum(len(info.pods) for info in scheduler.cache.snapshot().node_infos())
        return placed == pods and groups.get(f"default/{group}") is not None

    await eventually(seen)


async def _running_gang_and_filler(sim: object, gang_priorities: tuple[int, int]) -> list[str]:
    """A gang of minCount 2 running on the first two nodes, a plain pod of priority 50 on the third;
    every node full for a 3-cpu pod."""
    nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))  # type: ignore[attr-defined]
    await sim.create("podgroups", pod_group("running", 2))  # type: ignore[attr-defined]
    for i, priority in enumerate(gang_priorities):
        manifest = member(f"running-{i}", "running", nodeName=nodes[i], priority=priority)
        await sim.create("pods", manifest)  # type: ignore[attr-defined]
    await sim.create("pods", pod_manifest("filler", cpu="3", nodeName=nodes[2], priority=50))  # type: ignore[attr-defined]
    return nodes


async def test_a_victim_in_a_running_gang_takes_its_whole_gang(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=3, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    await _running_gang_and_filler(sim, (0, 0))
    await _seen(app, PODGROUPS, "running", 3)
    # the lowest victims are the gang's: evicting one would leave the other running alone
    await sim.create("pods", pod_manifest("urgent", cpu="3", priority=100))
    await eventually(lambda: node_of(sim, "urgent"), timeout=20)
    gone = ("running-0", "running-1")
    await eventually(lambda: all(sim.store.get("pods", "default", n) is None for n in gone))
    assert sim.store.get("pods", "default", "filler") is not None


async def test_a_gang_member_that_cannot_go_whole_is_not_a_victim(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=3, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    nodes = await _running_gang_and_filler(sim, (0, 1000))
    await _seen(app, PODGROUPS, "running", 3)
    # running-0 alone is the cheapest victim, but its gang's other member outranks the preemptor
    await sim.create("pods", pod_manifest("urgent", cpu="3", priority=100))
    await eventually(lambda: node_of(sim, "urgent"), timeout=20)
    assert node_of(sim, "urgent") == nodes[2]
    assert sim.store.get("pods", "default", "filler") is None
    assert node_of(sim, "running-0") == nodes[0] and node_of(sim, "running-1") == nodes[1]


async def test_members_preempting_on_one_node_evict_its_pods_once(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=1, bookmark_interval=0.5)
    app = await start_scheduler(sim)
    (node,) = [n["metadata"]["name"] for n in sim.store.list("nodes")]
    await sim.create("podgroups", pod_group("pair", 2))
    await sim.create("pods", pod_manifest("filler", cpu="4", nodeName=node, priority=0))
    await _seen(app, PODGROUPS, "pair", 1)
    for i in range(2):  # each member's dry run picks the same filler
        await sim.create("pods", member(f"pair-{i}", "pair", cpu="2", priority=100))
    await eventually(lambda: node_of(sim, "pair-0") == node_of(sim, "pair-1") == node, timeout=20)
    assert sim.store.get("pods", "default", "filler") is None
    assert app.metrics.registry.get_sample_value("scheduler_preemption_victims_sum") == 1
