"""What a plain-Python plugin costs per decision: the default profile with and without one.

    python -m bench.plugin_overhead [--nodes 1000 5000] [--pods 5000]

The plugin implements only the per-node forms (``filter`` and ``score`` in Python, called once per
node), as a plugin author would first write it: it keeps nodes whose ``pool`` label is not
``blocked`` and prefers nodes of the ``spot`` pool. The search stops once enough feasible nodes are
found (``percentageOfNodesToScore``, adaptive by default: 42% of 1,000 nodes, 10% of 5,000), so
the plugin runs on that many nodes, not on all; the run with 100% shows the unbounded cost.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any, ClassVar

from bench.common import Harness, make_node, make_pod
from scheduler.framework import CycleState, NodeInfo, Pod, Status


class PoolPreference:
    """A per-node Filter and Score in plain Python."""

    name: ClassVar[str] = "PoolPreference"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node.labels.get("pool") == "blocked":
            return Status.unresolvable("node(s) are in the blocked pool")
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return 100 if node_info.node.labels.get("pool") == "spot" else 0


def pooled_node(i: int) -> Any:
    node = make_node(i)
    node.labels = {**node.labels, "pool": ("spot", "on-demand", "blocked")[i % 3]}
    return node


async def measure(nodes: int, pods: int, with_plugin: bool, percentage: int | None) -> float:
    harness = Harness(
        nodes,
        pooled_node,
        extra_plugins=[PoolPreference] if with_plugin else [],
        percentage_of_nodes_to_score=percentage,
    )
    result = await harness.schedule(make_pod(f"p-{i:05d}", {"app": "bench"}) for i in range(pods))
    return result.decisions_per_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.plugin_overhead", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods", type=int, default=5000)
    args = parser.parse_args(argv)
    for nodes in args.nodes:
        for percentage, label in ((None, "adaptive"), (100, "100%")):
            base = asyncio.run(measure(nodes, args.pods, False, percentage))
            extra = asyncio.run(measure(nodes, args.pods, True, percentage))
            overhead_ms = (1 / extra - 1 / base) * 1000
            print(
                f"{nodes:>5} nodes, percentageOfNodesToScore {label:>8}: {base:6.0f} decisions/s without the "
                f"plugin, {extra:6.0f} with it: +{overhead_ms:.2f} ms per decision"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
