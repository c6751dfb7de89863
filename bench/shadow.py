"""Shadow mode's cost to the scheduling loop, in process: loop time per shadow decision.

    python -m bench.shadow [--nodes 5000] [--pods-per-node 2] [--batches 1 64] [--runs 3]

On the mixed cluster of bench.decisions with pods placed (and the garbage collector tuned as
``pyscheduler run`` tunes it once synced), another scheduler's pods are handed to shadow mode in
batches (1 pod: pods arriving one at a time; 64: a Deployment's worth at once), decided forked
(the default) and on the loop (the way with extenders). For each it prints the event loop
thread's CPU time per decision (what the loop spends: forking, reading the outcomes, reaping,
page faults included, the benchmark's own polling taken off), the longest stall of a 1 ms ticker
task meanwhile (how long the loop was held at once; on a loaded machine the OS's scheduling
delays show there too, measured alone first) and the wall time per decision; then the loop's
extra CPU per forked decision while it schedules pods of its own (copy-on-write faults included).
Three runs: min and median. Figures are
printed, never asserted; the machine may be shared (say so when quoting them).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from bench.common import Harness, make_pod
from bench.decisions import mixed_node
from scheduler.api import Pod
from scheduler.shadow import ShadowMode

OTHER = "default-scheduler"
TICK = 0.001  # seconds the stall ticker sleeps


@dataclass(slots=True)
class Sample:
    loop_ms: float  # event loop thread CPU per decision
    stall_ms: float  # the longest the loop was held at once
    wall_ms: float  # wall time per decision


class StallTicker:
    """A task that sleeps TICK at a time and notes how late it wakes: a held loop wakes it late."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(TICK)
            self.longest = max(self.longest, time.perf_counter() - before - TICK)

    def __enter__(self) -> StallTicker:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()


POLL = 0.02  # seconds between the benchmark's looks at the decisions made


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(POLL)


async def _polling_cost(seconds: float) -> float:
    """The loop's CPU time for polling as ``_until`` does for ``seconds`` with nothing to wait
    for: the benchmark's own share, taken off the figures."""
    cpu, end = time.thread_time(), time.perf_counter() + seconds
    await _until(lambda: time.perf_counter() >= end)
    return time.thread_time() - cpu


async def decide_all(mode: ShadowMode, pods: list[Pod]) -> None:
    for pod in pods:
        mode.decide(pod)
    await _until(lambda: all(pod.uid in mode.tracked for pod in pods))


async def measure(harness: Harness, forked: bool, batch: int, run: int) -> Sample:
    """One batch decided for the loop's CPU time and the wall time, another for the stalls (the
    ticker's own wake-ups would count as loop time)."""
    mode = ShadowMode(OTHER, harness.scheduler, harness.framework, CollectorRegistry(), forked=forked)
    mode.start([])
    task = asyncio.create_task(mode.run())

    def pods(kind: str) -> list[Pod]:
        names = (f"{kind}-{forked}-{batch}-{run}-{i}" for i in range(batch))
        return [make_pod(name, {"app": "theirs"}, schedulerName=OTHER) for name in names]

    await decide_all(mode, pods("warm-up"))  # a first fork pays for page tables never copied yet
    timed = pods("timed")
    cpu, wall = time.thread_time(), time.perf_counter()
    await decide_all(mode, timed)
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    cpu -= await _polling_cost(wall)
    with StallTicker() as ticker:
        await asyncio.sleep(0.05)  # the ticker's first late wake-ups are not the shadow's
        ticker.longest = 0.0
        await decide_all(mode, pods("ticked"))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return Sample(cpu * 1000 / batch, ticker.longest * 1000, wall * 1000 / batch)


async def idle_stall(seconds: float = 1.0) -> float:
    """The longest stall of the ticker with nothing else running: the machine's own noise."""
    with StallTicker() as ticker:
        await asyncio.sleep(0.05)
        ticker.longest = 0.0
        await asyncio.sleep(seconds)
    return ticker.longest * 1000


async def busy_loop_cost(harness: Harness, own: int, shadowed: int, run: int) -> float:
    """Loop CPU ms per forked shadow decision while the loop schedules ``own`` pods of its own:
    the loop's CPU with ``shadowed`` decisions meanwhile, less that of the same work without
    (copy-on-write faults included: pages the loop writes while a child lives are copied)."""
    costs = []
    for with_shadow in (False, True):
        mode = ShadowMode(OTHER, harness.scheduler, harness.framework, CollectorRegistry(), forked=True)
        mode.start([])
        task = asyncio.create_task(mode.run())
        names = (f"busy-{run}-{with_shadow}-{i}" for i in range(shadowed if with_shadow else 0))
        theirs = [make_pod(name, {"app": "theirs"}, schedulerName=OTHER) for name in names]
        cpu = time.thread_time()
        for pod in theirs:
            mode.decide(pod)
        await harness.schedule(make_pod(f"own-{run}-{with_shadow}-{i}", {"app": "own"}) for i in range(own))
        await _until(lambda: all(pod.uid in mode.tracked for pod in theirs))  # noqa: B023
        costs.append(time.thread_time() - cpu)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return (costs[1] - costs[0]) * 1000 / shadowed


def _figure(values: list[float]) -> str:
    return f"{min(values):7.2f} / {statistics.median(values):7.2f}"


async def main_async(args: argparse.Namespace) -> None:
    for num_nodes in args.nodes:
        harness = Harness(num_nodes, mixed_node)
        for i in range(num_nodes * args.pods_per_node):
            node = f"node-{i % num_nodes:05d}"
            harness.cache.add_pod(make_pod(f"placed-{i}", {"app": f"a{i % 20}"}, node_name=node, cpu="500m"))
        gc.collect()
        gc.freeze()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        noise = [await idle_stall() for _ in range(args.runs)]
        print(
            f"{num_nodes} nodes, {num_nodes * args.pods_per_node} pods, scheduler RSS {rss:.0f} MiB; "
            f"the idle loop's longest stall (machine noise): {_figure(noise)} ms"
        )
        print(
            "  idle loop (min / median of the runs)  loop ms/decision   longest stall ms   wall ms/decision"
        )
        for forked in (True, False):
            for batch in args.batches:
                samples = [await measure(harness, forked, batch, run) for run in range(args.runs)]
                label = f"{'forked' if forked else 'on the loop'}, batches of {batch}"
                print(
                    f"  {label:<35}  {_figure([s.loop_ms for s in samples])}  "
                    f"{_figure([s.stall_ms for s in samples])}  {_figure([s.wall_ms for s in samples])}"
                )
        busy = [await busy_loop_cost(harness, args.own, args.busy_shadowed, run) for run in range(args.runs)]
        print(
            f"  busy loop: {args.busy_shadowed} forked decisions while {args.own} pods of its own are "
            f"scheduled: {_figure(busy)} ms of loop CPU per decision (a difference of two runs: noisy)"
        )
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"  peak RSS of a decision process: {children:.0f} MiB (copy-on-write: shared until written)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[5000])
    parser.add_argument("--pods-per-node", type=int, default=2)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--own", type=int, default=1500, help="pods of its own in the busy-loop runs")
    parser.add_argument("--busy-shadowed", type=int, default=64, help="shadow decisions in a busy-loop run")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
