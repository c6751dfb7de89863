"""Everyday kubectl v1.36 against the local endpoint with the scheduler running: each command with
kubectl's default flags, its exit code and the part of its output a user relies on.

The commands run in order against one cluster (each builds on the ones before), as an operator's
session would: create a namespace and a workload, watch it roll out, scale and patch it, see why a
pod is pending, cordon and drain a node, clean up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.serving.options import ServingOptions
from simcluster import SimCluster
from tests.support.kubectl import Kubectl, needs_kubectl

pytestmark = [*needs_kubectl, pytest.mark.slow]

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: conf, labels: {app: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: pyscheduler
      containers:
        - name: c
          image: nginx:1.27
          resources: {requests: {cpu: 100m, memory: 64Mi}}
"""

TOO_BIG = """\
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: conf}
spec:
  schedulerName: pyscheduler
  containers:
    - name: c
      image: nginx:1.27
      resources: {requests: {cpu: "64"}}
"""


@dataclass(frozen=True, slots=True)
class Step:
    args: tuple[str, ...]
    contains: tuple[str, ...] = ()
    code: int = 0
    stdin: str | None = None


def step(*args: str, contains: tuple[str, ...] | str = (), code: int = 0, stdin: str | None = None) -> Step:
    return Step(args, (contains,) if isinstance(contains, str) else contains, code, stdin)


SESSION = [
    step("version", contains="Server Version: v1.36"),
    step("cluster-info", contains="is running at"),
    step("api-resources", contains=("pods", "deployments", "customresourcedefinitions")),
    step("api-versions", contains=("apps/v1", "events.k8s.io/v1")),
    step("get", "nodes", contains=("node-0000", "Ready")),
    step("get", "nodes", "-o", "wide", contains="INTERNAL-IP"),
    step("create", "namespace", "conf", contains="namespace/conf created"),
    step("create", "configmap", "cfg", "--from-literal=a=b", "-n", "conf", contains="configmap/cfg created"),
    step("create", "secret", "generic", "s", "--from-literal=p=q", "-n", "conf", contains="secret/s created"),
    step("create", "serviceaccount", "bot", "-n", "conf", contains="serviceaccount/bot created"),
    step(
        "create",
        "priorityclass",
        "high",
        "--value=1000",
        contains="priorityclass.scheduling.k8s.io/high created",
    ),
    step("apply", "--dry-run=server", "-f", "-", stdin=DEPLOYMENT, contains="(server dry run)"),
    step("apply", "-f", "-", stdin=DEPLOYMENT, contains="deployment.apps/web created"),
    step(
        "rollout",
        "status",
        "deployment/web",
        "-n",
        "conf",
        "--timeout=30s",
        contains="successfully rolled out",
    ),
    step("get", "pods", "-n", "conf", "-l", "app=web", contains="Running"),
    step("get", "deployment", "web", "-n", "conf", "-o", "jsonpath={.status.readyReplicas}", contains="3"),
    step("describe", "deployment", "web", "-n", "conf", contains=("Replicas:", "3 desired")),
    step("scale", "deployment", "web", "--replicas=5", "-n", "conf", contains="deployment.apps/web scaled"),
    step(
        "wait",
        "--for=jsonpath={.status.readyReplicas}=5",
        "deployment/web",
        "-n",
        "conf",
        "--timeout=30s",
        contains="condition met",
    ),
    step("label", "deployment", "web", "tier=frontend", "-n", "conf", contains="labeled"),
    step("annotate", "deployment", "web", "note=x", "-n", "conf", contains="annotated"),
    step(
        "patch",
        "deployment",
        "web",
        "-n",
        "conf",
        "--type=merge",
        "-p",
        '{"spec":{"replicas":2}}',
        contains="patched",
    ),
    step("set", "image", "deployment/web", "c=nginx:1.28", "-n", "conf", contains="image updated"),
    step("rollout", "history", "deployment/web", "-n", "conf", contains="REVISION"),
    step(
        "create",
        "deployment",
        "other",
        "--image=nginx",
        "-n",
        "conf",
        contains="deployment.apps/other created",
    ),
    step("expose", "deployment", "web", "--port=80", "-n", "conf", contains="service/web exposed"),
    step("get", "services", "-n", "conf", contains=("web", "ClusterIP")),
    step(
        "create",
        "pdb",
        "web-pdb",
        "--selector=app=web",
        "--min-available=1",
        "-n",
        "conf",
        contains="created",
    ),
    step("create", "job", "once", "--image=busybox", "-n", "conf", contains="job.batch/once created"),
    step("apply", "-f", "-", stdin=TOO_BIG, contains="pod/big created"),
    step("describe", "pod", "big", "-n", "conf", contains=("FailedScheduling", "0/3 nodes are available")),
    step("get", "events", "-n", "conf", "--field-selector", "reason=FailedScheduling", contains="pod/big"),
    step("events", "-n", "conf", "--for", "pod/big", contains="FailedScheduling"),
    step("explain", "pod.spec.schedulerName", contains="schedulerName"),
    step("auth", "can-i", "create", "pods", "-n", "conf", contains="yes"),
    step("auth", "can-i", "--list", "-n", "conf", contains=("Resources", "*.*")),  # allow-all by default
    step("taint", "node", "node-0000", "dedicated=gpu:NoSchedule", contains="tainted"),
    step("cordon", "node-0001", contains="cordoned"),
    step("uncordon", "node-0001", contains="uncordoned"),
    step(
        "drain",
        "node-0002",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--force",
        "--timeout=30s",
        contains="drained",
    ),
    step("get", "all", "-n", "conf", contains=("deployment.apps/web", "service/web")),
    step("delete", "deployment", "other", "-n", "conf", contains='deployment.apps "other" deleted'),
    step("get", "deployment", "other", "-n", "conf", code=1, contains="NotFound"),
    step("delete", "namespace", "conf", "--wait=false", contains='namespace "conf" deleted'),
]


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with SimCluster(nodes=3, kubelet_delay=0.01) as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        config = default_config()
        config.leader_election.leader_elect = False
        app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=ServingOptions("127.0.0.1", 0))
        task = asyncio.create_task(app.run())
        try:
            assert await app.wait_ready(15), "the scheduler never synced"
            yield Kubectl(sim, kubeconfig, tmp_path)
        finally:
            app.shutting_down.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 15)


async def test_an_operators_session_of_everyday_commands(session: Kubectl) -> None:
    for s in SESSION:
        result = await session.run(*s.args, check=False, stdin=s.stdin)
        shown = f"kubectl {' '.join(s.args)} -> {result.code}\n{result.out}{result.err}"
        assert result.code == s.code, shown
        for text in s.contains:
            assert text in result.out + result.err, shown


async def test_get_watch_prints_rows_with_columns_until_its_timeout(session: Kubectl) -> None:
    await session("create", "deployment", "watched", "--image=nginx", "--replicas=2")
    result = await session.run("get", "pods", "-w", "--request-timeout=2s", check=False)
    header, *rows = [line for line in result.out.splitlines() if line.strip()]
    assert header.split()[:3] == ["NAME", "READY", "STATUS"]
    assert rows and all(row.startswith("watched-") for row in rows)
