"""Decisions per second for pod topology spread and inter-pod (anti-)affinity workloads.

    python -m bench.affinity [--nodes 1000 5000] [--pods 1000] [--existing-per-node 4]
                             [--workloads spread soft-spread anti-affinity preferred-affinity]

Modelled on upstream scheduler_perf's TopologySpreading, PreferredTopologySpreading,
SchedulingPodAntiAffinity and SchedulingPreferredPodAffinity: every node already runs
``--existing-per-node`` pods (a quarter of them belonging to the measured workload, the rest to
100 other apps), then ``--pods`` pods of the workload are scheduled one cycle at a time with the
default profile. Prints decisions/s and the p50/p99 of one scheduling cycle per workload and
node count; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from bench.common import Harness, Result, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _spread(app: str) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    }


def _soft_spread(app: str) -> dict[str, Any]:
    selector = {"matchLabels": {"app": app}}
    soft = {"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}
    return {"topologySpreadConstraints": [{**soft, "topologyKey": key} for key in (ZONE, HOST)]}


def _anti_affinity(app: str) -> dict[str, Any]:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def _preferred_affinity(app: str) -> dict[str, Any]:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
    preferred = [{"weight": 1, "podAffinityTerm": term}]
    return {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}}


# workload name -> (app label, the spec fields its pods carry, whether existing workload pods
# must sit one per node, as required anti-affinity demands)
WORKLOADS: dict[str, tuple[str, Callable[[str], dict[str, Any]], bool]] = {
    "spread": ("spread", _spread, False),
    "soft-spread": ("soft", _soft_spread, False),
    "anti-affinity": ("anti", _anti_affinity, True),
    "preferred-affinity": ("pref", _preferred_affinity, False),
}


def existing_pods(workload: str, num_nodes: int, per_node: int) -> Iterator[Any]:
    """Bound pods: per node, one of the workload's own (for anti-affinity: on every tenth node
    only, so the measured pods still find room) and the rest of 100 unrelated apps."""
    app, spec_of, one_per_node = WORKLOADS[workload]
    for n in range(num_nodes):
        node = f"node-{n:05d}"
        for k in range(per_node):
            name = f"old-{n}-{k}"
            if k == 0 and (not one_per_node or n % 10 == 0):
                yield make_pod(name, {"app": app}, node_name=node, **spec_of(app))
            else:
                yield make_pod(name, {"app": f"bg-{(n + k) % 100}"}, node_name=node)


async def run(workload: str, num_nodes: int, num_pods: int, per_node: int) -> Result:
    app, spec_of, _ = WORKLOADS[workload]
    harness = Harness(num_nodes)
    harness.place(existing_pods(workload, num_nodes, per_node))
    new = (make_pod(f"new-{i:05d}", {"app": app}, **spec_of(app)) for i in range(num_pods))
    return await harness.schedule(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--existing-per-node", type=int, default=4)
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    args = parser.parse_args()
    for num_nodes in args.nodes:
        for workload in args.workloads:
            result = asyncio.run(run(workload, num_nodes, args.pods, args.existing_per_node))
            unbound = f" ({result.pods - result.bound} unschedulable)" if result.bound < result.pods else ""
            print(result.line(workload) + unbound, flush=True)


if __name__ == "__main__":
    main()
