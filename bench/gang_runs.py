"""The figures bench.gang and bench.coscheduling print for whole gangs, per run and over runs.

A run schedules its gangs one after another; per gang it times the last member's creation (or
arrival) to all members bound. Pods/s is all the gangs' pods over the sum of those times, the
percentiles are nearest-rank over the gangs (with 10 gangs p99 is the slowest), and the CPU is
this process's (user + sys) over the same windows, per pod: the scheduler's and, through the
local endpoint, the endpoint's too (both run in this process).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass(slots=True)
class GangRun:
    pods: int
    latencies: list[float]  # per gang, seconds: last member in -> all bound
    cpu_seconds: float  # this process's CPU over those windows

    @property
    def pods_per_s(self) -> float:
        return self.pods / sum(self.latencies)

    @property
    def cpu_per_pod_ms(self) -> float:
        return self.cpu_seconds / self.pods * 1000

    def percentile_ms(self, q: float) -> float:
        return quantile(self.latencies, q) * 1000

    def line(self) -> str:
        return (
            f"{self.pods_per_s:7.0f} pods/s; last member in -> gang bound: "
            f"p50 {self.percentile_ms(0.5):.0f} ms, p99 {self.percentile_ms(0.99):.0f} ms; "
            f"CPU {self.cpu_per_pod_ms:.2f} ms/pod"
        )


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (the smallest value with at least ``q`` of them at or below it)."""
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def over_runs(runs: list[GangRun]) -> str:
    """The best and the median over the runs of each figure."""

    def spread(values: list[float], best: float, unit: str, digits: int = 0) -> str:
        return f"{best:.{digits}f} / {statistics.median(values):.{digits}f} {unit}"

    rates = [r.pods_per_s for r in runs]
    p99s = [r.percentile_ms(0.99) for r in runs]
    p50s = [r.percentile_ms(0.5) for r in runs]
    cpus = [r.cpu_per_pod_ms for r in runs]
    return (
        f"  over {len(runs)} runs (best / median): {spread(rates, max(rates), 'pods/s')}; "
        f"p50 {spread(p50s, min(p50s), 'ms')}; p99 {spread(p99s, min(p99s), 'ms')}; "
        f"CPU {spread(cpus, min(cpus), 'ms/pod', 2)}"
    )
