"""bench.e2e's ``--workload dra``: pods with one ResourceClaim each, on nodes with GPUs.

Every node of the simulated cluster publishes ``DEVICES`` GPUs through sim-cluster's simulated
driver (one ResourceSlice per node, the driver's DeviceClass selecting them). Each measured pod
has a claim of its own, made before the scheduler starts, asking for one GPU with more than
32 GB. With ``--partitioned`` (DRAPartitionableDevices) each GPU is a counter set of 40Gi offered
whole and as two halves of 20Gi (a counters slice and a devices slice per node) and each claim
asks for a half. The scheduler allocates each claim in its cycle and writes the allocation and
the pod's reservation at PreBind, as on a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

NAMESPACE = "dra"
DRIVER = "gpu.example.com"
DEVICES = 8  # per node

NODE_TEMPLATE = """\
nodeGroups:
  - namePrefix: node-
    count: {count}
    capacity: {{cpu: "8", memory: 32Gi, pods: "110"}}
    devices:
      driver: {driver}
      count: {devices}
{device_shape}"""
WHOLE_DEVICES = """\
      attributes: {model: A100, memory: 80}
"""
PARTITIONED_DEVICES = """\
      attributes: {model: A100}
      counters: {memory: 40Gi}
      partitions:
        - {name: full, consumes: {memory: 40Gi}, attributes: {profile: whole}}
        - {name: half-a, consumes: {memory: 20Gi}, attributes: {profile: half}}
        - {name: half-b, consumes: {memory: 20Gi}, attributes: {profile: half}}
"""


def node_template(nodes: int, partitioned: bool) -> str:
    shape = PARTITIONED_DEVICES if partitioned else WHOLE_DEVICES
    return NODE_TEMPLATE.format(count=nodes, driver=DRIVER, devices=DEVICES, device_shape=shape)


def capacity(nodes: int, partitioned: bool) -> int:
    """How many of these claims the nodes can hold (a GPU each, or two halves per GPU)."""
    return nodes * DEVICES * (2 if partitioned else 1)


def claim_body(partitioned: bool) -> Callable[[int], bytes]:
    """The i-th pod's claim: one GPU of the driver's class that the selector admits."""
    wanted = '.profile == "half"' if partitioned else ".memory > 32"
    selector = {"cel": {"expression": f'device.attributes["{DRIVER}"]{wanted}'}}
    request = {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "selectors": [selector]}}

    def body(i: int) -> bytes:
        return orjson.dumps(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"claim-{i:05d}"},
                "spec": {"devices": {"requests": [request]}},
            }
        )

    return body


def pod_body(i: int) -> bytes:
    """The i-th measured pod: a small container and its own claim."""
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "labels": {"app": "train"}},
            "spec": {
                "schedulerName": "pyscheduler",
                "resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{i:05d}"}],
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "claims": [{"name": "gpu"}],
                        },
                    }
                ],
            },
        }
    )
