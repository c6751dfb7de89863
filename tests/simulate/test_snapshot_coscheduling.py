"""scheduler-plugins' PodGroups in snapshots: with their CRD where the cluster serves
scheduling.x-k8s.io (so a Coscheduling gang simulates from the snapshot alone), left out
silently where it does not."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest
import yaml

from scheduler.cli import main
from scheduler.simulate.snapshot import COSCHEDULING_PODGROUPS, read_cluster
from scheduler.testing.builders import node_dict, pod_dict
from simcluster import SimCluster
from tests.support.coscheduling import POD_GROUP_LABEL, config, install_crd, podgroup
from tests.support.simulate import snapshot_of


async def test_a_cluster_without_coscheduling_gives_no_line_and_no_podgroups(tmp_path: Path) -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as sim:
        snapshot, skipped = await read_cluster(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    assert skipped == []
    assert {"customresourcedefinitions", COSCHEDULING_PODGROUPS}.isdisjoint(snapshot["objects"])


async def test_a_coscheduling_gang_simulates_from_the_snapshot_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with SimCluster(nodes=0, kubelet=False, controllers=False) as sim:
        for index in range(2):
            await sim.create("nodes", node_dict(f"n-{index}", cpu="4"))
        await install_crd(sim)
        await sim.create(COSCHEDULING_PODGROUPS, podgroup("train", 3))
        path = await snapshot_of(sim, tmp_path)
    members = []
    for index in range(3):
        member = pod_dict(f"train-{index}", requests={"cpu": "3"}, labels={POD_GROUP_LABEL: "train"})
        del member["metadata"]["uid"], member["status"]
        members.append(member)
    (tmp_path / "members.yaml").write_text(yaml.safe_dump_all(members))
    scheduler_config = copy.deepcopy(config())
    del scheduler_config["leaderElection"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(scheduler_config))
    args = ["simulate", "--snapshot", str(path), "--config", str(tmp_path / "config.yaml")]
    args += ["--add", str(tmp_path / "members.yaml"), "--add-nodes", "1", "--like", "n-0", "-o", "json"]

    code = await asyncio.to_thread(main, args)  # main runs its own event loop
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = yaml.safe_load(captured.out)
    # all three placed, one per node: the group (minMember 3) was restored with its CRD
    assert sorted(p["node"] for p in report["placements"]) == ["n-0", "n-0-new-1", "n-1"]
    assert report["pending"] == [] and report["applied"] == []


async def test_podgroups_whose_crd_cannot_be_read_are_left_out_with_a_line(tmp_path: Path) -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as sim:
        await install_crd(sim)
        await sim.create(COSCHEDULING_PODGROUPS, podgroup("train", 3))
        sim.faults.set_error("get", "customresourcedefinitions", 1.0, code=403)
        snapshot, skipped = await read_cluster(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    assert skipped == [
        f"{COSCHEDULING_PODGROUPS}: its CustomResourceDefinition could not be read (HTTP 403), skipped"
    ]
    assert {"customresourcedefinitions", COSCHEDULING_PODGROUPS}.isdisjoint(snapshot["objects"])
