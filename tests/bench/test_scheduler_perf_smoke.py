"""Every bench.scheduler_perf workload, tiny: 50 nodes, a few dozen pods, churn sped up.

Checks that each binds what it should (no timing is asserted: figures live in the bench).
"""

from __future__ import annotations

from collections import Counter

import pytest

from bench.scheduler_perf import WORKLOADS, Cluster, Report, run

NODES = 50
SCALE = 0.005  # 10000 measured pods upstream -> 50 here


def _placed(cluster: Cluster, namespaces: set[str]) -> list:
    return [p for p in cluster.pods.values() if p.namespace in namespaces and p.node_name]


async def _run(name: str) -> tuple[Report, Cluster]:
    report = await run(
        WORKLOADS[name], NODES, SCALE, churn_interval_scale=0.01, settle=True, stall_seconds=5.0
    )
    assert report.cluster is not None
    return report, report.cluster


@pytest.mark.parametrize("name", list(WORKLOADS))
async def test_every_measured_pod_is_scheduled(name: str) -> None:
    report, cluster = await _run(name)
    assert not report.gave_up
    assert report.measured >= 10
    assert report.scheduled == report.measured
    assert cluster.scheduled[WORKLOADS[name].measured.namespace] == report.measured
    assert report.attempts >= report.measured


async def test_node_affinity_lands_on_matching_zones() -> None:
    _, cluster = await _run("NodeAffinity")
    pods = _placed(cluster, {"namespace-1", "namespace-2"})
    assert pods and all(
        cluster.nodes[p.node_name].labels["topology.kubernetes.io/zone"] == "zone1" for p in pods
    )


async def test_topology_spreading_keeps_the_skew() -> None:
    report, cluster = await _run("TopologySpreading")
    zones = Counter(
        cluster.nodes[p.node_name].labels["topology.kubernetes.io/zone"]
        for p in _placed(cluster, {"namespace-2"})
    )
    assert sum(zones.values()) == report.measured
    assert set(zones) == {"moon-1", "moon-2", "moon-3"}
    assert max(zones.values()) - min(zones.values()) <= 5


async def test_pod_anti_affinity_puts_one_pod_per_node() -> None:
    report, cluster = await _run("PodAntiAffinity")
    per_node = Counter(p.node_name for p in _placed(cluster, {"sched-0", "sched-1"}))
    assert sum(per_node.values()) == report.init_pods + report.measured
    assert max(per_node.values()) == 1


async def test_preemption_evicts_victims_and_binds_the_preemptors() -> None:
    report, cluster = await _run("Preemption")
    assert report.init_pods == 4 * NODES
    assert report.churn_created["pod-high-priority"] >= 2
    # each preemptor (3 CPUs) needs 3 of its node's 900m pods gone, deleted through the API
    assert report.churn_pods_bound == report.churn_created["pod-high-priority"]
    assert report.churn_pods_pending == 0
    assert report.victims >= 3 * report.churn_pods_bound
    assert len(cluster.seen_pods) == len(cluster.pods)  # the informer saw every deletion


async def test_unschedulable_pods_stay_pending() -> None:
    report, _ = await _run("Unschedulable")
    created = report.churn_created["pod-high-priority-large-cpu"]
    assert created >= 2
    assert report.churn_pods_bound == 0
    assert report.churn_pods_pending == created
    assert report.victims == 0  # preemption cannot make room for 9 CPUs on a 4-CPU node


async def test_mixed_churn_creates_and_deletes() -> None:
    report, cluster = await _run("SchedulingWithMixedChurn")
    assert report.churn_created["node"] >= 1
    assert report.churn_created["service"] >= 1
    assert report.churn_pods_bound == 0
    # recreate mode: every other tick deletes what the previous one created
    churn_nodes = [n for n in cluster.nodes if n.startswith("node-churn-")]
    assert len(churn_nodes) <= 1
    assert not any(p.node_name.startswith("node-churn-") for p in cluster.pods.values())
