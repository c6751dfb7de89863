"""How long `pyscheduler explain` (and so one shadow-mode decision) takes, in process.

    python -m bench.explain [--nodes 1000 5000] [--pods-per-node 2]

On the mixed cluster of bench.decisions (GPU and spot pools, cordoned nodes, images), with
pods already placed, it times explain for a pod that fits (every node filtered and scored) and
for one that fits nowhere (every node rejected, PostFilter's dry run, the suggestions re-checked
with the filters), and a shadow-mode decision (explain without those two), next to one
scheduling cycle of the same pod (which stops at percentageOfNodesToScore and, with
OpportunisticBatching, reuses its hint). Explain without extenders never suspends, so it runs
without an event loop. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.common import Harness, make_pod
from bench.decisions import mixed_node
from scheduler.explain import explain_pod
from scheduler.framework import CycleState
from scheduler.schedule_one import run_now


def _timed(step: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` runs, in milliseconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def measure(num_nodes: int, pods_per_node: int, repeat: int) -> None:
    harness = Harness(num_nodes, mixed_node)
    for i in range(num_nodes * pods_per_node):
        node = f"node-{i % num_nodes:05d}"
        harness.cache.add_pod(make_pod(f"placed-{i}", {"app": f"a{i % 20}"}, node_name=node, cpu="500m"))
    scheduler, fwk = harness.scheduler, harness.framework
    fits = make_pod("fits", {"app": "x"})
    nowhere = make_pod("nowhere", {"app": "y"}, cpu="64")
    cycle = _timed(lambda: run_now(scheduler.schedule_pod(fwk, CycleState(), fits)), repeat)
    ok = _timed(lambda: run_now(explain_pod(scheduler, fwk, fits)), repeat)
    pending = _timed(lambda: run_now(explain_pod(scheduler, fwk, nowhere)), repeat)
    shadow = _timed(
        lambda: run_now(explain_pod(scheduler, fwk, fits, preemption=False, suggestions=False, cycle=False)),
        repeat,
    )
    print(
        f"{num_nodes:>5} nodes, {num_nodes * pods_per_node:>6} pods: one cycle {cycle:6.1f} ms | "
        f"explain (fits) {ok:6.1f} ms | explain (fits nowhere) {pending:6.1f} ms | "
        f"shadow decision {shadow:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods-per-node", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for num_nodes in args.nodes:
        measure(num_nodes, args.pods_per_node, args.repeat)


if __name__ == "__main__":
    main()
