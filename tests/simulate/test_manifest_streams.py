"""`--add` takes manifests as users have them: a Service with its Deployment, a directory, stdin,
the project's own Helm chart; what the scheduler reads is applied, the rest listed as ignored.
And a snapshot holds every kind the scheduler watches."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.simulate import manifests
from scheduler.simulate.snapshot import read_cluster
from scheduler.testing.builders import node_dict
from scheduler.watched import PLUGIN_RESOURCES
from simcluster import SimCluster
from tests.support.simulate import snapshot_file

REPO = Path(__file__).resolve().parents[2]
HELM = REPO / ".tools" / "bin" / "helm"
ZONE = "topology.kubernetes.io/zone"


def three_nodes() -> dict[str, list[Any]]:
    return {
        "nodes": [node_dict(f"n-{i}", cpu="4", memory="8Gi", labels={ZONE: f"z{i % 2}"}) for i in range(3)]
    }


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    """The command in this process with ``-o json``: exit code, report, stderr."""
    code = main(["simulate", *args, "-o", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else {}, captured.err


WEB = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    },
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-settings", "namespace": "shop"}},
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
                },
            },
        },
    },
    {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
    },
]


def test_a_service_and_its_deployment_are_applied_and_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump_all(WEB))
    code, report, err = simulate(
        capsys, "--snapshot", str(snapshot_file(tmp_path, three_nodes())), "--add", str(app)
    )
    assert code == 0, err
    assert len(report["placements"]) == 3 and report["pending"] == []
    # the Service selects the pods: default spreading puts one replica on each node
    assert sorted(p["node"] for p in report["placements"]) == ["n-0", "n-1", "n-2"]
    assert report["applied"] == [f"Namespace shop ({app})", f"Service shop/web ({app})"]
    assert report["ignored"] == ["ConfigMap shop/web-settings", "HorizontalPodAutoscaler shop/web"]


def test_a_directory_and_stdin_are_streams_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "manifests" / "nested"
    folder.mkdir(parents=True)
    (folder / "1-namespace.yaml").write_text(yaml.safe_dump(WEB[0]))
    (folder / "2-rest.json").write_text(json.dumps({"kind": "List", "items": WEB[1:]}))
    (folder / "README.md").write_text("not a manifest")
    loaded = manifests.load(str(tmp_path / "manifests"), "pyscheduler")
    assert [a.resource for a in loaded.in_order()] == ["namespaces", "services"]
    assert [w.source for w in loaded.workloads] == ["Deployment shop/web"]

    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump_all(WEB)))
    snapshot = snapshot_file(tmp_path, three_nodes())
    code, report, err = simulate(capsys, "--snapshot", str(snapshot), "--add", "-")
    assert code == 0, err
    assert len(report["placements"]) == 3
    assert report["applied"] == ["Namespace shop (stdin)", "Service shop/web (stdin)"]


def test_an_applied_object_replaces_the_one_of_its_name_in_the_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PriorityClass of the manifest wins over the snapshot's: its pods preempt with it."""
    objects = three_nodes()
    objects["priorityclasses"] = [{"metadata": {"name": "urgent"}, "value": 1}]
    objects["pods"] = [
        {
            "metadata": {"name": f"low-{i}", "namespace": "default", "uid": f"u{i}"},
            "spec": {
                "nodeName": f"n-{i}",
                "priority": 10,
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "4"}}}],
            },
            "status": {"phase": "Running"},
        }
        for i in range(3)
    ]
    urgent = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "urgent-job", "namespace": "default"},
        "spec": {
            "priorityClassName": "urgent",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}],
        },
    }
    add = tmp_path / "add.yaml"
    add.write_text(yaml.safe_dump_all([{**urgent, "value": 1000}, pod]))
    code, report, err = simulate(
        capsys, "--snapshot", str(snapshot_file(tmp_path, objects)), "--add", str(add)
    )
    assert code == 0, err
    assert len(report["preempted"]) == 1 and report["placements"][0]["pod"] == "default/urgent-job"
    add.write_text(yaml.safe_dump_all([{**urgent, "value": 5}, pod]))  # now below the running pods
    code, report, err = simulate(
        capsys, "--snapshot", str(snapshot_file(tmp_path, objects)), "--add", str(add)
    )
    assert code == 0, err
    assert report["preempted"] == [] and report["pending"][0]["reason"] == "Unschedulable"


def helm() -> str:
    found = str(HELM) if HELM.exists() else shutil.which("helm")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("helm is missing: `make tools` installs it into .tools/bin")
        pytest.skip("helm is not installed (`make tools` installs it into .tools/bin)")
    return found


def test_helm_template_of_the_projects_chart_piped_into_simulate(tmp_path: Path) -> None:
    """`helm template … | pyscheduler simulate --add -`, as a user runs it."""
    rendered = subprocess.run(
        [helm(), "template", "demo", str(REPO / "helm" / "pyscheduler"), "--namespace", "kube-system"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    snapshot = snapshot_file(tmp_path, three_nodes())
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler",
            "simulate",
            "--snapshot",
            str(snapshot),
            "--add",
            "-",
            "-o",
            "json",
        ],
        input=rendered,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    kinds = {doc["kind"] for doc in yaml.safe_load_all(rendered) if doc}
    placed = {p["source"] for p in report["placements"]}
    assert "Deployment kube-system/demo-pyscheduler" in placed and report["pending"] == []
    replicas = [p["node"] for p in report["placements"] if p["source"].startswith("Deployment")]
    assert len(replicas) == 2 and len(set(replicas)) == 2  # the chart spreads its replicas over nodes
    assert any(a.startswith("PodDisruptionBudget kube-system/") for a in report["applied"])
    assert any(a.startswith("Service kube-system/") for a in report["applied"])
    ignored_kinds = {line.split(" ", 1)[0] for line in report["ignored"]}
    assert ignored_kinds == kinds - {"Deployment", "Pod", "Service", "PodDisruptionBudget"}
    assert {"ServiceAccount", "ClusterRole", "ConfigMap"} <= ignored_kinds


async def test_a_snapshot_holds_every_kind_the_scheduler_watches(tmp_path: Path) -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as sim:
        snapshot, skipped = await read_cluster(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    assert skipped == []
    expected = {"nodes", "pods", "priorityclasses", "resourceclaimtemplates", "podgroups", "workloads"}
    assert expected | set(PLUGIN_RESOURCES) <= set(snapshot["objects"])


def test_a_daemonset_gets_a_pod_on_each_node_it_runs_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not where its node selector does not select, nor on an untolerated taint; a cordoned
    node still runs it (the controller tolerates the cordon)."""
    nodes = [
        node_dict("plain", labels={"role": "worker"}),
        node_dict("cordoned", labels={"role": "worker"}, unschedulable=True),
        node_dict("tainted", labels={"role": "worker"}, taints=[("gpu", "yes", "NoSchedule")]),
        node_dict("control", labels={"role": "control"}),
    ]
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "nodeSelector": {"role": "worker"},
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
                },
            },
        },
    }
    (tmp_path / "ds.yaml").write_text(yaml.safe_dump(daemonset))
    snapshot = snapshot_file(tmp_path, {"nodes": nodes})
    code, report, err = simulate(capsys, "--snapshot", str(snapshot), "--add", str(tmp_path / "ds.yaml"))
    assert code == 0, err
    assert sorted(p["node"] for p in report["placements"]) == ["cordoned", "plain"]
    assert {p["source"] for p in report["placements"]} == {"DaemonSet kube-system/agent"}
    assert report["pending"] == [] and report["ignored"] == []
