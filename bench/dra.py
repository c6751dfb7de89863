"""Pods with ResourceClaims per second, in process: DynamicResources allocating one device each.

    python -m bench.dra [--nodes 500] [--devices 8] [--pods 4000] [--extended | --partitioned]

Every node publishes one ResourceSlice of ``--devices`` GPUs (model and memory attributes, the
class selects the driver); every pod has its own claim asking for one GPU with more than 32 GB.
The claims' writes (PreBind) land in an in-memory store that is also the claims lister, so the
next cycles see them as the informer would. With ``--extended`` the pods ask for
``example.com/gpu: 1`` instead, which the class serves (DRAExtendedResource): the scheduler
creates each pod's claim at PreBind. With ``--partitioned`` (DRAPartitionableDevices) each GPU
is a counter set of 40Gi offered as three partitions, the whole card and two halves of 20Gi
(a counters slice and a devices slice per node), and each pod asks for a half: the search then
takes each half's counters from what the allocated partitions of its card left. Besides the
rate, the CPU time per pod (the whole scheduler's, all plugins). Upstream's published DRA floors
are 40-70 pods/s at 500 nodes on many-core machines. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import time
from typing import Any

from bench.common import Harness, Result, make_pod
from scheduler.api import Pod
from scheduler.framework import ApiResponse
from scheduler.testing import FakeLister

DRIVER = "gpu.example.com"
CLAIMS_PATH = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
EXTENDED = "example.com/gpu"


class ClaimStore:
    """Stands in for the API server and the claims informer: writes are stored at once."""

    def __init__(self, claims: FakeLister) -> None:
        self.claims = claims
        self.version = 1

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        if method == "PATCH" and path.startswith("/api/v1/namespaces/default/pods/"):
            return ApiResponse(200, {})  # a special claim named in the pod's status
        created = method == "POST" and path == CLAIMS_PATH.rstrip("/")
        if not created and (method != "PUT" or not path.startswith(CLAIMS_PATH)):
            raise RuntimeError(f"unexpected request in the benchmark: {method} {path}")
        self.version += 1
        stored = copy.deepcopy(body)
        meta = stored["metadata"]
        if created:
            meta.update(name=f"{meta['generateName']}{self.version}", uid=f"created-{self.version}")
        meta["resourceVersion"] = str(self.version)
        self.claims.put(stored)
        return ApiResponse(201 if created else 200, stored)


def node_slice(i: int, devices: int) -> dict[str, Any]:
    node = f"node-{i:05d}"
    return {
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{d}",
                    "attributes": {"model": {"string": "A100"}, "memory": {"int": 40 if d % 2 else 80}},
                }
                for d in range(devices)
            ],
        },
    }


def partitioned_slices(i: int, gpus: int) -> list[dict[str, Any]]:
    """A node's GPUs as counter sets of 40Gi, each offered whole and as two halves of 20Gi."""
    node = f"node-{i:05d}"
    spec = {
        "driver": DRIVER,
        "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 2},
    }
    counters = [{"name": f"gpu-{g}", "counters": {"memory": {"value": "40Gi"}}} for g in range(gpus)]
    devices = [
        {
            "name": f"gpu-{g}-{part}",
            "attributes": {
                "model": {"string": "A100"},
                "profile": {"string": "whole" if part == "full" else "half"},
            },
            "consumesCounters": [{"counterSet": f"gpu-{g}", "counters": {"memory": {"value": memory}}}],
        }
        for g in range(gpus)
        for part, memory in (("full", "40Gi"), ("half-a", "20Gi"), ("half-b", "20Gi"))
    ]
    return [
        {"metadata": {"name": f"{node}-counters"}, "spec": {**spec, "sharedCounters": counters}},
        {"metadata": {"name": f"{node}-gpus"}, "spec": {**spec, "devices": devices}},
    ]


def claim(i: int, partitioned: bool = False) -> dict[str, Any]:
    wanted = '.profile == "half"' if partitioned else ".memory > 32"
    selector = {"cel": {"expression": f'device.attributes["{DRIVER}"]{wanted}'}}
    request = {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "selectors": [selector]}}
    return {
        "metadata": {"name": f"claim-{i}", "namespace": "default", "uid": f"c{i}", "resourceVersion": "1"},
        "spec": {"devices": {"requests": [request]}},
    }


async def run(
    nodes: int, devices: int, pods: int, extended: bool = False, partitioned: bool = False
) -> tuple[Result, list[dict[str, Any]]]:
    """The figures and the claims as they ended up."""
    device_class: dict[str, Any] = {
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    if extended:
        device_class["spec"]["extendedResourceName"] = EXTENDED
    claims = FakeLister(() if extended else (claim(i, partitioned) for i in range(pods)))
    slices = (
        [s for i in range(nodes) for s in partitioned_slices(i, devices)]
        if partitioned
        else [node_slice(i, devices) for i in range(nodes)]
    )
    listers = {
        "resourceclaims": claims,
        "resourceslices": FakeLister(slices),
        "deviceclasses": FakeLister([device_class]),
    }
    harness = Harness(nodes, client=ClaimStore(claims), listers=listers)
    measured = [
        extended_pod(i)
        if extended
        else make_pod(
            f"pod-{i}", {"app": "train"}, resourceClaims=[{"name": "gpu", "resourceClaimName": f"claim-{i}"}]
        )
        for i in range(pods)
    ]
    result = await harness.schedule(measured)
    return result, [dict(c) for c in claims.list()]


def extended_pod(i: int) -> Pod:
    """A pod asking for one ``example.com/gpu`` besides its cpu."""
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m", EXTENDED: "1"}}}
    meta = {"name": f"pod-{i}", "namespace": "default", "uid": f"uid-pod-{i}", "labels": {"app": "train"}}
    return Pod.from_dict(
        {"metadata": meta, "spec": {"schedulerName": "pyscheduler", "containers": [container]}}
    )


async def report(nodes: int, devices: int, pods: int, extended: bool, partitioned: bool) -> None:
    started = time.process_time()
    result, claims = await run(nodes, devices, pods, extended, partitioned)
    cpu_ms = (time.process_time() - started) * 1000 / max(pods, 1)
    allocated = sum(1 for c in claims if (c.get("status") or {}).get("allocation"))
    summary = (
        f"{result.decisions_per_s:.0f} pods/s, {cpu_ms:.1f} ms CPU per pod, {allocated} claims allocated"
    )
    what = (
        f"{EXTENDED} via DRA"
        if extended
        else "partitioned GPU halves"
        if partitioned
        else "one-device claims"
    )
    print(f"{result.line(what)}, {summary}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--pods", type=int, default=4000)
    case = parser.add_mutually_exclusive_group()
    case.add_argument("--extended", action="store_true", help=f"pods request {EXTENDED} instead of claims")
    case.add_argument(
        "--partitioned", action="store_true", help="each GPU is three partitions sharing counters"
    )
    args = parser.parse_args()
    asyncio.run(report(args.nodes, args.devices, args.pods, args.extended, args.partitioned))


if __name__ == "__main__":
    main()
