"""`pyscheduler sim-cluster` as a process: it listens, writes a kubeconfig and exits 0 on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sim_cluster_serves_until_a_signal_and_exits_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    kubeconfig = tmp_path / "sim.kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduler",
            "sim-cluster",
            "--nodes",
            "2",
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("sim-cluster listening on http://127.0.0.1:")
        assert "kubeconfig written to" in proc.stdout.readline()
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert first.split()[3] == server
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
