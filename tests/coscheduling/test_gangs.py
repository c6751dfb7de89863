"""Gangs on the local endpoint: all or nothing, two gangs racing, late members, timeouts."""

from __future__ import annotations

import asyncio

from scheduler.app import SchedulerApp
from scheduler.config.load import parse_config
from scheduler.plugins.coscheduling import PODGROUPS as PODGROUPS_KIND
from scheduler.plugins.coscheduling import CoschedulingArgs
from simcluster import SimCluster
from tests.support.cluster import eventually, local_serving, pod_manifest
from tests.support.coscheduling import (
    PODGROUPS,
    bound,
    config,
    failed_scheduling,
    install_crd,
    member,
    node_of,
    podgroup,
)

NAMES = [f"a-{i}" for i in range(4)]


async def test_a_gang_that_fits_is_bound_whole(sim: SimCluster, scheduler) -> None:
    await sim.create(PODGROUPS, podgroup("a", 4))
    for name in NAMES:
        await sim.create("pods", member(name, "a"))
    await scheduler(sim)
    await eventually(lambda: bound(sim, NAMES) == NAMES)


async def test_a_gang_that_cannot_fit_whole_holds_nothing_and_blocks_no_one(
    sim: SimCluster, scheduler
) -> None:
    gang = [f"a-{i}" for i in range(5)]  # five 3-CPU pods, room for four
    await sim.create(PODGROUPS, podgroup("a", 5))
    for name in gang:
        await sim.create("pods", member(name, "a"))
    app = await scheduler(sim, podGroupBackoffSeconds=60)
    notes = await eventually(lambda: [n for name in gang for n in failed_scheduling(sim, name)])
    rejected = [n for n in notes if "PodGroup default/a gets rejected" in n]
    assert rejected, notes
    assert "of the group's minMember 5 pods fit" in rejected[0]
    # the members that had found a node gave it back (no node held, none nominated) ...
    assert app.scheduler is not None
    fwk, queue, cache = app.scheduler.frameworks["pyscheduler"], app.scheduler.queue, app.scheduler.cache

    def held() -> list[str]:
        nodes = cache.snapshot().node_infos()
        placed = [p.name for info in nodes for p in info.pods.values()]
        nominated = [p.name for info in nodes for p in queue.nominated_pods_for_node(info.name)]
        return placed + nominated + [w.pod.name for w in fwk.waiting_pods]

    await eventually(lambda: held() == [])
    # ... and, backing off, it keeps off them: other pods take every node
    others = [f"other-{i}" for i in range(4)]
    for name in others:
        await sim.create("pods", pod_manifest(name, cpu="3500m"))
    await eventually(lambda: bound(sim, others) == others)
    assert bound(sim, gang) == []
    backed_off = [n for name in gang for n in failed_scheduling(sim, name) if "failed recently" in n]
    assert backed_off == [] or "podGroup default/a failed recently" in backed_off[0]


async def test_of_two_gangs_that_fit_alone_but_not_together_one_is_placed_whole(
    sim: SimCluster, scheduler
) -> None:
    gangs = {g: [f"{g}-{i}" for i in range(3)] for g in ("a", "b")}  # 2 x 3 pods, room for 4
    for g in gangs:
        await sim.create(PODGROUPS, podgroup(g, 3))
    for i in range(3):  # arriving interleaved
        for g, names in gangs.items():
            await sim.create("pods", member(names[i], g))
    await scheduler(sim, podGroupBackoffSeconds=30)  # b, once failed, stays off for the test
    # the older group (same second: the first by name) goes first and is placed whole
    await eventually(lambda: bound(sim, gangs["a"]) == gangs["a"])
    notes = await eventually(
        lambda: [n for name in gangs["b"] for n in failed_scheduling(sim, name) if "default/b" in n]
    )
    assert any("PodGroup default/b gets rejected" in n for n in notes), notes
    assert bound(sim, gangs["b"]) == []


async def test_a_gang_short_of_members_waits_and_is_bound_once_the_last_arrives(
    sim: SimCluster, scheduler
) -> None:
    names = ["a-0", "a-1", "a-2"]
    await sim.create(PODGROUPS, podgroup("a", 3))
    for name in names[:2]:
        await sim.create("pods", member(name, "a", cpu="1"))
    await scheduler(sim)
    notes = await eventually(lambda: failed_scheduling(sim, "a-0"))
    assert notes[0] == (
        "0/4 nodes are available: pre-filter pod a-0 cannot find enough sibling pods of PodGroup "
        "default/a, current pods number: 2, minMember of group: 3. no new claims to deallocate, "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling., PodGroup "
        "default/a gets rejected due to Pod a-0 is unschedulable even after PostFilter; 0 of the "
        "group's minMember 3 pods fit"
    )
    assert bound(sim, names) == []
    await sim.create("pods", member("a-2", "a", cpu="1"))
    await eventually(lambda: bound(sim, names) == names)


async def test_members_that_wait_too_long_give_their_nodes_back(sim: SimCluster, scheduler) -> None:
    # the third member belongs to another scheduler, which never places it: the two others
    # wait at Permit for scheduleTimeoutSeconds, then are rejected together
    await sim.create(PODGROUPS, podgroup("a", 3, scheduleTimeoutSeconds=1))
    for name in ("a-0", "a-1"):
        await sim.create("pods", member(name, "a"))
    await sim.create("pods", member("a-2", "a", schedulerName="someone-else"))
    await scheduler(sim)
    notes = await eventually(
        lambda: (
            all(failed_scheduling(sim, name) for name in ("a-0", "a-1"))
            and {name: failed_scheduling(sim, name)[0] for name in ("a-0", "a-1")}
        ),
        timeout=20,
    )
    timeout = "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at plugin Coscheduling."
    assert timeout in notes.values(), notes
    # whichever timed out first made the other give up too (unless both timed out at once)
    for note in notes.values():
        assert note == timeout or note.startswith(
            "0/1 nodes are available: 1 rejection in Unreserve: pod a-"
        ), note
    assert bound(sim, ["a-0", "a-1", "a-2"]) == []


async def test_without_the_crd_the_scheduler_stops_at_start_with_exit_code_2(tmp_path, caplog) -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as bare:
        parsed = parse_config(config(), {"Coscheduling": CoschedulingArgs})
        app = SchedulerApp(
            parsed,
            kubeconfig=str(bare.write_kubeconfig(tmp_path / "kubeconfig")),
            serving=local_serving(),
            watches=[PODGROUPS_KIND],
        )
        assert await asyncio.wait_for(app.run(), 15) == 2
    assert any(
        "scheduling.x-k8s.io/v1alpha1/podgroups, which the cluster does not serve" in r.getMessage()
        for r in caplog.records
    )


async def test_a_gang_whose_pods_differ_is_bound_whole_when_it_fits(sim: SimCluster, scheduler) -> None:
    sizes = {"a-0": "3", "a-1": "3", "a-2": "3", "a-3": "3", "a-4": "1", "a-5": "1", "a-6": "1", "a-7": "1"}
    await sim.create(PODGROUPS, podgroup("a", len(sizes)))  # fills the four nodes exactly
    for name, cpu in sizes.items():
        await sim.create("pods", member(name, "a", cpu=cpu))
    await scheduler(sim)
    await eventually(lambda: bound(sim, list(sizes)) == list(sizes))
    nodes = {node_of(sim, name) for name in sizes}
    assert len(nodes) == 4


async def test_a_member_deleted_while_waiting_releases_the_rest_of_its_group(
    sim: SimCluster, scheduler
) -> None:
    # a-2 belongs to another scheduler: a-0 and a-1 wait at Permit (for 60 s) for it
    await sim.create(PODGROUPS, podgroup("a", 3))
    for name in ("a-0", "a-1"):
        await sim.create("pods", member(name, "a"))
    await sim.create("pods", member("a-2", "a", schedulerName="someone-else"))
    app = await scheduler(sim)
    assert app.scheduler is not None
    fwk = app.scheduler.frameworks["pyscheduler"]
    await eventually(lambda: sorted(w.pod.name for w in fwk.waiting_pods) == ["a-0", "a-1"])

    sim.api.delete(sim.api.resource("pods"), "default", "a-1", {"gracePeriodSeconds": 0})
    notes = await eventually(lambda: failed_scheduling(sim, "a-0"))
    assert notes[0] == (
        "0/1 nodes are available: 1 rejection in Unreserve: pod a-1 of PodGroup default/a gave up its node."
    )
    # a-0 gave its node back: the gang holds nothing while it is short of members
    await eventually(lambda: not list(fwk.waiting_pods))
    nodes = app.scheduler.cache.snapshot().node_infos()
    assert [p.name for info in nodes for p in info.pods.values()] == []
    assert bound(sim, ["a-0", "a-2"]) == []


def run_node(name: str, run: int) -> dict:
    """A 4-cpu node of one run: the run's pods select it by label."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "run": str(run)}},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


async def test_a_gang_too_big_for_its_nodes_is_bound_once_two_nodes_arrive_in_one_request(scheduler) -> None:
    """Twenty runs in a row: four 3-cpu members on two 4-cpu nodes (none bound, all or
    nothing), then two more nodes created together, while members are still being tried (even
    runs) or once every member has failed (odd runs): the gang is bound whole each time."""
    async with SimCluster(nodes=0, kubelet=True, bookmark_interval=0.5) as sim:
        await install_crd(sim)
        await scheduler(sim)
        for run in range(20):
            await two_more_nodes_place_the_gang(sim, run)


async def two_more_nodes_place_the_gang(sim: SimCluster, run: int) -> None:
    group, names = f"train-{run}", [f"gang-{run}-{i}" for i in range(4)]
    for i in range(2):
        await sim.create("nodes", run_node(f"n-{run}-{i}", run))
    await sim.create(PODGROUPS, podgroup(group, 4, scheduleTimeoutSeconds=60))
    for name in names:
        await sim.create("pods", member(name, group, nodeSelector={"run": str(run)}))
    some_or_all = any if run % 2 == 0 else all
    await eventually(lambda: some_or_all(failed_scheduling(sim, name) for name in names))
    assert bound(sim, names) == []
    for i in (2, 3):  # one request: no event is handled between the two
        await sim.create("nodes", run_node(f"n-{run}-{i}", run))
    await eventually(lambda: bound(sim, names) == names, timeout=10)
