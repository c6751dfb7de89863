"""`pyscheduler sim-cluster` in a process of its own, for the benchmarks that measure over HTTP."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def sim_cluster_process(work: Path, node_template: str) -> Iterator[tuple[str, Path]]:
    """A sim-cluster without kubelet, its nodes from ``node_template`` (YAML), files in ``work``:
    yields its URL and the kubeconfig it wrote; stopped (SIGTERM) on exit."""
    (work / "nodes.yaml").write_text(node_template)
    kubeconfig = work / "kubeconfig"
    command = [sys.executable, "-m", "scheduler", "sim-cluster", "--no-kubelet"]
    command += ["--node-template", str(work / "nodes.yaml"), "--kubeconfig-out", str(kubeconfig)]
    sim = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert sim.stdout is not None
        url = sim.stdout.readline().split()[3]  # "sim-cluster listening on URL with N nodes"
        sim.stdout.readline()  # the kubeconfig line
        yield url, kubeconfig
    finally:
        sim.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            sim.wait(30)
