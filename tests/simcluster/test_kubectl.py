"""The real kubectl binary against the simulator: discovery, get, apply, describe, delete."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simcluster import SimCluster
from tests.support.kubectl import KUBECTL, needs_kubectl

pytestmark = needs_kubectl

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      schedulerName: pyscheduler
      containers:
        - name: nginx
          image: nginx:1.27
          resources:
            requests: {cpu: 100m, memory: 64Mi}
"""


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator:
    async with SimCluster(nodes=5, kubelet_delay=0.01) as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        binary = str(KUBECTL)

        async def run(*args: str, check: bool = True) -> str:
            proc = await asyncio.create_subprocess_exec(
                binary,
                "--kubeconfig",
                str(kubeconfig),
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=tmp_path,
            )
            out, err = await proc.communicate()
            if check:
                assert proc.returncode == 0, err.decode()
            return out.decode() + (err.decode() if not check else "")

        run.sim = sim  # type: ignore[attr-defined]
        yield run


async def test_kubectl_get_nodes_lists_every_node_with_its_status(kubectl) -> None:
    out = await kubectl("get", "nodes")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:2] for line in lines[1:]] == [[f"node-000{i}", "Ready"] for i in range(5)]


async def test_kubectl_apply_of_a_deployment_creates_its_pods(kubectl, tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml").write_text(DEPLOYMENT)
    assert "deployment.apps/web created" in await kubectl("apply", "-f", "deployment.yaml")
    for _ in range(100):
        pods = json.loads(await kubectl("get", "pods", "-o", "json"))["items"]
        if len(pods) == 3:
            break
        await asyncio.sleep(0.02)
    assert len(pods) == 3
    assert {p["spec"]["schedulerName"] for p in pods} == {"pyscheduler"}
    assert {p["status"]["phase"] for p in pods} == {"Pending"}
    # applying again with a change goes through the strategic-merge-patch path
    (tmp_path / "deployment.yaml").write_text(DEPLOYMENT.replace("replicas: 3", "replicas: 1"))
    assert "deployment.apps/web configured" in await kubectl("apply", "-f", "deployment.yaml")
    for _ in range(100):
        if len(kubectl.sim.store.list("pods", "default")) == 1:
            break
        await asyncio.sleep(0.02)
    assert len(kubectl.sim.store.list("pods", "default")) == 1


async def test_kubectl_describe_pod_shows_the_controller_and_requests(kubectl, tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml").write_text(DEPLOYMENT)
    await kubectl("apply", "-f", "deployment.yaml")
    for _ in range(100):
        names = (await kubectl("get", "pods", "-o", "name")).split()
        if names:
            break
        await asyncio.sleep(0.02)
    out = await kubectl("describe", names[0])
    assert "Controlled By:  ReplicaSet/web-" in out
    assert "cpu:        100m" in out
    assert "Status:         Pending" in out


async def test_kubectl_delete_removes_the_deployment_and_its_pods(kubectl, tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml").write_text(DEPLOYMENT)
    await kubectl("apply", "-f", "deployment.yaml")
    assert 'deployment.apps "web" deleted' in await kubectl("delete", "-f", "deployment.yaml")
    for _ in range(100):
        if not kubectl.sim.store.list("pods"):
            break
        await asyncio.sleep(0.02)
    assert kubectl.sim.store.list("pods") == []
    assert "NotFound" in await kubectl("get", "deployment", "web", check=False)


def test_the_kubectl_under_test_is_v1_36_from_the_virtualenv() -> None:
    assert Path(str(KUBECTL)).parent == Path(sys.executable).parent
    argv = [str(KUBECTL), "version", "--client"]
    version = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert version.stdout.splitlines()[0].startswith("Client Version: v1.36.")
