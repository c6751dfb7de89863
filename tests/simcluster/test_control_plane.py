"""What a real control plane does to pods: gating, kubelets, scale-down order, budgets, eviction, drain."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from simcluster import SimCluster
from simcluster.controllers import deletion_order
from tests.support.kubectl import Kubectl, uses_kubectl

PODS = "/api/v1/namespaces/default/pods"


async def eventually(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)
    return value


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def phase(sim: SimCluster, name: str) -> str | None:
    found = sim.store.get("pods", "default", name)
    return found and found["status"].get("phase")


async def call(sim: SimCluster, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.request(method, sim.url + path, **kw) as resp:
        return resp.status, await resp.json()


# ---- scheduling gates -----------------------------------------------------------------------


async def test_a_gated_pod_gets_the_scheduling_gated_condition(sim: SimCluster) -> None:
    created = await sim.create(
        "pods", pod("gated", schedulingGates=[{"name": "a"}, {"name": "b"}]), "default"
    )
    [condition] = created["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates",
    }
    assert "conditions" not in (await sim.create("pods", pod("free"), "default"))["status"]
    # gates may only be removed
    headers = {"Content-Type": "application/merge-patch+json"}
    status, body = await call(
        sim,
        "PATCH",
        f"{PODS}/gated",
        headers=headers,
        data='{"spec":{"schedulingGates":[{"name":"a"},{"name":"c"}]}}',
    )
    assert (status, body["message"]) == (
        422,
        'Pod "gated" is invalid: spec.schedulingGates[1].name: Forbidden: '
        "only deletion is allowed, but found new scheduling gate 'c'",
    )
    status, body = await call(
        sim, "PATCH", f"{PODS}/gated", headers=headers, data='{"spec":{"schedulingGates":null}}'
    )
    assert status == 200 and "schedulingGates" not in body["spec"]


# ---- the kubelet -----------------------------------------------------------------------------


async def test_no_kubelet_runs_a_pod_bound_to_a_missing_node(sim: SimCluster) -> None:
    await sim.create("pods", pod("lost", nodeName="ghost"), "default")
    await sim.create("pods", pod("found", nodeName="node-0000"), "default")
    await eventually(lambda: phase(sim, "found") == "Running")
    await asyncio.sleep(0.05)  # several kubelet delays: the ghost pod had every chance to start
    assert phase(sim, "lost") == "Pending"
    node = sim.store.get("nodes", None, "node-0000")
    node["metadata"] = {"name": "ghost", "labels": {"kubernetes.io/hostname": "ghost"}}
    await sim.create("nodes", node)
    await eventually(lambda: phase(sim, "lost") == "Running")


# ---- scale-down order ------------------------------------------------------------------------


# one reference time for every stamp: stamps taken a moment apart could fall in different seconds
NOW = time.time()


def _stamp(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def candidate(
    name: str,
    node: str | None = None,
    phase: str = "Running",
    ready: bool = True,
    age: float = 1000,
    **kw: Any,
) -> dict:
    """A pod of a ReplicaSet, alone on its own node unless `node` says otherwise."""
    conditions = [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": _stamp(age)}
    ]
    return {
        "metadata": {"name": name, "uid": name, "creationTimestamp": _stamp(age), **kw.get("meta", {})},
        "spec": {"nodeName": name if node is None else node},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"restartCount": kw.get("restarts", 0)}],
        },
    }


def test_pods_are_deleted_in_upstreams_order() -> None:
    pods = [
        candidate("old-ready", age=100_000),
        candidate("new-ready", age=10),
        candidate("unready", ready=False),
        candidate("pending", phase="Pending", ready=False),
        candidate("unassigned", node="", phase="Pending", ready=False),
        candidate("unknown", phase="Unknown", ready=False),
        candidate(
            "costly", age=10, meta={"annotations": {"controller.kubernetes.io/pod-deletion-cost": "100"}}
        ),
        candidate(
            "cheap", age=100_000, meta={"annotations": {"controller.kubernetes.io/pod-deletion-cost": "-5"}}
        ),
        candidate("crowded", node="n2", age=100_000),
        candidate("restarted", age=100_000, restarts=3),
    ]
    related = [*pods, candidate("sibling-1", node="n2"), candidate("sibling-2", node="n2")]
    order = [p["metadata"]["name"] for p in deletion_order(pods, related, NOW)]
    assert order == [
        "unassigned",  # unassigned before assigned
        "pending",  # Pending < Unknown < Running
        "unknown",
        "unready",  # not ready before ready
        "cheap",  # lower pod-deletion-cost first
        "crowded",  # more related pods on its node (n2 has 3, the other nodes 1)
        "new-ready",  # then the more recently ready
        "restarted",  # then more restarts (same ready time as old-ready)
        "old-ready",
        "costly",
    ]


async def test_scaling_down_removes_unscheduled_then_unready_pods_first(sim: SimCluster) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod("x")["spec"]},
        },
    }
    await sim.create("deployments", deployment, "default")
    pods = await eventually(
        lambda: len(sim.store.list("pods", "default")) == 3 and sim.store.list("pods", "default")
    )
    running, pending, _unassigned = (p["metadata"]["name"] for p in pods)
    for name, node in ((running, "node-0000"), (pending, "node-0001")):
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"kind": "Node", "name": node},
        }
        assert (await call(sim, "POST", f"{PODS}/{name}/binding", json=binding))[0] == 201
    await eventually(lambda: phase(sim, running) == phase(sim, pending) == "Running")
    # make one of the running pods not ready: it goes before the ready one
    unready = sim.store.get("pods", "default", pending)
    unready["status"]["conditions"] = [
        {**c, "status": "False"} if c["type"] == "Ready" else c for c in unready["status"]["conditions"]
    ]
    sim.api.update(sim.api.resource("pods"), "default", pending, unready, "status")

    async def scale(replicas: int) -> None:
        patch = json.dumps({"spec": {"replicas": replicas}})
        headers = {"Content-Type": "application/merge-patch+json"}
        assert (
            await call(
                sim, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", headers=headers, data=patch
            )
        )[0] == 200

    def alive() -> set[str]:
        return {
            p["metadata"]["name"]
            for p in sim.store.list("pods", "default")
            if not p["metadata"].get("deletionTimestamp")
        }

    await scale(2)
    assert await eventually(lambda: alive() == {running, pending})
    await scale(1)
    assert await eventually(lambda: alive() == {running})


# ---- disruption budgets and eviction ---------------------------------------------------------

BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "db"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
}


def eviction(name: str, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if options:
        body["deleteOptions"] = options
    return body


def budget_status(sim: SimCluster) -> dict[str, Any]:
    return sim.store.get("poddisruptionbudgets", "default", "db").get("status") or {}


async def test_a_budget_counts_healthy_pods_and_evictions_use_it_up(sim: SimCluster) -> None:
    await sim.create("poddisruptionbudgets", BUDGET, "default")
    for i in range(2):
        await sim.create("pods", pod(f"db-{i}", {"app": "db"}, nodeName="node-0000"), "default")
    await eventually(lambda: budget_status(sim).get("currentHealthy") == 2)
    assert {k: budget_status(sim)[k] for k in ("disruptionsAllowed", "desiredHealthy", "expectedPods")} == {
        "disruptionsAllowed": 1,
        "desiredHealthy": 1,
        "expectedPods": 2,
    }
    status, body = await call(sim, "POST", f"{PODS}/db-0/eviction", json=eviction("db-0"))
    assert (status, body["status"]) == (201, "Success")
    evicted = sim.store.get("pods", "default", "db-0")  # terminating, until the kubelet finishes
    assert evicted["metadata"]["deletionTimestamp"]
    assert {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}.items() <= next(
        c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget"
    ).items()
    await eventually(lambda: budget_status(sim).get("currentHealthy") == 1)

    status, body = await call(sim, "POST", f"{PODS}/db-1/eviction", json=eviction("db-1"))
    assert (status, body["reason"], body["message"]) == (
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget db needs 1 healthy pods and has 1 currently",
        }
    ]
    assert phase(sim, "db-1") == "Running"
    # a dry run is refused the same way and changes nothing either way
    status, _ = await call(
        sim, "POST", f"{PODS}/db-1/eviction", params={"dryRun": "All"}, json=eviction("db-1")
    )
    assert status == 429


async def test_pods_that_are_not_running_are_evicted_without_a_budget_check(sim: SimCluster) -> None:
    await sim.create("poddisruptionbudgets", BUDGET, "default")
    await sim.create("pods", pod("waiting", {"app": "db"}), "default")  # Pending: never counted
    status, _ = await call(sim, "POST", f"{PODS}/waiting/eviction", json=eviction("waiting"))
    assert status == 201
    assert sim.store.get("pods", "default", "waiting") is None
    status, body = await call(sim, "POST", f"{PODS}/nope/eviction", json=eviction("nope"))
    assert (status, body["message"]) == (404, 'pods "nope" not found')
    status, body = await call(sim, "POST", f"{PODS}/other/eviction", json=eviction("nope"))
    assert (status, body["message"]) == (400, "name in URL does not match name in Eviction object")


# ---- Jobs ------------------------------------------------------------------------------------


async def test_a_job_runs_its_pods_and_completes_when_they_succeed(sim: SimCluster) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch"},
        "spec": {
            "completions": 2,
            "parallelism": 2,
            "template": {"spec": {**pod("x")["spec"], "restartPolicy": "Never"}},
        },
    }
    created = await sim.create("jobs", job, "default")
    assert created["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": created["metadata"]["uid"]}
    }
    pods = await eventually(
        lambda: len(sim.store.list("pods", "default")) == 2 and sim.store.list("pods", "default")
    )
    assert {p["metadata"]["labels"]["job-name"] for p in pods} == {"batch"}
    for p in pods:
        p["status"]["phase"] = "Succeeded"
        sim.api.update(sim.api.resource("pods"), "default", p["metadata"]["name"], p, "status")
    done = await eventually(
        lambda: (j := sim.store.get("jobs", "default", "batch"))["status"].get("succeeded") == 2 and j
    )
    assert {c["type"] for c in done["status"]["conditions"]} == {"SuccessCriteriaMet", "Complete"}
    assert len(sim.store.list("pods", "default")) == 2  # no more pods once complete
    status, body = await call(
        sim,
        "POST",
        "/apis/batch/v1/namespaces/default/jobs",
        json={**job, "metadata": {"name": "bad"}, "spec": {"template": pod("x")}},
    )
    assert (status, body["message"]) == (
        422,
        'Job.batch "bad" is invalid: spec.template.spec.restartPolicy: Required value: '
        'valid values: "OnFailure", "Never"',
    )


# ---- kubectl: drain and watch tables ---------------------------------------------------------


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with SimCluster(nodes=2, kubelet_delay=0.01) as sim:
        yield Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)


@uses_kubectl
async def test_kubectl_drain_evicts_the_pods_of_a_node(kubectl: Kubectl) -> None:
    sim = kubectl.sim
    await sim.create("poddisruptionbudgets", BUDGET, "default")
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1", "controller": True}
    for i, node in enumerate(("node-0000", "node-0000", "node-0001")):
        manifest = pod(f"db-{i}", {"app": "db"}, nodeName=node)
        manifest["metadata"]["ownerReferences"] = [owner]
        await sim.create("pods", manifest, "default")
    await eventually(lambda: budget_status(sim).get("disruptionsAllowed") == 2)
    out = await kubectl("drain", "node-0000", "--timeout=20s")
    assert "node/node-0000 cordoned" in out
    assert "pod/db-0 evicted" in out and "pod/db-1 evicted" in out
    assert "node/node-0000 drained" in out
    assert sim.store.get("nodes", None, "node-0000")["spec"]["unschedulable"] is True
    assert [p["metadata"]["name"] for p in sim.store.list("pods", "default")] == ["db-2"]
    # the last one is protected by the budget: kubectl says why and retries (it is stopped here)
    proc = await asyncio.create_subprocess_exec(
        *kubectl.argv("drain", "node-0001"), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stderr.readline(), 10)).decode().strip()
    finally:
        proc.kill()
        await proc.wait()
    assert line == (
        'error when evicting pods/"db-2" -n "default" (will retry after 5s): '
        "Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert phase(sim, "db-2") == "Running"


async def test_a_table_watch_sends_rows_with_headers_first(sim: SimCluster) -> None:
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    params = {"watch": "true", "timeoutSeconds": "5"}
    await sim.create("pods", pod("a"), "default")
    async with (
        aiohttp.ClientSession() as http,
        http.get(sim.url + PODS, params=params, headers={"Accept": accept}) as resp,
    ):
        first = json.loads(await resp.content.readline())
        await sim.create("pods", pod("b"), "default")
        second = json.loads(await resp.content.readline())
    assert first["type"] == second["type"] == "ADDED"
    assert first["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
    assert second["object"]["columnDefinitions"] is None
    [row] = second["object"]["rows"]
    assert row["cells"][:3] == ["b", "0/1", "Pending"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "b"


@uses_kubectl
async def test_kubectl_get_pods_watch_prints_columns(kubectl: Kubectl) -> None:
    await kubectl.sim.create("pods", pod("first"), "default")
    proc = await asyncio.create_subprocess_exec(
        *kubectl.argv("get", "pods", "-w", "--request-timeout=3s"), stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        header = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().split()
        assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().split()[:3] == [
            "first",
            "0/1",
            "Pending",
        ]
        await kubectl.sim.create("pods", pod("second", nodeName="node-0000"), "default")
        lines = [(await asyncio.wait_for(proc.stdout.readline(), 10)).decode().split() for _ in range(2)]
        assert lines[0][:3] == ["second", "0/1", "Pending"]
        assert lines[1][:3] == ["second", "1/1", "Running"]  # the kubelet's update, in columns
    finally:
        proc.kill()
        await proc.wait()
