"""Topology spread, pod anti-affinity and scheduling gates, end to end against the local API endpoint."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from scheduler.testing import deployment_dict
from simcluster import SimCluster
from tests.support.cluster import eventually, node_of, pod_manifest, scheduled_condition

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def deployment(name: str, replicas: int, **pod_spec: Any) -> dict[str, Any]:
    return deployment_dict(name, replicas, requests={"cpu": "100m"}, image="nginx", **pod_spec)


def replicas(sim: SimCluster, app: str) -> list[dict[str, Any]]:
    return [
        p for p in sim.store.list("pods", "default") if (p["metadata"].get("labels") or {}).get("app") == app
    ]


def bound(sim: SimCluster, app: str) -> list[str]:
    return [p["spec"]["nodeName"] for p in replicas(sim, app) if p["spec"].get("nodeName")]


def zones(sim: SimCluster, nodes: list[str]) -> Counter[str]:
    return Counter(sim.store.get("nodes", None, n)["metadata"]["labels"][ZONE] for n in nodes)


@pytest.fixture
async def six_nodes() -> AsyncIterator[SimCluster]:
    """Six nodes in zone-a/b/c, round-robin (two per zone)."""
    async with SimCluster(nodes=6, kubelet=True, bookmark_interval=0.5) as cluster:
        yield cluster


async def test_a_zone_spread_deployment_of_nine_lands_three_per_zone(six_nodes, start_scheduler):
    sim = six_nodes
    await start_scheduler(sim)
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    await sim.create("deployments", deployment("web", 9, topologySpreadConstraints=[spread]))
    placed = await eventually(lambda: len(bound(sim, "web")) == 9 and bound(sim, "web"))
    assert zones(sim, placed) == {"zone-a": 3, "zone-b": 3, "zone-c": 3}


async def test_system_default_constraints_spread_a_deployment_over_zones(six_nodes, start_scheduler):
    sim = six_nodes
    app = await start_scheduler(sim)
    await sim.create("deployments", deployment("plain", 0))  # no constraints of its own
    # The defaults' selector comes from the ReplicaSet: let the scheduler see it before its pods.
    await eventually(lambda: len(app.informers["replicasets"].store) == 1)
    api = sim.api
    scale = orjson.dumps({"spec": {"replicas": 9}})
    api.patch(api.resource("deployments"), "default", "plain", "application/merge-patch+json", scale)
    placed = await eventually(lambda: len(bound(sim, "plain")) == 9 and bound(sim, "plain"))
    assert zones(sim, placed) == {"zone-a": 3, "zone-b": 3, "zone-c": 3}


async def test_required_anti_affinity_puts_one_replica_per_node_and_reports_the_rest(sim, start_scheduler):
    await start_scheduler(sim)
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "solo"}}}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    await sim.create("deployments", deployment("solo", 5, affinity=anti))
    await eventually(lambda: len(bound(sim, "solo")) == 3)
    assert sorted(bound(sim, "solo")) == ["node-0000", "node-0001", "node-0002"]

    def reported() -> list[str]:
        unbound = [p["metadata"]["name"] for p in replicas(sim, "solo") if not p["spec"].get("nodeName")]
        return unbound if all(scheduled_condition(sim, name) for name in unbound) else []

    pending = await eventually(lambda: len(reported()) == 2 and reported())
    for name in pending:
        condition = scheduled_condition(sim, name)
        assert condition["reason"] == "Unschedulable"
        assert condition["message"].startswith(
            "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
        )
    assert len(bound(sim, "solo")) == 3


async def test_a_gated_pod_waits_until_its_gates_are_removed(sim, start_scheduler):
    await start_scheduler(sim)
    await sim.create("pods", pod_manifest("gated", schedulingGates=[{"name": "example.com/hold"}]))
    await sim.create("pods", pod_manifest("free"))
    await eventually(lambda: node_of(sim, "free"))  # created later, scheduled already
    assert not node_of(sim, "gated")
    api = sim.api
    patch = orjson.dumps({"spec": {"schedulingGates": None}})
    api.patch(api.resource("pods"), "default", "gated", "application/merge-patch+json", patch)
    await eventually(lambda: node_of(sim, "gated"))
