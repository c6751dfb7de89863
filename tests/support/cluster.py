"""Fixtures that run the real scheduler against the local API endpoint over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.serving.options import ServingOptions
from simcluster import SimCluster


def pod_manifest(
    name: str,
    *,
    cpu: str = "100m",
    memory: str = "64Mi",
    scheduler_name: str = "pyscheduler",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": name}},
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }


def local_serving() -> ServingOptions:
    """The scheduler's defaults (HTTPS, delegated authentication and authorization) on a free
    loopback port."""
    return ServingOptions(bind_address="127.0.0.1", port=0)


async def eventually(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05) -> Any:
    """Poll until ``predicate()`` is truthy; fail the test with its last value otherwise."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value:
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        await asyncio.sleep(interval)
        value = predicate()
    return value


def pod(sim: SimCluster, name: str) -> dict[str, Any] | None:
    return sim.store.get("pods", "default", name)


def node_of(sim: SimCluster, name: str) -> str:
    return ((pod(sim, name) or {}).get("spec") or {}).get("nodeName") or ""


def scheduled_condition(sim: SimCluster, name: str) -> dict[str, Any] | None:
    for condition in ((pod(sim, name) or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            return condition
    return None


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=3, kubelet=True, bookmark_interval=0.5) as cluster:
        yield cluster


class RunningApps:
    """Scheduler apps run in the test's event loop: ``run`` starts one and returns once it serves
    and its informers' initial lists are handled; ``stop`` shuts every one down."""

    def __init__(self) -> None:
        self.started: list[tuple[SchedulerApp, asyncio.Task[int]]] = []

    async def run(self, app: SchedulerApp) -> SchedulerApp:
        task = asyncio.create_task(app.run())
        self.started.append((app, task))
        ready = await app.wait_ready(15)
        assert not task.done(), f"the scheduler exited with {task.result()}"
        assert ready, "the scheduler did not become ready within 15s"
        return app

    async def stop(self) -> None:
        for app, _ in self.started:
            app.shutting_down.set()
        for _, task in self.started:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 15)


@pytest.fixture
async def start_scheduler(tmp_path):
    """Start the scheduler app in-process against a SimCluster; stopped at teardown."""

    running_apps = RunningApps()

    async def start(cluster: SimCluster, **overrides: Any) -> SchedulerApp:
        config = default_config()
        config.leader_election.leader_elect = False
        config.pod_initial_backoff_seconds = overrides.pop("initial_backoff", 0.2)
        config.pod_max_backoff_seconds = overrides.pop("max_backoff", 1.0)
        kubeconfig = cluster.write_kubeconfig(tmp_path / f"kubeconfig-{len(running_apps.started)}")
        app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=local_serving(), **overrides)
        return await running_apps.run(app)

    yield start
    await running_apps.stop()
