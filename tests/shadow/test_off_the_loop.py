"""Shadow decisions are made off the scheduling loop, in process (no API server): a decision as
slow as the test wants delays none of pyscheduler's own bindings, and a flooded backlog drops
(and counts) rather than waits."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from prometheus_client import CollectorRegistry

from scheduler.api import Pod
from scheduler.build import DiscardEvents, DiscardStatus, SchedulerParts, build_scheduler
from scheduler.config import PluginRef, default_config
from scheduler.framework import CycleState, NodeInfo, Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.shadow import ShadowMode
from scheduler.testing import FakeClient, make_node, make_pod

OTHER = "default-scheduler"
HOLD_AT_MOST = 60.0  # seconds a held decision waits for its release before going on anyway


class HeldForShadowedPods:
    """A Filter that, for the shadowed scheduler's pods, waits until ``release`` exists: a shadow
    decision as slow as the test wants. pyscheduler's own pods pass at once."""

    name: ClassVar[str] = "HeldForShadowedPods"
    release: ClassVar[Path | None] = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        deadline = time.monotonic() + HOLD_AT_MOST
        while pod.scheduler_name == OTHER and self.release is not None and not self.release.exists():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        return None


def build(client: FakeClient, pods: dict[str, Pod]) -> SchedulerParts:
    config = default_config()
    config.profiles[0].plugins.multi_point.enabled.append(PluginRef(HeldForShadowedPods.name))
    registry = in_tree_registry()
    registry[HeldForShadowedPods.name] = HeldForShadowedPods
    parts = build_scheduler(
        config,
        registry,
        client,
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda pod: pods.get(pod.uid),
    )
    for name in ("n1", "n2"):
        parts.cache.add_node(make_node(name))
    return parts


def shadow_of(parts: SchedulerParts, registry: CollectorRegistry, **options: Any) -> ShadowMode:
    mode = ShadowMode(OTHER, parts.scheduler, parts.frameworks["pyscheduler"], registry, **options)
    mode.start([])
    return mode


def children() -> set[int]:
    """This process's child processes (Linux: every thread's /proc children list)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


async def until(condition: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f}s"
        await asyncio.sleep(0.02)
    return value


async def cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_slow_shadow_decision_does_not_delay_binding(tmp_path: Path) -> None:
    HeldForShadowedPods.release = tmp_path / "release"
    client, pods = FakeClient(), {}
    parts = build(client, pods)
    mode = shadow_of(parts, CollectorRegistry(), forked=True)
    tasks = [asyncio.create_task(mode.run()), asyncio.create_task(parts.scheduler.run())]
    try:
        theirs = make_pod("theirs", scheduler_name=OTHER)
        mode.decide(theirs)
        await until(lambda: mode.report()["deciding"] == 1, "the shadow decision began")

        ours = make_pod("ours")
        pods[ours.uid] = ours
        parts.queue.add(ours)
        bound = "/api/v1/namespaces/default/pods/ours/binding"
        await until(lambda: any(r.path == bound for r in client.requests), "our pod bound")
        # bound while the shadow decision is still held (it waits for the release file)
        assert mode.report()["deciding"] == 1 and mode.tracked == {}

        HeldForShadowedPods.release.touch()
        decision = await until(lambda: mode.tracked.get(theirs.uid), "the shadow decision")
        # the decision saw the cluster as it was when it began: both nodes empty, tied
        assert decision.top == ("n1", "n2") and decision.chosen in decision.top
        assert mode.report()["deciding"] == 0
    finally:
        HeldForShadowedPods.release.touch()
        for task in tasks:
            await cancelled(task)


async def test_cancelling_a_held_decision_ends_its_process(tmp_path: Path) -> None:
    HeldForShadowedPods.release = tmp_path / "never"
    parts = build(FakeClient(), {})
    mode = shadow_of(parts, CollectorRegistry(), forked=True)
    before = children()
    task = asyncio.create_task(mode.run())
    mode.decide(make_pod("theirs", scheduler_name=OTHER))
    await until(lambda: mode.report()["deciding"] == 1, "the shadow decision began")
    assert len(children() - before) == 1  # the process deciding it
    await cancelled(task)  # kills and reaps it
    assert children() == before and mode.report()["deciding"] == 0


async def test_a_flooded_backlog_drops_the_oldest_and_counts_them() -> None:
    registry = CollectorRegistry()
    parts = build(FakeClient(), {})
    mode = shadow_of(parts, registry, max_tracked=2)
    for i in range(5):
        mode.decide(make_pod(f"theirs-{i}", scheduler_name=OTHER))
    assert registry.get_sample_value("pyscheduler_shadow_dropped_total") == 3
    assert (mode.report()["waiting"], mode.report()["dropped"]) == (2, 3)


async def test_a_pod_bound_while_its_batch_is_decided_is_compared_when_its_decision_arrives(
    tmp_path: Path,
) -> None:
    HeldForShadowedPods.release = tmp_path / "release"
    parts = build(FakeClient(), {})
    mode = shadow_of(parts, CollectorRegistry(), forked=True)
    task = asyncio.create_task(mode.run())
    try:
        theirs = make_pod("theirs", scheduler_name=OTHER)
        mode.decide(theirs)
        await until(lambda: mode.report()["deciding"] == 1, "the shadow decision began")
        assert mode.bound(theirs.on_node("n1")) is None  # not decided yet: compared later
        HeldForShadowedPods.release.touch()
        await until(lambda: sum(mode.totals.values()) == 1, "the comparison")
        # both nodes were empty when the decision began: n1 is ours or in our top set
        assert mode.totals["same_node"] + mode.totals["same_top_set"] == 1
        assert mode.undecided_total == 0 and mode.tracked == {}
    finally:
        HeldForShadowedPods.release.touch()
        await cancelled(task)


async def test_a_batch_that_cannot_fork_is_logged_and_the_next_one_is_decided(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    HeldForShadowedPods.release = None
    parts = build(FakeClient(), {})
    mode = shadow_of(parts, CollectorRegistry(), forked=True)
    fork = os.fork
    failures = [OSError(12, "Cannot allocate memory")]

    def failing_once() -> int:
        if failures:
            raise failures.pop()
        return fork()

    monkeypatch.setattr(os, "fork", failing_once)
    monkeypatch.setattr("scheduler.shadow.mode.FAILED_BATCH_PAUSE", 0.0)
    task = asyncio.create_task(mode.run())
    try:
        mode.decide(make_pod("lost", scheduler_name=OTHER))
        await until(lambda: "shadow decisions of 1 pod(s) failed" in caplog.text, "the failure logged")
        later = make_pod("later", scheduler_name=OTHER)
        mode.decide(later)
        await until(lambda: mode.tracked.get(later.uid), "the next batch decided")
    finally:
        await cancelled(task)
