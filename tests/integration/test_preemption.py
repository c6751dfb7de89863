"""Preemption end to end: the real scheduler against the local API endpoint (3 nodes of 4 CPUs)."""

from __future__ import annotations

from typing import Any

from simcluster import SimCluster
from tests.support.cluster import eventually, node_of, pod, pod_manifest


def placed(name: str, node: str, cpu: str, priority: int, **labels: str) -> dict[str, Any]:
    """A running pod of another scheduler, already on ``node``."""
    return pod_manifest(
        name,
        cpu=cpu,
        scheduler_name="default-scheduler",
        labels=labels or {"app": name},
        nodeName=node,
        priority=priority,
    )


def preemptor(name: str = "urgent", cpu: str = "2") -> dict[str, Any]:
    return pod_manifest(name, cpu=cpu, priority=1000)


def nominated_node(sim: SimCluster, name: str) -> str:
    return ((pod(sim, name) or {}).get("status") or {}).get("nominatedNodeName") or ""


def names_of_pods(sim: SimCluster) -> set[str]:
    return {p["metadata"]["name"] for p in sim.store.list("pods", namespace="default")}


def failures_of(sim: SimCluster, *names: str) -> dict[str, str] | None:
    """The FailedScheduling notes of ``names``, once every one of them has one."""
    found = notes(sim, "FailedScheduling")
    return found if all(name in found for name in names) else None


def notes(sim: SimCluster, reason: str) -> dict[str, str]:
    return {
        e["regarding"]["name"]: e["note"]
        for e in sim.store.list("events.events.k8s.io", namespace="default")
        if e.get("reason") == reason
    }


async def test_a_high_priority_pod_evicts_exactly_the_lowest_priority_victims_it_needs(sim, start_scheduler):
    for manifest in (
        placed("a-low", "node-0000", "2", 1),
        placed("a-mid", "node-0000", "2", 2),
        placed("b-1", "node-0001", "2", 5),
        placed("b-2", "node-0001", "2", 5),
        placed("c-big", "node-0002", "4", 10),
    ):
        await sim.create("pods", manifest)
    await start_scheduler(sim)

    await sim.create("pods", preemptor())

    assert await eventually(lambda: nominated_node(sim, "urgent")) == "node-0000"
    await eventually(lambda: node_of(sim, "urgent"))
    assert node_of(sim, "urgent") == "node-0000"
    assert names_of_pods(sim) == {"a-mid", "b-1", "b-2", "c-big", "urgent"}
    preempted = await eventually(lambda: notes(sim, "Preempted"))
    urgent_uid = pod(sim, "urgent")["metadata"]["uid"]
    assert preempted == {"a-low": f"Preempted by pod {urgent_uid} on node node-0000"}
    failed = notes(sim, "FailedScheduling")["urgent"]
    assert failed.startswith("0/3 nodes are available: 3 Insufficient cpu.")


async def test_a_disruption_budget_protects_its_pod_when_another_candidate_exists(sim, start_scheduler):
    await sim.create(
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        },
    )
    for manifest in (
        placed("db-0", "node-0000", "4", 1, app="db"),
        placed("web-0", "node-0001", "4", 1, app="web"),
        placed("system", "node-0002", "4", 2000),
    ):
        await sim.create("pods", manifest)
    await start_scheduler(sim)

    await sim.create("pods", preemptor())

    await eventually(lambda: node_of(sim, "urgent"))
    assert node_of(sim, "urgent") == "node-0001"
    assert names_of_pods(sim) == {"db-0", "system", "urgent"}


async def test_a_pod_that_may_not_preempt_stays_pending_with_upstreams_message(sim, start_scheduler):
    for i in range(3):
        await sim.create("pods", placed(f"low-{i}", f"node-000{i}", "4", 1))
    await start_scheduler(sim)

    await sim.create("pods", {**preemptor(), "spec": {**preemptor()["spec"], "preemptionPolicy": "Never"}})

    message = await eventually(lambda: notes(sim, "FailedScheduling").get("urgent"))
    assert message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert names_of_pods(sim) == {"low-0", "low-1", "low-2", "urgent"}


async def test_pods_that_fit_nowhere_get_upstreams_full_message(sim, start_scheduler):
    for i in range(3):
        await sim.create("pods", placed(f"peer-{i}", f"node-000{i}", "3", 0))
    await start_scheduler(sim)

    await sim.create("pods", pod_manifest("blocked", cpu="2"))
    await sim.create("pods", pod_manifest("huge", cpu="64"))

    failed = await eventually(lambda: failures_of(sim, "blocked", "huge"))
    # Only lower-priority pods may be evicted: an equal one does not count.
    assert failed["blocked"] == (
        "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    # More than a node's allocatable: no eviction could help, so no node is even tried.
    assert failed["huge"] == (
        "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
