"""`pyscheduler demo`: the scheduler against a local simulated cluster, end to end.

Starts the local API endpoint with nodes of mixed sizes in three zones, a tainted GPU pool and a
node whose two GPUs a simulated DRA driver (gpu.example.com) publishes as partitionable devices
(each card a counter set of 40Gi, offered whole or as two halves of 20Gi), runs the scheduler
in-process against it over real HTTP, creates a Deployment for `pyscheduler`, one for
`default-scheduler` (which must stay Pending and untouched), a pod too big for any node and two
pods each claiming half a GPU through a ResourceClaimTemplate, then prints where everything
landed, why the big pod is pending and which partitions the GPU pods' claims were allocated: the
two halves of one card, sharing its memory.

Exit codes: 0 everything landed as expected; 1 not within ``--timeout``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.serving.options import ServingOptions
from scheduler.testing import deployment_dict
from scheduler.testing.dra import partitioned_gpus
from simcluster import SimCluster

SCHEDULER_NAME = "pyscheduler"
IMAGE = "nginx:1.27"

NODE_TEMPLATE: dict[str, Any] = {
    "nodeGroups": [
        {
            "namePrefix": "small-",
            "count": 3,
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "zones": ["zone-a", "zone-b", "zone-c"],
        },
        {
            "namePrefix": "medium-",
            "count": 3,
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "zones": ["zone-a", "zone-b", "zone-c"],
        },
        {
            "namePrefix": "large-",
            "count": 2,
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "zones": ["zone-a", "zone-b"],
        },
        {
            "namePrefix": "gpu-",
            "count": 2,
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"},
            "labels": {"accelerator": "nvidia"},
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "zones": ["zone-c"],
        },
        {
            "namePrefix": "dra-gpu-",
            "count": 1,
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "zones": ["zone-a"],
            "devices": partitioned_gpus(2),
        },
    ]
}


HUGE_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "too-big", "namespace": "default"},
    "spec": {
        "schedulerName": SCHEDULER_NAME,
        "containers": [{"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "64"}}}],
    },
}


# Half a GPU of the simulated driver's DeviceClass, per pod.
GPU_TEMPLATE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "half-gpu", "namespace": "default"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.example.com",
                            "selectors": [
                                {
                                    "cel": {
                                        "expression": 'device.attributes["gpu.example.com"].profile == "half"'
                                    }
                                }
                            ],
                        },
                    }
                ]
            }
        }
    },
}

GPU_PODS = ("trainer-a", "trainer-b")


def gpu_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [
                {
                    "name": "train",
                    "image": "python:3.13",
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "half-gpu"}],
        },
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=int, default=12, help="replicas of the sample Deployment")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for placements")


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname).1s %(name)s: %(message)s")
    return asyncio.run(run_demo(args.replicas, args.timeout))


async def run_demo(replicas: int, timeout: float) -> int:
    async with SimCluster(node_template=NODE_TEMPLATE, kubelet=True) as sim:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
            print(f"local API endpoint {sim.url} with {len(sim.store.list('nodes'))} simulated nodes")
            config = default_config()
            config.leader_election.leader_elect = False
            app = SchedulerApp(
                config,
                kubeconfig=str(kubeconfig),
                serving=ServingOptions(bind_address="127.0.0.1", port=0, plain_http=True),
            )
            runner = asyncio.create_task(app.run())
            try:
                web = deployment_dict(
                    "web",
                    replicas,
                    requests={"cpu": "500m", "memory": "512Mi"},
                    scheduler_name=SCHEDULER_NAME,
                    image=IMAGE,
                    container="app",
                )
                await sim.create("deployments", web)
                legacy = deployment_dict(  # the default scheduler's: left alone
                    "legacy",
                    2,
                    requests={"cpu": "100m", "memory": "64Mi"},
                    scheduler_name="default-scheduler",
                    image=IMAGE,
                    container="app",
                )
                await sim.create("deployments", legacy)
                await sim.create("pods", HUGE_POD)
                await sim.create("resourceclaimtemplates", GPU_TEMPLATE)
                for name in GPU_PODS:
                    await sim.create("pods", gpu_pod(name))
                ok = await _wait_for_placements(sim, replicas, timeout)
                _report(sim)
            finally:
                app.shutting_down.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner
    return 0 if ok else 1


def _app_pods(sim: Any, app: str) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.store.list("pods", namespace="default")
        if p["metadata"].get("labels", {}).get("app") == app
    ]


def _failed_condition(pod: dict[str, Any] | None) -> dict[str, Any] | None:
    for condition in ((pod or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition
    return None


async def _wait_for_placements(sim: Any, replicas: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        web = _app_pods(sim, "web")
        running = [p for p in web if (p.get("status") or {}).get("phase") == "Running"]
        huge = sim.store.get("pods", "default", "too-big")
        settled = all(_gpu_pod_settled(sim, name) for name in GPU_PODS)
        if len(running) == replicas and _failed_condition(huge) is not None and settled:
            return True
        await asyncio.sleep(0.2)
    print("timed out waiting for the placements", file=sys.stderr)
    return False


def _gpu_claim(sim: Any, pod_name: str) -> dict[str, Any] | None:
    """The claim the resource-claim controller made for a GPU pod, once recorded in its status."""
    pod = sim.store.get("pods", "default", pod_name) or {}
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if status.get("name") == "gpu" and status.get("resourceClaimName"):
            found: dict[str, Any] | None = sim.store.get(
                "resourceclaims", "default", status["resourceClaimName"]
            )
            return found
    return None


def _gpu_pod_settled(sim: Any, pod_name: str) -> bool:
    """Running with its claim allocated, or reported unschedulable."""
    pod = sim.store.get("pods", "default", pod_name)
    if _failed_condition(pod) is not None:
        return True
    claim = _gpu_claim(sim, pod_name)
    allocated = bool(((claim or {}).get("status") or {}).get("allocation"))
    return allocated and ((pod or {}).get("status") or {}).get("phase") == "Running"


def _report_gpu_pod(sim: Any, pod_name: str) -> None:
    pod = sim.store.get("pods", "default", pod_name) or {}
    claim = _gpu_claim(sim, pod_name)
    status = (claim or {}).get("status") or {}
    results = (status.get("allocation") or {}).get("devices", {}).get("results") or []
    if results:
        node = pod.get("spec", {}).get("nodeName", "<pending>")
        devices = ", ".join(f"{r['driver']}/{r['pool']}/{r['device']}" for r in results)
        reserved = ", ".join(r.get("name", "") for r in status.get("reservedFor") or ()) or "nobody"
        print(f"\npod default/{pod_name} runs on {node}; claim {claim['metadata']['name'] if claim else ''}:")
        print(f"  allocated {devices}, reserved for {reserved}")
        return
    condition = _failed_condition(pod)
    print(f"\npod default/{pod_name} (half a gpu.example.com GPU from template half-gpu) is pending:")
    print(
        f"  {condition['reason']}: {condition['message']}"
        if condition
        else "  (no PodScheduled condition yet)"
    )


def _report_shared_gpus(sim: Any) -> None:
    """Which cards the GPU pods share: partitions consuming one counter set."""
    by_card: dict[tuple[str, str], list[str]] = {}
    for name in GPU_PODS:
        results = (((_gpu_claim(sim, name) or {}).get("status") or {}).get("allocation") or {}).get(
            "devices", {}
        )
        for result in results.get("results") or ():
            card = result["device"].rsplit("-half-", 1)[0]
            by_card.setdefault((result["pool"], card), []).append(f"{name} ({result['device']})")
    for (node, card), users in sorted(by_card.items()):
        if len(users) > 1:
            print(f"\nGPU {card} of {node} is shared, its 40Gi split between {' and '.join(users)}")


def _report(sim: Any) -> None:
    zones = {
        n["metadata"]["name"]: n["metadata"]["labels"].get("topology.kubernetes.io/zone", "")
        for n in sim.store.list("nodes")
    }
    print("\nPOD                          NODE         ZONE     PHASE    SCHEDULER")
    for app in ("web", "legacy"):
        for pod in sorted(_app_pods(sim, app), key=lambda p: p["metadata"]["name"]):
            node = pod["spec"].get("nodeName") or "<pending>"
            print(
                f"{pod['metadata']['name']:<28} {node:<12} {zones.get(node, ''):<8} "
                f"{(pod.get('status') or {}).get('phase', ''):<8} {pod['spec'].get('schedulerName')}"
            )
    huge = sim.store.get("pods", "default", "too-big")
    condition = _failed_condition(huge)
    print("\npod default/too-big is pending:")
    print(
        f"  {condition['reason']}: {condition['message']}"
        if condition
        else "  (no PodScheduled condition yet)"
    )
    for name in GPU_PODS:
        _report_gpu_pod(sim, name)
    _report_shared_gpus(sim)
