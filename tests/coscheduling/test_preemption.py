"""Preemption for and against Coscheduling gangs: DefaultPreemption evicts for a member only when
its whole group can then be placed, and a running gang is evicted whole or not at all."""

from __future__ import annotations

from scheduler.app import SchedulerApp
from scheduler.plugins.coscheduling import PODGROUPS as PODGROUPS_KIND
from simcluster import SimCluster
from tests.support.cluster import eventually, pod_manifest
from tests.support.coscheduling import Starter, bound, install_crd, member, node_of, podgroup


async def _full_nodes(sim: SimCluster) -> list[str]:
    """Each node taken by a 3-cpu pod of priority 0."""
    nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))
    for i, node in enumerate(nodes):
        await sim.create("pods", pod_manifest(f"filler-{i}", cpu="3", nodeName=node, priority=0))
    return nodes


async def _seen(app: SchedulerApp, group: str, pods: int) -> None:
    """Until the scheduler's cache holds ``pods`` pods and its lister the PodGroup ``group``."""
    assert app.scheduler is not None
    scheduler = app.scheduler
    groups = scheduler.frameworks["pyscheduler"].handle.lister(PODGROUPS_KIND)

    def seen() -> bool:
        placed = sum(len(info.pods) for info in scheduler.cache.snapshot().node_infos())
        return placed == pods and groups.get(f"default/{group}") is not None

    await eventually(seen)


def _failed_scheduling(sim: SimCluster, name: str) -> list[str]:
    return [
        e.get("note") or ""
        for e in sim.store.list("events.events.k8s.io", namespace="default")
        if (e.get("regarding") or {}).get("name") == name and e.get("reason") == "FailedScheduling"
    ]


async def test_a_gang_that_cannot_fit_even_with_preemption_evicts_nobody(scheduler: Starter) -> None:
    async with SimCluster(nodes=2, kubelet=True, bookmark_interval=0.5) as sim:
        await install_crd(sim)
        app = await scheduler(sim)
        await sim.create("podgroups.scheduling.x-k8s.io", podgroup("big", 3))
        await _full_nodes(sim)
        await _seen(app, "big", 2)
        for i in range(3):
            await sim.create("pods", member(f"big-{i}", "big", priority=100))

        def refusals() -> list[str]:
            notes = [n for i in range(3) for n in _failed_scheduling(sim, f"big-{i}")]
            return [n for n in notes if "cannot be placed even with preemption" in n]

        await eventually(refusals, timeout=20)
        note = refusals()[0]
        assert "PodGroup default/big cannot be placed even with preemption, 2 of its minMember 3" in note
        assert sim.store.get("pods", "default", "filler-0") is not None
        assert sim.store.get("pods", "default", "filler-1") is not None
        assert not app.metrics.registry.get_sample_value("scheduler_preemption_victims_count")
        assert not bound(sim, [f"big-{i}" for i in range(3)])


async def test_a_gang_that_fits_with_preemption_evicts_what_it_needs_and_is_bound_whole(
    scheduler: Starter,
) -> None:
    async with SimCluster(nodes=3, kubelet=True, bookmark_interval=0.5) as sim:
        await install_crd(sim)
        app = await scheduler(sim)
        await sim.create("podgroups.scheduling.x-k8s.io", podgroup("pair", 2))
        await _full_nodes(sim)
        await _seen(app, "pair", 3)
        for i in range(2):
            await sim.create("pods", member(f"pair-{i}", "pair", priority=100))
        await eventually(lambda: len(bound(sim, ["pair-0", "pair-1"])) == 2, timeout=30)
        assert node_of(sim, "pair-0") != node_of(sim, "pair-1")
        left = [i for i in range(3) if sim.store.get("pods", "default", f"filler-{i}") is not None]
        assert len(left) == 1


async def test_a_running_gang_is_evicted_whole_or_not_at_all(scheduler: Starter) -> None:
    async with SimCluster(nodes=3, kubelet=True, bookmark_interval=0.5) as sim:
        await install_crd(sim)
        app = await scheduler(sim)
        nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))
        await sim.create("podgroups.scheduling.x-k8s.io", podgroup("running", 2))
        for i in range(2):
            await sim.create("pods", member(f"running-{i}", "running", nodeName=nodes[i], priority=0))
        await sim.create("pods", pod_manifest("filler", cpu="3", nodeName=nodes[2], priority=50))
        await _seen(app, "running", 3)
        # the gang's members are the cheapest victims; one alone would leave the other stranded
        await sim.create("pods", pod_manifest("urgent", cpu="3", priority=100))
        await eventually(lambda: node_of(sim, "urgent"), timeout=20)
        gone = ("running-0", "running-1")
        await eventually(lambda: all(sim.store.get("pods", "default", n) is None for n in gone))
        filler = sim.store.get("pods", "default", "filler")
        assert filler is not None and not filler["metadata"].get("deletionTimestamp")
