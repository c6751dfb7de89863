"""A small mixed cluster on the local API endpoint, and `pyscheduler explain` run in process."""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.cmd import explain as explain_command
from simcluster import SimCluster
from tests.support.cluster import pod_manifest

# small-0000/1: 2 CPUs; gpu-0000: 8 CPUs, tainted dedicated=gpu:NoSchedule, labelled gpu=true;
# big-0000/1: 4 CPUs, labelled disk=ssd, each with 3 CPUs taken by another scheduler's pod.
NODE_GROUPS: list[dict[str, Any]] = [
    {"namePrefix": "small-", "count": 2, "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    {
        "namePrefix": "gpu-",
        "count": 1,
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "labels": {"gpu": "true"},
        "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    },
    {
        "namePrefix": "big-",
        "count": 2,
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "labels": {"disk": "ssd"},
    },
]


@pytest.fixture
async def cluster() -> AsyncIterator[SimCluster]:
    async with SimCluster(node_template=NODE_GROUPS, kubelet=False, controllers=False) as sim:
        for node in ("big-0000", "big-0001"):
            filler = pod_manifest(
                f"filler-{node}", cpu="3", scheduler_name="default-scheduler", nodeName=node
            )
            await sim.create("pods", filler)
        yield sim


async def run_explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """(exit code, the JSON answer or the table text, stderr)."""
    parser = argparse.ArgumentParser()
    explain_command.add_arguments(parser)
    args = parser.parse_args(list(argv))
    code = await explain_command.run(args)
    out, err = capsys.readouterr()
    if code == 0 and args.output == "json":
        return code, json.loads(out), err
    return code, out, err


def kubeconfig(sim: SimCluster, tmp_path: Path) -> str:
    return str(sim.write_kubeconfig(tmp_path / "kubeconfig"))
