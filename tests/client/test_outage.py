"""While the API server is unreachable, one line per round instead of one per component."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from scheduler.client.outage import OutageLog
from scheduler.testing import FakeClock


async def test_an_outage_is_logged_once_then_summarised_per_interval_then_its_end(caplog) -> None:
    clock = FakeClock()
    outage = OutageLog(interval=10.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="scheduler.outage"):
        for _ in range(25):
            for component in [f"informer {name}" for name in ("pods", "nodes", "pvcs")] + ["lease"]:
                outage.failed(component, ConnectionRefusedError("connect call failed ('10.0.0.1', 6443)"))
            await clock.advance(1.0)
        for component in outage.failing:
            outage.recovered(component)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 4  # the first failure, two summaries (10 s, 20 s), the recovery
    assert lines[0].startswith("API request failed (informer pods: connect call failed")
    assert lines[1] == (
        "API server unreachable for 10s; waiting: informer nodes, informer pods, informer pvcs, lease; "
        "last error: connect call failed ('10.0.0.1', 6443)"
    )
    assert lines[-1] == "API server answering again after 25s"


def test_a_component_that_recovers_alone_does_not_end_the_outage(caplog) -> None:
    outage = OutageLog(clock=FakeClock())
    with caplog.at_level(logging.INFO, logger="scheduler.outage"):
        outage.failed("informer pods", "boom")
        outage.failed("lease", "boom")
        outage.recovered("informer pods")
    assert outage.failing == ["lease"]
    assert [r.getMessage() for r in caplog.records] == ["API request failed (informer pods: boom); retrying"]


@pytest.mark.slow
async def test_a_scheduler_cut_off_from_its_api_server_logs_a_line_per_round(tmp_path, caplog) -> None:
    from scheduler.app import SchedulerApp
    from scheduler.config import default_config
    from scheduler.serving.options import ServingOptions
    from simcluster import SimCluster

    async with SimCluster(nodes=3, kubelet=False) as sim:
        config = default_config()
        config.leader_election.leader_elect = False
        app = SchedulerApp(
            config,
            kubeconfig=str(sim.write_kubeconfig(tmp_path / "kc")),
            serving=ServingOptions(bind_address="127.0.0.1", port=0),
        )
        app.outage = OutageLog(interval=1.0)  # a summary a second: the restart lasts 2.5 s
        task = asyncio.create_task(app.run())
        try:
            assert await app.wait_ready(10)
            with caplog.at_level(logging.INFO):
                began = time.monotonic()
                await sim.restart(down_for=2.5)  # 16 informers lose their watches at once
                for _ in range(1000):
                    if not app.outage.failing:
                        break
                    await asyncio.sleep(0.02)
                lasted = time.monotonic() - began
            assert app.outage.failing == []
            warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert all(r.name == "scheduler.outage" for r in warnings), [r.getMessage() for r in warnings]
            # the first failure and a summary per second, not 16 lines per retry round
            assert 1 <= len(warnings) <= 2 + lasted
        finally:
            app.shutting_down.set()
            await asyncio.wait_for(task, 20)
