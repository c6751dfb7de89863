"""Fixtures: the simulated API endpoint reached through a real kubeconfig, and a tiny scripted
aiohttp server for the protocol corners the simulator does not script (retries, auth headers)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from scheduler.client import KubeClient, load_client_config


@pytest.fixture
async def sim() -> AsyncIterator[Any]:
    sim_module = pytest.importorskip("simcluster")
    cluster = sim_module.SimCluster(nodes=2, kubelet=False, controllers=False, bookmark_interval=0.1)
    async with cluster:
        yield cluster


@pytest.fixture
async def kube(sim: Any, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A KubeClient configured exactly as the scheduler would be, from a kubeconfig file."""
    configuration = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kc")))
    async with KubeClient(configuration, qps=0) as client:
        yield client


@pytest.fixture
def client_for(tmp_path: Path) -> Callable[..., Awaitable[KubeClient]]:
    """``await client_for(url, **kwargs)``: a KubeClient for a server, via a token kubeconfig."""

    async def build(url: str, **kwargs: Any) -> KubeClient:
        kubeconfig = write_kubeconfig(tmp_path / "kc-token", url, "s3cret")
        return KubeClient(await load_client_config(str(kubeconfig)), **kwargs)

    return build


@pytest.fixture
def kubeconfig() -> Callable[..., Path]:
    """``kubeconfig(path, server, token=None)`` writes a one-context kubeconfig file."""
    return write_kubeconfig


def write_kubeconfig(path: Path, server: str, token: str | None = None) -> Path:
    user: dict[str, Any] = {"token": token} if token else {}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def scripted() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Start an aiohttp server whose every request goes to the given handler; returns its URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
def pod() -> Callable[..., dict[str, Any]]:
    return make_pod


def make_pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"schedulerName": "pyscheduler", "containers": [{"name": "c", "image": "busybox"}]},
    }
