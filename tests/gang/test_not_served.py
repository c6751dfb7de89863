"""Where the cluster does not serve scheduling.k8s.io/v1alpha2: one log line, no gang plugins, the
scheduler ready and scheduling as usual."""

from __future__ import annotations

import logging

import pytest

from tests.support.cluster import eventually
from tests.support.gang import WORKLOAD_API, NewCluster, StartScheduler, member, node_of


async def test_without_the_workload_api_the_gates_are_off_and_pods_schedule_alone(
    new_cluster: NewCluster, start_scheduler: StartScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler")
    sim = await new_cluster(nodes=2, bookmark_interval=0.5, disabled_apis=(WORKLOAD_API,))
    app = await start_scheduler(sim)  # returns once ready
    said = [r.getMessage() for r in caplog.records if "does not serve" in r.getMessage()]
    assert len(said) == 1
    assert "scheduling.k8s.io/v1alpha2/podgroups" in said[0] and "GangScheduling" in said[0]
    assert "GangScheduling" not in app.frameworks["pyscheduler"].plugins
    assert app.scheduler is not None and app.scheduler.pod_groups is None
    # spec.schedulingGroup is then just a field: the pod is scheduled on its own
    await sim.create("pods", member("alone", "missing-group", cpu="1"))
    await eventually(lambda: node_of(sim, "alone"))
