"""OpportunisticBatching on a one-pod-per-node workload, in process: batching on against off.

    python -m bench.batching [--nodes 1000 5000] [--pods 5000]

Every pod asks for the same host port, so each node takes one; the profile lists no default
spreading constraints (with kube-scheduler's System defaults no pod can be signed, so the
default profile never batches). Prints decisions/s and cycle latencies with the gate on and
off, and how many pods took the batch's hint. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio

from bench.common import Harness, make_node, make_pod
from scheduler.config import parse_config
from scheduler.features import OPPORTUNISTIC_BATCHING, FeatureGates
from scheduler.testing.configs import no_default_spread_config

CONFIG = no_default_spread_config()


def host_port_pods(count: int) -> list:
    port = {"name": "c", "containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}
    container = {
        "name": "c",
        "image": "nginx",
        "ports": [port],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    return [make_pod(f"pod-{i:05d}", {"app": "web"}, containers=[container]) for i in range(count)]


async def run(num_nodes: int, num_pods: int, batching: bool) -> str:
    features = FeatureGates({} if batching else {OPPORTUNISTIC_BATCHING: False})
    harness = Harness(num_nodes, make_node, config=parse_config(CONFIG), features=features)
    result = await harness.schedule(host_port_pods(min(num_pods, num_nodes)))
    batch = harness.framework.batch
    hinted = f", {batch.batched_pods} took the hint" if batch is not None else ""
    return result.line(f"batching {'on' if batching else 'off'}") + hinted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods", type=int, default=5000, help="at most one per node")
    args = parser.parse_args()
    for num_nodes in args.nodes:
        for batching in (False, True):
            print(asyncio.run(run(num_nodes, args.pods, batching)))


if __name__ == "__main__":
    main()
