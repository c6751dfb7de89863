"""`pyscheduler simulate` refuses bad flags and files with exit 2 naming the problem, and exits 1
when the cluster cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.simulate import (
    pod,
    run_cli,
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--snapshot", "{dir}/missing.json"], "simulate: {dir}/missing.json: No such file or directory"),
        (["--snapshot", "{dir}/bad.json"], "simulate: {dir}/bad.json: not JSON"),
        (["--snapshot", "{dir}/old.json"], "simulate: {dir}/old.json: formatVersion 7 is not supported"),
        (
            ["--snapshot", "{dir}/ok.json", "--add-nodes", "2"],
            "--add-nodes: needs --node-template FILE or --like",
        ),
        (
            ["--snapshot", "{dir}/ok.json", "--fit", "--like", "nope"],
            "--like nope: no such node in the cluster",
        ),
        (
            ["--snapshot", "{dir}/ok.json", "--fit", "--node-template", "{dir}/svc.yaml"],
            "--node-template {dir}/svc.yaml: exactly one Node expected",
        ),
        (
            ["--snapshot", "{dir}/ok.json", "--fit", "--node-template", "{dir}/node-svc.yaml"],
            "--node-template {dir}/node-svc.yaml: Service is neither the Node nor one of its ResourceSlices",
        ),
        (
            ["--snapshot", "{dir}/ok.json", "--fit", "--node-template", "{dir}/node-slice.yaml"],
            "--node-template {dir}/node-slice.yaml: ResourceSlice s: spec.nodeName must be 'big'",
        ),
        (["--snapshot", "{dir}/ok.json", "--drain", "nope"], "--drain nope: no such node in the cluster"),
        (["--snapshot", "{dir}/ok.json", "--drain-selector", "a b"], "--drain-selector 'a b'"),
        (
            ["--snapshot", "{dir}/ok.json", "--config", "{dir}/config.yaml"],
            "simulate: invalid configuration {dir}/config.yaml",
        ),
        (
            ["--snapshot", "{dir}/ok.json", "--capacity", "{dir}/svc.yaml"],
            "--capacity {dir}/svc.yaml: exactly one Pod expected",
        ),
        (["--snapshot", "{dir}/ok.json", "--add", "{dir}/elsewhere.yaml"], "namespace"),
        (["--add", "{dir}/svc.yaml"], "one of the arguments --snapshot --from-cluster is required"),
        (
            ["--snapshot", "{dir}/ok.json", "--kubeconfig", "{dir}/kc"],
            "--kubeconfig: only with --from-cluster",
        ),
        (["--snapshot", "{dir}/ok.json", "--capacity-limit", "0"], "--capacity-limit: at least 1"),
        (["--snapshot", "{dir}/ok.json", "--feature-gates", "NoSuchGate=true"], "NoSuchGate"),
        (["--snapshot", "{dir}/ok.json", "--plugin", "{dir}/missing.py:Thing"], "missing.py"),
    ],
)
def test_bad_flags_and_files_exit_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "old.json").write_text(
        json.dumps({"kind": "ClusterSnapshot", "formatVersion": 7, "objects": {}})
    )
    (tmp_path / "ok.json").write_text(
        json.dumps({"kind": "ClusterSnapshot", "formatVersion": 1, "objects": {}})
    )
    (tmp_path / "svc.yaml").write_text("kind: Service\nmetadata: {name: s}\nspec: {}\n")
    node = "kind: Node\nmetadata: {name: big}\nstatus: {allocatable: {cpu: '8'}}\n---\n"
    (tmp_path / "node-svc.yaml").write_text(node + "kind: Service\nmetadata: {name: s}\nspec: {}\n")
    (tmp_path / "node-slice.yaml").write_text(
        node + "kind: ResourceSlice\nmetadata: {name: s}\nspec: {nodeName: other}\n"
    )
    (tmp_path / "elsewhere.yaml").write_text(
        yaml.safe_dump({**pod("p"), "metadata": {"name": "p", "namespace": "nowhere"}})
    )
    (tmp_path / "config.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 300\n"
    )
    code, out, err = run_cli(capsys, "simulate", *(a.format(dir=tmp_path) for a in args))
    assert code == 2, out + err
    assert message.format(dir=tmp_path) in err


def test_an_unreachable_cluster_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    code, _, err = run_cli(capsys, "simulate", "--from-cluster", "--kubeconfig", str(kubeconfig))
    assert code == 1
    assert err.startswith("simulate: reading the cluster failed: ")
