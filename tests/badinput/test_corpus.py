"""The bad-input corpus served to a running scheduler: docs/architecture.md, Principles, "Never
crash the loop on bad input".

Every object of ``corpus.py`` is stored past the local endpoint's validation (its ``inject_raw``
fault hook), half before the scheduler starts (it arrives in the first LIST), half after (by
WATCH), next to good nodes and good pods. Each malformed object must be reported exactly once,
by one log line naming it and the field; a pending pod of ours also gets a FailedScheduling
event and PodScheduled=False; every good and merely hostile pod is bound; nothing raises; the
scheduler stays up and ready; and a relist (after an endpoint restart: every watch gets 410)
reports nothing again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from simcluster import SimCluster
from tests.badinput.corpus import (
    ACCEPTED,
    NAMESPACE,
    REFUSED,
    UNSCHEDULABLE,
    Case,
    bad_cases,
    corpus,
    mutated,
)
from tests.support.cluster import (
    eventually,
    node_of,
    pod,
    pod_manifest,
    scheduled_condition,
    start_scheduler,
)

__all__ = ["start_scheduler"]  # the fixture, shared with the integration tests

INFORMER_LOG = "scheduler.client.informer"


def inject(sim: SimCluster, case: Case) -> None:
    namespace = NAMESPACE if case.namespaced else None
    sim.faults.inject_raw(case.resource, case.obj, name=case.name, namespace=namespace)


def report_key(case: Case) -> str:
    return f"skipping malformed {case.kind} {case.shown}: {case.mentions}"


def reports(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == INFORMER_LOG and "skipping malformed" in r.getMessage()
    ]


def failed_scheduling(sim: SimCluster, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in sim.store.list("events.events.k8s.io", namespace=NAMESPACE)
        if (e.get("regarding") or {}).get("name") == name and e.get("reason") == "FailedScheduling"
    ]


def reported_unschedulable(sim: SimCluster, case: Case) -> bool:
    condition = scheduled_condition(sim, case.name) or {}
    events = failed_scheduling(sim, case.name)
    return (
        condition.get("status") == "False"
        and condition.get("reason") == "Unschedulable"
        and condition.get("message", "").startswith("malformed pod: ")
        and case.mentions in condition["message"]
        and len(events) == 1
        and events[0]["type"] == "Warning"
        and events[0]["note"] == condition["message"]
    )


def refused_by_a_plugin(sim: SimCluster, case: Case) -> bool:
    condition = scheduled_condition(sim, case.name) or {}
    return (
        condition.get("status") == "False"
        and bool(condition.get("message"))
        and not condition["message"].startswith("malformed")
        and bool(failed_scheduling(sim, case.name))
        and not node_of(sim, case.name)
    )


async def none_left(names: Callable[[], list[str]], timeout: float = 15.0) -> None:
    """Wait until ``names()`` is empty; fail naming what is left."""
    try:
        await eventually(lambda: not names(), timeout=timeout)
    except AssertionError:
        raise AssertionError(f"still waiting for {names()}") from None


def test_the_corpus_is_large_and_each_report_is_told_apart() -> None:
    bad = bad_cases()
    assert len(bad) >= 100
    assert {c.resource for c in corpus()} >= {
        "pods",
        "nodes",
        "persistentvolumes",
        "persistentvolumeclaims",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "namespaces",
        "services",
        "replicationcontrollers",
        "replicasets",
        "statefulsets",
        "poddisruptionbudgets",
        "volumeattachments",
    }
    keys = [report_key(c) for c in bad]
    clashes = [(a, b) for a in keys for b in keys if a is not b and b.startswith(a)]
    assert clashes == [], "a report line must match exactly one case"


async def test_every_bad_object_is_reported_once_and_scheduling_goes_on(
    start_scheduler: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cases = corpus()
    bad = bad_cases()
    ours_pending = [c for c in cases if c.outcome == UNSCHEDULABLE]
    refused = [c for c in cases if c.outcome == REFUSED]
    hostile_pods = [c.name for c in cases if c.outcome == ACCEPTED and c.resource == "pods"]
    good = [f"good-{i}" for i in range(20)]
    caplog.set_level(logging.INFO, logger=INFORMER_LOG)
    async with SimCluster(nodes=4, controllers=False, bookmark_interval=0.5) as sim:
        for case in cases[::2]:
            inject(sim, case)
        for name in good[:10]:
            await sim.create("pods", pod_manifest(name, cpu="50m"))
        app = await start_scheduler(sim)
        for case in cases[1::2]:
            inject(sim, case)
        for name in good[10:]:
            await sim.create("pods", pod_manifest(name, cpu="50m"))

        await none_left(lambda: [n for n in good + hostile_pods if not node_of(sim, n)])
        empty_nodes = {"node-without-status", "node-nothing-allocatable"}  # nothing fits on them
        assert not [n for n in good + hostile_pods if node_of(sim, n) in empty_nodes]
        await none_left(lambda: [c.name for c in ours_pending if not reported_unschedulable(sim, c)])
        await none_left(lambda: [c.name for c in refused if not refused_by_a_plugin(sim, c)])
        await eventually(lambda: len(reports(caplog)) >= len(bad))

        lines = reports(caplog)
        for case in bad:
            matching = [line for line in lines if report_key(case) in line]
            assert len(matching) == 1, (case.name, report_key(case), matching)
        assert len(lines) == len(bad), "only the malformed objects are reported, each once"
        assert not [r for r in caplog.records if r.exc_info], "bad data is no exception"
        quiet = [c for c in cases if c.outcome not in (UNSCHEDULABLE, REFUSED)]
        assert [c.name for c in quiet if failed_scheduling(sim, c.name)] == []

        # A relist sees every malformed object again and says nothing: restart the endpoint, so
        # that every watch resumes into 410 Gone and every informer lists anew.
        before = sim.store.revision
        relisted = len([r for r in caplog.records if "too old, relisting" in r.getMessage()])
        await sim.restart()
        names = list(app.informers.synced())
        await eventually(
            lambda: (
                len([r for r in caplog.records if "too old, relisting" in r.getMessage()]) - relisted
                >= len(names)
            )
        )
        await eventually(
            lambda: all(int(app.informers[n].resource_version or 0) > before for n in names), timeout=10
        )
        assert reports(caplog) == lines

        # Still running and ready: a new pod is scheduled as usual.
        await sim.create("pods", pod_manifest("after-the-storm", cpu="50m"))
        await eventually(lambda: node_of(sim, "after-the-storm"))
        assert app.ready()


async def test_an_object_that_turns_bad_keeps_its_last_good_version_and_new_problems_are_reported(
    start_scheduler: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=INFORMER_LOG)
    async with SimCluster(nodes=2, controllers=False, bookmark_interval=0.5) as sim:
        await sim.create("pods", pod_manifest("too-big", cpu="64"))  # pending: no node has 64 cpu
        app = await start_scheduler(sim)
        first = await eventually(lambda: scheduled_condition(sim, "too-big"))
        assert "Insufficient cpu" in first["message"]

        # A good node turns bad: it keeps its last good version (pods may still go there).
        node = sim.store.get("nodes", None, "node-0001")
        sim.faults.inject_raw("nodes", mutated(node, "status.allocatable[cpu]", "abc"))
        await eventually(lambda: any("node-0001" in line for line in reports(caplog)))
        assert [line for line in reports(caplog) if "node-0001" in line] == [
            "informer nodes: skipping malformed Node node-0001: status.allocatable[cpu]: "
            'invalid quantity "abc"; keeping its last good version'
        ]
        assert "node-0001" in app.informers["nodes"].store

        # A pending pod of ours turns bad: reported once, told why, and no longer scheduled.
        stored = pod(sim, "too-big")
        bad = mutated(stored, "spec.containers[0].resources.requests[cpu]", "lots")
        sim.faults.inject_raw("pods", bad)
        await eventually(
            lambda: (scheduled_condition(sim, "too-big") or {}).get("message", "").startswith("malformed")
        )
        assert scheduled_condition(sim, "too-big")["message"] == (
            'malformed pod: spec.containers[0].resources.requests[cpu]: invalid quantity "lots"'
        )
        assert not app.queue.has(stored["metadata"]["uid"])

        # The same problem in a new version is not news; another problem is.
        seen = sim.faults.inject_raw("pods", mutated(bad, "metadata.labels[touched]", "yes"))
        sim.faults.inject_raw("nodes", mutated(node, "status.allocatable[cpu]", "xyz"))
        await eventually(lambda: any('"xyz"' in line for line in reports(caplog)))
        await eventually(lambda: int(app.pod_informer.resource_version or 0) >= seen)
        pod_lines = [line for line in reports(caplog) if "too-big" in line]
        assert len(pod_lines) == 1 and pod_lines[0].endswith("; keeping its last good version")

        # Fixed: a good version brings the pod back to the queue (and it gets bound once it fits).
        sim.faults.inject_raw("pods", mutated(stored, "spec.containers[0].resources.requests[cpu]", "100m"))
        await eventually(lambda: node_of(sim, "too-big"))
