"""Fixtures for the simulated cluster: an in-process endpoint and a real client bound to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from simcluster import SimCluster


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=3, kubelet=True, kubelet_delay=0.01, bookmark_interval=0.1) as cluster:
        yield cluster


@pytest.fixture
async def api_client(sim: SimCluster, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    """kubernetes_asyncio configured from the kubeconfig the simulator writes, as a user would."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(sim.write_kubeconfig(tmp_path / "kubeconfig")), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


def make_pod(
    name: str, scheduler: str = "pyscheduler", labels: dict[str, str] | None = None, **spec: object
) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}], **spec},
    }


@pytest.fixture
def pod():
    """Build a minimal valid Pod manifest: ``pod("web-1", labels={...}, nodeName="node-0000")``."""
    return make_pod
