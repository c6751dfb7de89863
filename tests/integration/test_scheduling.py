"""The scheduler end to end against the local API endpoint (issue: informers → queue → binding)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from simcluster import SimCluster
from tests.support.cluster import eventually, node_of, pod, pod_manifest, scheduled_condition


def events_for(sim: SimCluster, name: str, reason: str) -> list[dict]:
    return [
        e
        for e in sim.store.list("events.events.k8s.io", namespace="default")
        if (e.get("regarding") or {}).get("name") == name and e.get("reason") == reason
    ]


async def test_pending_pods_are_bound_and_get_a_scheduled_event(sim, start_scheduler):
    await start_scheduler(sim)
    for i in range(6):
        await sim.create("pods", pod_manifest(f"web-{i}"))
    await eventually(lambda: all(node_of(sim, f"web-{i}") for i in range(6)))
    event = await eventually(lambda: events_for(sim, "web-0", "Scheduled"))
    assert event[0]["note"] == f"Successfully assigned default/web-0 to {node_of(sim, 'web-0')}"
    assert event[0]["reportingController"] == "pyscheduler"


async def test_pods_for_other_schedulers_are_left_alone(sim, start_scheduler):
    await start_scheduler(sim)
    await sim.create("pods", pod_manifest("theirs", scheduler_name="default-scheduler"))
    await sim.create("pods", pod_manifest("ours"))
    await eventually(lambda: node_of(sim, "ours"))
    await asyncio.sleep(0.3)
    theirs = pod(sim, "theirs")
    assert not theirs["spec"].get("nodeName")
    assert scheduled_condition(sim, "theirs") is None
    assert not events_for(sim, "theirs", "FailedScheduling")


async def test_an_unschedulable_pod_gets_the_condition_and_upstreams_message(sim, start_scheduler):
    await start_scheduler(sim)
    await sim.create("pods", pod_manifest("huge", cpu="64"))
    condition = await eventually(lambda: scheduled_condition(sim, "huge"))
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    events = await eventually(lambda: events_for(sim, "huge", "FailedScheduling"))
    assert events[0]["type"] == "Warning"
    assert events[0]["note"] == condition["message"]


async def test_no_node_ends_over_its_allocatable_with_our_pods_and_others(sim, start_scheduler):
    # Each node has 4 CPUs; another scheduler's pod already holds 3 of node-0000's.
    other = pod_manifest("other", cpu="3", scheduler_name="default-scheduler", nodeName="node-0000")
    await sim.create("pods", other)
    await start_scheduler(sim)
    for i in range(12):
        await sim.create("pods", pod_manifest(f"fill-{i}", cpu="1"))
    # 3 nodes x 4 CPUs = 12, minus 3 taken: exactly 9 of the 12 fit.
    await eventually(lambda: sum(bool(node_of(sim, f"fill-{i}")) for i in range(12)) == 9)
    await asyncio.sleep(0.5)
    used: dict[str, int] = {}
    for p in sim.store.list("pods"):
        node = p["spec"].get("nodeName")
        if node:
            cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            used[node] = used.get(node, 0) + int(cpu)
    assert used == {"node-0000": 4, "node-0001": 4, "node-0002": 4}
    stuck = [f"fill-{i}" for i in range(12) if not node_of(sim, f"fill-{i}")]
    assert len(stuck) == 3
    assert all(scheduled_condition(sim, name)["reason"] == "Unschedulable" for name in stuck)


async def test_a_410_and_dropped_watches_lose_nothing(sim, start_scheduler):
    await start_scheduler(sim)
    await sim.create("pods", pod_manifest("before"))
    await eventually(lambda: node_of(sim, "before"))
    sim.faults.compact()
    sim.faults.force_gone_next_watch()
    sim.faults.drop_watches()
    for i in range(5):
        await sim.create("pods", pod_manifest(f"after-{i}"))
    await eventually(lambda: all(node_of(sim, f"after-{i}") for i in range(5)))
    sim.faults.drop_watches()
    await sim.create("pods", pod_manifest("last"))
    await eventually(lambda: node_of(sim, "last"))


async def test_a_pod_deleted_while_queued_is_never_bound(sim, start_scheduler):
    api = sim.api
    await sim.create("pods", pod_manifest("doomed", cpu="64"))  # unschedulable: waits in the queue
    await start_scheduler(sim)
    await eventually(lambda: scheduled_condition(sim, "doomed"))
    api.delete(api.resource("pods"), "default", "doomed", {"gracePeriodSeconds": 0})
    # Make room: a node that fits it appears; the deleted pod must not be bound anywhere.
    await sim.create(
        "nodes",
        {
            "metadata": {"name": "big"},
            "status": {
                "allocatable": {"cpu": "128", "memory": "64Gi", "pods": "110"},
                "capacity": {"cpu": "128", "memory": "64Gi", "pods": "110"},
            },
        },
    )
    await sim.create("pods", pod_manifest("probe", cpu="64"))
    await eventually(lambda: node_of(sim, "probe") == "big")
    assert pod(sim, "doomed") is None


def test_a_bad_config_exits_2_naming_the_field(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: pyscheduler\n"
        "  pluginConfig:\n"
        "  - name: NodeResourcesFit\n"
        "    args:\n"
        "      scoringStrategy:\n"
        "        type: Foo\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert 'profiles[0].pluginConfig[0].args.scoringStrategy.type: unknown value "Foo"' in result.stderr


@pytest.mark.slow
async def test_the_console_script_schedules_and_exits_0_on_sigterm(sim, tmp_path):
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    script = os.path.join(os.path.dirname(sys.executable), "pyscheduler")
    process = await asyncio.create_subprocess_exec(
        script,
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--leader-elect=false",
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await sim.create("pods", pod_manifest("via-cli"))
        await eventually(lambda: node_of(sim, "via-cli"), timeout=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()[-2000:]
