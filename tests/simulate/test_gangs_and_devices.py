"""Gangs and devices in simulate: a PodGroup is placed all or nothing (by the real gang cycle,
with its gates on), and a DRA pod's claim is allocated, the report naming the device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.testing.builders import node_dict, pod_dict
from scheduler.testing.dra import DRIVER, device, device_class, request, resource_slice
from tests.support.simulate import simulate_json, snapshot_file

GANG_GATES = "GenericWorkload=true,GangScheduling=true"


def gang(size: int, cpu: str) -> list[dict[str, Any]]:
    """A Workload API PodGroup needing all ``size`` members, and the members."""
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
    }
    members = []
    for index in range(size):
        member = pod_dict(f"train-{index}", requests={"cpu": cpu})
        member["spec"]["schedulingGroup"] = {"podGroupName": "train"}
        del member["metadata"]["uid"], member["status"]
        members.append(member)
    return [group, *members]


def test_a_gang_that_fits_only_with_another_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = str(snapshot_file(tmp_path, {"nodes": [node_dict(f"n-{i}", cpu="4") for i in range(2)]}))
    (tmp_path / "gang.yaml").write_text(yaml.safe_dump_all(gang(3, "3")))
    args = ["--snapshot", snapshot, "--add", str(tmp_path / "gang.yaml"), "--feature-gates", GANG_GATES]

    report = simulate_json(capsys, *args)
    assert report["placements"] == []  # two members would fit: none is bound
    assert len(report["pending"]) == 3 and report["applied"][0].startswith("PodGroup default/train")

    report = simulate_json(capsys, *args, "--add-nodes", "1", "--like", "n-0")
    assert sorted(p["node"] for p in report["placements"]) == ["n-0", "n-0-new-1", "n-1"]

    report = simulate_json(capsys, *args, "--fit", "--like", "n-0")
    assert report["fit"]["nodes"] == 1 and report["fit"]["tried"]["1"] == 0
    assert len(report["placements"]) == 3 and report["pending"] == []


def one_gpu_pods(names: list[str], cpu: str) -> list[dict[str, Any]]:
    """A ResourceClaimTemplate for one GPU, and pods named ``names`` with a claim from it."""
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [request("gpu", "gpu")]}}},
    }
    pods = []
    for name in names:
        pod = pod_dict(name, requests={"cpu": cpu})
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        del pod["metadata"]["uid"], pod["status"]
        pods.append(pod)
    return [template, *pods]


def test_a_dra_pod_gets_a_device_and_the_report_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = {
        "nodes": [node_dict("n-0", cpu="8"), node_dict("n-1", cpu="8")],
        "deviceclasses": [device_class("gpu", f'device.driver == "{DRIVER}"')],
        "resourceslices": [resource_slice("n-1-gpus", [device("gpu-0"), device("gpu-1")], node="n-1")],
    }
    (tmp_path / "infer.yaml").write_text(
        yaml.safe_dump_all(one_gpu_pods(["infer-a", "infer-b", "infer-c"], "1"))
    )
    report = simulate_json(
        capsys, "--snapshot", str(snapshot_file(tmp_path, objects)), "--add", str(tmp_path / "infer.yaml")
    )
    assert [p["node"] for p in report["placements"]] == ["n-1", "n-1"]
    devices = sorted(d for p in report["placements"] for d in p["devices"])
    assert devices == [f"{DRIVER}/n-1/gpu-0", f"{DRIVER}/n-1/gpu-1"]
    (pending,) = report["pending"]
    assert pending["pod"] == "default/infer-c" and "cannot allocate all claims" in pending["message"]

    # a node like n-1 comes with n-1's devices, in a pool of its own: all three get one
    args = ["--snapshot", str(snapshot_file(tmp_path, objects)), "--add", str(tmp_path / "infer.yaml")]
    report = simulate_json(capsys, *args, "--add-nodes", "1", "--like", "n-1")
    assert report["pending"] == [] and len(report["placements"]) == 3
    for placed in report["placements"]:
        (device_name,) = placed["devices"]
        assert device_name.startswith(f"{DRIVER}/{placed['node']}/gpu-")
    assert "n-1-new-1" in {p["node"] for p in report["placements"]}


COSCHEDULING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "pyscheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
            },
        }
    ],
}
CRD = (
    Path(__file__).resolve().parents[2]
    / "helm"
    / "pyscheduler"
    / "crds"
    / "scheduling.x-k8s.io_podgroups.yaml"
)


def test_a_coscheduling_gang_with_its_crd_in_the_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scheduler-plugins' PodGroup, its CRD given with the manifests: all or nothing too."""
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"minMember": 3},
    }
    members = []
    for index in range(3):
        member = pod_dict(
            f"train-{index}", requests={"cpu": "3"}, labels={"scheduling.x-k8s.io/pod-group": "train"}
        )
        del member["metadata"]["uid"], member["status"]
        members.append(member)
    (tmp_path / "gang.yaml").write_text(CRD.read_text() + "\n---\n" + yaml.safe_dump_all([group, *members]))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(COSCHEDULING))
    snapshot = str(snapshot_file(tmp_path, {"nodes": [node_dict(f"n-{i}", cpu="4") for i in range(2)]}))
    args = [
        "--snapshot",
        snapshot,
        "--config",
        str(tmp_path / "config.yaml"),
        "--add",
        str(tmp_path / "gang.yaml"),
    ]

    report = simulate_json(capsys, *args)
    assert report["placements"] == [] and len(report["pending"]) == 3
    assert any(
        a.startswith("CustomResourceDefinition podgroups.scheduling.x-k8s.io") for a in report["applied"]
    )
    report = simulate_json(capsys, *args, "--add-nodes", "1", "--like", "n-0")
    assert len({p["node"] for p in report["placements"]}) == 3


@pytest.mark.parametrize("source", ["template", "own"])
def test_fit_gives_new_nodes_the_templates_devices(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five one-GPU pods, template nodes of two GPUs: --fit's count is the least --add-nodes
    count that leaves nothing pending, the devices coming with each new node whether the
    template is a file (a Node and its ResourceSlice) or a node of the cluster (its slices)."""
    gpu_node = node_dict("gpu-node", cpu="8")
    gpu_slice = resource_slice("gpu-node-gpus", [device("gpu-0"), device("gpu-1")], node="gpu-node")
    objects: dict[str, list[Any]] = {
        "nodes": [node_dict("cpu-only", cpu="8")],
        "deviceclasses": [device_class("gpu", f'device.driver == "{DRIVER}"')],
    }
    if source == "own":  # the template is a node of the cluster, its two GPUs in use already
        objects["nodes"].append(gpu_node)
        objects["resourceslices"] = [gpu_slice]
        template_args = ["--like", "gpu-node"]
    else:
        (tmp_path / "gpu-node.yaml").write_text(yaml.safe_dump_all([gpu_node, gpu_slice]))
        template_args = ["--node-template", str(tmp_path / "gpu-node.yaml")]
    (tmp_path / "infer.yaml").write_text(
        yaml.safe_dump_all(one_gpu_pods([f"infer-{i}" for i in range(5)], "100m"))
    )
    args = ["--snapshot", str(snapshot_file(tmp_path, objects)), "--add", str(tmp_path / "infer.yaml")]

    pending = {
        count: len(simulate_json(capsys, *args, "--add-nodes", str(count), *template_args)["pending"])
        for count in range(1, 5)
    }
    held = 2 if source == "own" else 0
    assert pending == {count: max(5 - held - 2 * count, 0) for count in range(1, 5)}

    report = simulate_json(capsys, *args, "--fit", *template_args)
    assert report["fit"]["nodes"] == min(c for c, left in pending.items() if left == 0)
    assert report["pending"] == [] and len(report["placements"]) == 5
    devices = [d for p in report["placements"] for d in p["devices"]]
    assert len(set(devices)) == 5
    for placed in report["placements"]:
        (device_name,) = placed["devices"]
        assert device_name.startswith(f"{DRIVER}/{placed['node']}/gpu-")
