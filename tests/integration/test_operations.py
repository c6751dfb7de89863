"""Operating several replicas: leader election, failover, readiness and metrics, end to end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from simcluster import SimCluster
from tests.support.cluster import eventually, local_serving, node_of, pod_manifest

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.5, 0.3


def lease_holder(sim: SimCluster) -> str:
    lease = sim.store.get("leases", "default", "pyscheduler") or {}
    return (lease.get("spec") or {}).get("holderIdentity") or ""


def scheduled_count(app: SchedulerApp) -> float:
    value = app.metrics.registry.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "pyscheduler"}
    )
    return value or 0.0


def scheduled_condition(sim: SimCluster, name: str) -> str:
    """The reason of the pod's PodScheduled condition ("" while it has none)."""
    pod = sim.store.get("pods", "default", name) or {}
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((str(c.get("reason", "")) for c in conditions if c.get("type") == "PodScheduled"), "")


@pytest.fixture
async def replicas(sim, tmp_path):
    """Start n in-process replicas with leader election on short timings."""
    started: list[tuple[SchedulerApp, asyncio.Task[int]]] = []

    async def start(count: int) -> list[SchedulerApp]:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        for i in range(count):
            config = default_config()
            election = config.leader_election
            election.leader_elect = True
            election.resource_namespace = "default"
            election.lease_duration, election.renew_deadline = LEASE_DURATION, RENEW_DEADLINE
            election.retry_period = RETRY_PERIOD
            app = SchedulerApp(
                config, kubeconfig=str(kubeconfig), serving=local_serving(), identity=f"replica-{i}"
            )
            started.append((app, asyncio.create_task(app.run())))
        await eventually(lambda: lease_holder(sim))
        return [app for app, _ in started]

    yield start
    for app, _ in started:
        app.shutting_down.set()
    for _, task in started:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 20)


@pytest.mark.parametrize("count", [2, 3])
async def test_exactly_one_replica_holds_the_lease_and_binds(sim, replicas, count):
    apps = await replicas(count)
    for i in range(8):
        await sim.create("pods", pod_manifest(f"p-{i}"))
    await eventually(lambda: all(node_of(sim, f"p-{i}") for i in range(8)))
    leader = lease_holder(sim)
    assert leader in {app.identity for app in apps}
    (leading,) = (app for app in apps if app.identity == leader)
    # the metric is counted once the Binding's answer is read, a moment after the store has it
    await eventually(lambda: scheduled_count(leading) == 8)
    counts = {app.identity: scheduled_count(app) for app in apps}
    assert all(value == 0 for identity, value in counts.items() if identity != leader)


async def test_a_stopping_leader_releases_the_lease_and_a_follower_takes_over_quickly(sim, replicas):
    apps = await replicas(2)
    leader = next(app for app in apps if app.identity == lease_holder(sim))
    follower = next(app for app in apps if app is not leader)
    started = time.monotonic()
    leader.shutting_down.set()  # what SIGTERM does
    await eventually(lambda: lease_holder(sim) == follower.identity, timeout=LEASE_DURATION)
    assert time.monotonic() - started < LEASE_DURATION  # no waiting for expiry
    lease = sim.store.get("leases", "default", "pyscheduler")
    assert lease["spec"]["leaseTransitions"] >= 1
    await sim.create("pods", pod_manifest("after-handover"))
    await eventually(lambda: node_of(sim, "after-handover"))
    await eventually(lambda: scheduled_count(follower) == 1)


async def test_a_leader_that_cannot_renew_stops_before_its_lease_expires(sim, replicas):
    (app,) = await replicas(1)
    sim.faults.set_error("update", "leases", 1.0, code=500)
    failing_since = time.monotonic()
    await eventually(lambda: app.shutting_down.is_set(), timeout=LEASE_DURATION + 1)
    assert time.monotonic() - failing_since < LEASE_DURATION
    # It no longer schedules: a new pod stays pending.
    await sim.create("pods", pod_manifest("orphan"))
    await asyncio.sleep(0.5)
    assert not node_of(sim, "orphan")
    sim.faults.clear()
    await eventually(lambda: app.exit_code == 1)


async def test_readyz_waits_for_the_informers_and_metrics_move(sim, tmp_path):
    sim.faults.set_error("list", "nodes", 1.0, code=503)
    config = default_config()
    config.leader_election.leader_elect = False
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=local_serving())
    task = asyncio.create_task(app.run())
    try:
        await eventually(lambda: app.server is not None and app.server.port)
        async with aiohttp.ClientSession() as http:

            async def get(path: str) -> tuple[int, str]:
                async with http.get(app.server.url + path, ssl=False) as response:
                    return response.status, await response.text()

            status, body = await get("/readyz?verbose")
            assert status == 503
            assert "[-]sched-handler-sync" in body
            assert not app.ready()
            assert not await app.wait_ready(0.2)  # the nodes cannot be listed: not within 0.2 s
            assert (await get("/healthz"))[0] == 200
            sim.faults.clear()
            assert await app.wait_ready(15), "never became ready"
            assert app.ready()
            assert (await get("/readyz"))[0] == 200
            await sim.create("pods", pod_manifest("counted"))
            await sim.create("pods", pod_manifest("too-big", cpu="1000"))
            await eventually(lambda: node_of(sim, "counted"))
            await eventually(lambda: scheduled_condition(sim, "too-big") == "Unschedulable")
            assert await app.api_dispatcher.flush(5)
            status, text = await get("/metrics")
        assert status == 200
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }
        key = ("scheduler_schedule_attempts_total", (("profile", "pyscheduler"), ("result", "scheduled")))
        assert samples[key] == 1
        assert samples[("scheduler_pending_pods", (("queue", "active"),))] == 0
        patches = (("call_type", "pod_status_patch"), ("result", "success"))
        assert samples[("scheduler_async_api_call_execution_total", patches)] == 1
        assert samples[("scheduler_pending_async_api_calls", (("call_type", "pod_status_patch"),))] == 0
        for point in ("PreFilter", "Filter", "Reserve", "Permit", "PreBind", "Bind", "PostBind"):
            labels = (("extension_point", point), ("profile", "pyscheduler"), ("status", "Success"))
            both = point in ("PreFilter", "Filter")  # the pod too big for every node stops there
            count = samples[("scheduler_framework_extension_point_duration_seconds_count", labels)]
            assert count == (2 if both else 1), point
        app.shutting_down.set()
        assert not app.ready()  # /readyz's shutdown check fails from the first moment
        assert not await app.wait_ready(15)  # at once: it will not become ready again
    finally:
        app.shutting_down.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 20)


async def test_waiting_for_readiness_ends_when_the_app_stops_before_it_is_ready(tmp_path):
    config = default_config()
    config.leader_election.leader_elect = False
    app = SchedulerApp(config, kubeconfig=str(tmp_path / "missing"), serving=local_serving())
    task = asyncio.create_task(app.run())
    assert not app.ready()
    began = time.monotonic()
    assert not await app.wait_ready(30)
    assert time.monotonic() - began < 10  # it ended with the app, not with its timeout
    assert await task == 1  # the kubeconfig does not exist: it cannot reach the cluster
    assert not app.ready()


@pytest.mark.slow
async def test_killing_the_leader_hands_over_within_lease_duration_and_binds_each_pod_once(sim, tmp_path):
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: true\n"
        "  resourceNamespace: default\n"
        f"  leaseDuration: {LEASE_DURATION}s\n"
        f"  renewDeadline: {RENEW_DEADLINE}s\n"
        f"  retryPeriod: {RETRY_PERIOD}s\n"
    )
    script = os.path.join(os.path.dirname(sys.executable), "pyscheduler")
    processes = {}
    for name in ("replica-a", "replica-b"):
        processes[name] = await asyncio.create_subprocess_exec(
            script,
            "run",
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
            "--port",
            "0",
            env={**os.environ, "POD_NAME": name},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
    try:
        holder = await eventually(lambda: lease_holder(sim), timeout=30)
        leader = holder.split("_", 1)[0]
        for i in range(20):
            await sim.create("pods", pod_manifest(f"load-{i}"))
        processes[leader].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        await eventually(lambda: lease_holder(sim) and not lease_holder(sim).startswith(leader), timeout=10)
        assert time.monotonic() - killed_at < LEASE_DURATION + RETRY_PERIOD + 1.0
        for i in range(20, 30):
            await sim.create("pods", pod_manifest(f"load-{i}"))
        await eventually(lambda: all(node_of(sim, f"load-{i}") for i in range(30)), timeout=30)
        scheduled = [
            e
            for e in sim.store.list("events.events.k8s.io", namespace="default")
            if e.get("reason") == "Scheduled"
        ]
        per_pod = {}
        for event in scheduled:
            name = event["regarding"]["name"]
            per_pod[name] = per_pod.get(name, 0) + (event.get("series") or {}).get("count", 1)
        assert all(count == 1 for count in per_pod.values()), per_pod
    finally:
        for process in processes.values():
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes.values():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), 20)
