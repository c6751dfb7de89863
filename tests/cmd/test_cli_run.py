"""`pyscheduler run` refuses what would make it act as the cluster's default scheduler, and bad flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.cli import main

CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG + text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "profiles:\n- schedulerName: default-scheduler\n",
            'refusing profiles[0].schedulerName "default-scheduler"',
        ),
        (
            "leaderElection:\n  leaderElect: true\n  resourceNamespace: kube-system\n"
            "  resourceName: kube-scheduler\n",
            "refusing leaderElection.resourceName/resourceNamespace kube-system/kube-scheduler",
        ),
    ],
)
def test_acting_as_the_default_scheduler_is_refused_with_exit_2(tmp_path, capsys, text, message) -> None:
    assert main(["run", "--config", write(tmp_path, text)]) == 2
    err = capsys.readouterr().err
    assert message in err and "--allow-default-scheduler-name" in err


def test_the_explicit_flag_lets_a_default_scheduler_profile_through(tmp_path, capsys) -> None:
    config = write(tmp_path, "profiles:\n- schedulerName: default-scheduler\n")
    missing = str(tmp_path / "no-such-kubeconfig")
    # past the refusal, it fails later: there is no cluster to reach
    assert main(["run", "--config", config, "--allow-default-scheduler-name", "--kubeconfig", missing]) == 1
    assert "refusing" not in capsys.readouterr().err


def test_a_lease_in_kube_system_under_another_name_is_fine(tmp_path) -> None:
    config = write(tmp_path, "leaderElection: {leaderElect: false, resourceNamespace: kube-system}\n")
    assert main(["run", "--config", config, "--kubeconfig", str(tmp_path / "none")]) == 1


def test_a_half_given_tls_pair_exits_2_naming_the_flags(tmp_path, capsys) -> None:
    (tmp_path / "tls.crt").write_text("x")
    assert main(["run", "--tls-cert-file", str(tmp_path / "tls.crt")]) == 2
    assert "--tls-cert-file and --tls-private-key-file must be given together" in capsys.readouterr().err


def test_an_unusable_proxy_variable_exits_2_naming_it(tmp_path, capsys, monkeypatch) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://api.cluster.invalid:6443'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    monkeypatch.setenv("HTTPS_PROXY", "socks4://proxy.corp:1080")
    config = write(tmp_path, "leaderElection: {leaderElect: false}\n")
    assert main(["run", "--config", config, "--kubeconfig", str(kubeconfig), "--plain-http"]) == 2
    assert "$HTTPS_PROXY: proxy 'socks4://proxy.corp:1080'" in capsys.readouterr().err
