"""Shadow mode's background decisions, without an API server: on the loop (with extenders) they
wait while the scheduling loop has pods ready; either way they coalesce a pod's updates, stay
bounded, and count a pod bound before its turn."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry

from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
from scheduler.config import default_config
from scheduler.plugins.registry import in_tree_registry
from scheduler.shadow import ShadowMode
from scheduler.shadow.backlog import Backlog
from scheduler.testing import FakeClient, make_node, make_pod
from tests.support.cluster import eventually

OTHER = "default-scheduler"


@dataclass
class Loop:
    """The scheduling loop as shadow mode sees it: busy or not."""

    busy: bool = False
    seen: list[bool] = field(default_factory=list)

    def __call__(self) -> bool:
        self.seen.append(self.busy)
        return self.busy


Started = tuple[ShadowMode, Loop, CollectorRegistry]


@contextlib.asynccontextmanager
async def started(forked: bool) -> AsyncIterator[Started]:
    parts = build_scheduler(
        default_config(),
        in_tree_registry(),
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
    )
    for name in ("n1", "n2"):
        parts.cache.add_node(make_node(name))
    loop, registry = Loop(), CollectorRegistry()
    fwk = parts.frameworks["pyscheduler"]
    mode = ShadowMode(OTHER, parts.scheduler, fwk, registry, busy=loop, forked=forked)
    mode.start([])
    task = asyncio.create_task(mode.run())
    yield mode, loop, registry
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture(params=[True, False], ids=["forked", "on-the-loop"])
async def shadow(request: pytest.FixtureRequest) -> AsyncIterator[Started]:
    async with started(request.param) as running:
        yield running


@pytest.fixture
async def on_the_loop() -> AsyncIterator[Started]:
    async with started(forked=False) as running:
        yield running


async def test_decisions_on_the_loop_wait_while_the_scheduling_loop_has_pods_ready(on_the_loop):
    mode, loop, _ = on_the_loop
    loop.busy = True
    pod = make_pod("p", scheduler_name=OTHER, requests={"cpu": "1"})
    mode.decide(pod)
    mode.decide(make_pod("p", uid=pod.uid, scheduler_name=OTHER, requests={"cpu": "2"}))
    assert len(mode.backlog) == 1  # the update replaced the waiting version
    await eventually(lambda: loop.seen)  # it looked, found the loop busy ...
    for _ in range(20):
        await asyncio.sleep(0)
    assert mode.tracked == {} and len(mode.backlog) == 1  # ... and decided nothing
    loop.busy = False
    decision = await eventually(lambda: mode.tracked.get(pod.uid))
    assert decision.chosen in ("n1", "n2") and decision.in_top(decision.chosen)
    assert mode.report()["waiting"] == 0


async def test_a_pod_bound_before_its_turn_counts_as_undecided(shadow):
    mode, loop, registry = shadow
    loop.busy = True
    pod = make_pod("early", scheduler_name=OTHER)
    mode.decide(pod)
    assert mode.bound(pod.on_node("n1")) is None
    assert mode.totals == dict.fromkeys(mode.totals, 0) and mode.undecided_total == 1
    assert len(mode.backlog) == 0
    assert registry.get_sample_value("pyscheduler_shadow_undecided_total") == 1


async def test_nothing_is_kept_of_deleted_pods(shadow):
    mode, _, _ = shadow
    pods = [make_pod(f"gone-{i}", scheduler_name=OTHER) for i in range(3)]
    for pod in pods:
        mode.decide(pod)
    await eventually(lambda: len(mode.tracked) == 3)
    for pod in pods:
        mode.forget(pod)
    assert mode.tracked == {} and mode.report()["pending"] == 0
    assert mode.bound(pods[0].on_node("n1")) is None and mode.undecided_total == 0


def test_the_backlog_keeps_the_newest_pods_within_its_limit():
    backlog = Backlog(2)
    for name in ("a", "b", "c"):
        backlog.put(make_pod(name, uid=name))
    assert (len(backlog), backlog.dropped) == (2, 1)
    assert [backlog.pop().name, backlog.pop().name] == ["b", "c"]
