"""Shadow mode on the local API endpoint: another scheduler (a test binder) binds its pods where
the test says; pyscheduler only decides, writes nothing, and reports how the two compare."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from scheduler import policy
from scheduler.app import SchedulerApp
from scheduler.cmd import run as run_command
from scheduler.config import default_config
from simcluster import SimCluster
from simcluster.access import ADMIN_TOKEN
from simcluster.faults import LatencyRule
from tests.support.cluster import eventually, pod_manifest

OTHER = "default-scheduler"
READS = {"get", "list", "watch"}
REVIEWS = {"tokenreviews", "subjectaccessreviews"}  # the scheduler's port checking its callers


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=3, kubelet=False, controllers=False) as cluster:
        # node-0000 is busier: it scores below the two empty nodes, which tie
        busy = pod_manifest("busy", cpu="2", memory="4Gi", scheduler_name="someone", nodeName="node-0000")
        await cluster.create("pods", busy)
        yield cluster


class RequestLog(LatencyRule):
    """A latency rule that never applies: it only notes every (verb, resource) served over HTTP."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.seen: list[tuple[str, str]] = []

    def applies(self, verb: str, resource: str) -> bool:
        self.seen.append((verb, resource))
        return False


def record_requests(sim: SimCluster) -> list[tuple[str, str]]:
    log = RequestLog()
    sim.faults.latencies.append(log)
    return log.seen


async def other_scheduler_binds(sim: SimCluster, name: str, node: str) -> None:
    """The other scheduler: binds the pod to ``node``, in process (no HTTP request)."""
    sim.api.bind("default", name, {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}})


async def test_decisions_are_compared_with_the_other_schedulers_bindings(sim, start_scheduler):
    app = await start_scheduler(sim, shadow=OTHER)
    requests = record_requests(sim)
    assert app.shadow is not None
    shadow = app.shadow

    async def decided(name: str, **spec: Any) -> Any:
        created = await sim.create("pods", pod_manifest(name, scheduler_name=OTHER, **spec))
        uid = created["metadata"]["uid"]
        ours = await eventually(lambda: shadow.tracked.get(uid))
        assert not app.queue.has(uid)  # never in the scheduling queue
        return ours

    ours = await decided("tie")
    assert sorted(ours.top) == ["node-0001", "node-0002"]
    await other_scheduler_binds(sim, "tie", next(node for node in ours.top if node != ours.chosen))
    await eventually(lambda: shadow.totals["same_top_set"] == 1)

    ours = await decided("same")
    await other_scheduler_binds(sim, "same", ours.chosen)
    await eventually(lambda: shadow.totals["same_node"] == 1)

    ours = await decided("elsewhere")
    assert "node-0000" not in ours.top
    await other_scheduler_binds(sim, "elsewhere", "node-0000")
    await eventually(lambda: shadow.totals["different"] == 1)

    ours = await decided("huge", cpu="64")
    assert ours.chosen == "" and ours.message.startswith("0/3 nodes are available: 3 Insufficient cpu.")
    await other_scheduler_binds(sim, "huge", "node-0001")
    await eventually(lambda: shadow.totals["would_be_pending"] == 1)
    assert shadow.totals == {"same_node": 1, "same_top_set": 1, "different": 1, "would_be_pending": 1}

    metrics = app.metrics.render()[0].decode()
    # the decisions are not the scheduler's cycles: its extension-point metrics do not count them
    assert "scheduler_framework_extension_point_duration_seconds_count" not in metrics
    for result in ("same_node", "same_top_set", "different", "would_be_pending"):
        assert f'pyscheduler_shadow_decisions_total{{result="{result}"}} 1.0' in metrics

    assert app.server is not None
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{app.server.url}/debug/shadow", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, ssl=False
        ) as response,
    ):
        assert response.status == 200
        report = await response.json()
    assert report["scheduler"] == OTHER and report["profile"] == "pyscheduler"
    assert (report["pending"], report["waiting"], report["undecided"]) == (0, 0, 0)
    different, pending = report["recentDisagreements"]
    assert (different["pod"], different["result"], different["boundTo"]) == (
        "default/elsewhere",
        "different",
        "node-0000",
    )
    assert different["ourVerdictOnBoundNode"].startswith("feasible, total score ")
    on_ours, on_theirs = different["scores"][different["ours"]], different["scores"]["node-0000"]
    assert on_ours["total"] > on_theirs["total"]  # each plugin's scores on both nodes
    assert on_ours["NodeResourcesFit"] > on_theirs["NodeResourcesFit"]  # node-0000 is the busier one
    assert (pending["pod"], pending["result"], pending["ours"]) == ("default/huge", "would_be_pending", "")
    assert pending["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert pending["ourVerdictOnBoundNode"] == "rejected by NodeResourcesFit: Insufficient cpu"

    # nothing written: no binding, status, event or nomination, only reads (and the port's reviews)
    writes = [
        (verb, resource) for verb, resource in requests if verb not in READS and resource not in REVIEWS
    ]
    assert writes == []
    for name in ("tie", "same", "elsewhere", "huge"):
        stored = sim.store.get("pods", "default", name)
        conditions = (stored.get("status") or {}).get("conditions") or []
        assert [c["status"] for c in conditions] == ["True"]  # only the binding's own PodScheduled
        assert not (stored.get("status") or {}).get("nominatedNodeName")
    assert not sim.store.list("events.events.k8s.io", namespace="default")


def test_shadow_may_name_default_scheduler_but_not_one_of_our_profiles(capsys):
    config = default_config()
    assert policy.refuse_default_scheduler(config) is None
    assert policy.refuse_shadow(config, OTHER) is None
    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert run_command.main(parser.parse_args(["--shadow", "pyscheduler"])) == 2
    assert (
        'refusing --shadow "pyscheduler": it is one of pyscheduler\'s own profiles' in capsys.readouterr().err
    )
    with pytest.raises(ValueError, match="own profiles"):
        SchedulerApp(config, shadow="pyscheduler")
