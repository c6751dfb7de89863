"""The image, run as the chart runs it: `make image-test` builds it (PYSCHEDULER_IMAGE), and once more
with the example plugins and the sim extra (PYSCHEDULER_PLUGINS_IMAGE), then runs these tests.

Each container gets the rendered chart's args after the image's entrypoint, its environment, its
ConfigMap and tmpfs, UID 65532, a read-only root filesystem and no capabilities (containers.py),
on the host network against the local endpoint on the host (its kubeconfig mounted read-only, the
one flag the chart does not give: in a cluster the service account is used).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.containers import (
    IMAGE,
    PLUGINS_IMAGE,
    READER_TOKEN,
    LocalEndpoint,
    chart_run,
    docker,
    docker_unavailable,
    free_port,
    https_status,
    image_config,
    local_endpoint,
    run_args,
    wait_until,
)
from tests.support.shipping import HELM, NO_HELM, Manifest, parse, pick, render_chart

UNAVAILABLE = docker_unavailable()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.helm,
    pytest.mark.skipif(HELM is None, reason=NO_HELM),
    pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE)),
]

KUBECONFIG = "/var/run/pyscheduler/kubeconfig"  # where the container finds the local endpoint's
NAMESPACE = "pyscheduler"  # the release namespace: the Lease's
SIM_COMMANDS = ("sim-cluster", "demo", "simulate")


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEndpoint]:
    with local_endpoint(tmp_path_factory.mktemp("endpoint")) as sim:
        sim.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        yield sim


def rendered(port: int, values: tuple[str, ...] = ()) -> list[Manifest]:
    extra = json.dumps([f"--kubeconfig={KUBECONFIG}"])
    return parse(render_chart("pyscheduler", NAMESPACE, values, (f"port={port}",), (f"extraArgs={extra}",)))


class Container:
    """One scheduler container started detached with the chart's flags and args."""

    def __init__(self, image: str, objects: list[Manifest], folder: Path, endpoint: LocalEndpoint) -> None:
        self.name = f"pyscheduler-test-{uuid.uuid4().hex[:8]}"
        flags, self.args = chart_run(objects, folder, pod_name=self.name)
        self.flags = [*flags, "--volume", f"{endpoint.kubeconfig}:{KUBECONFIG}:ro"]
        self.image = image

    def start(self) -> None:
        started = docker(*run_args(self.image, self.flags, self.args, name=self.name))
        assert started.returncode == 0, started.stderr

    def logs(self) -> str:
        result = docker("logs", self.name)
        return result.stdout + result.stderr

    def stop(self) -> int:
        """SIGTERM, as the kubelet stops a pod; the exit code."""
        docker("stop", "--time", "20", self.name, timeout=60)
        return int(docker("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout.strip())

    def remove(self) -> None:
        docker("rm", "--force", self.name)


@pytest.fixture
def container(endpoint: LocalEndpoint, tmp_path: Path) -> Iterator[Container]:
    made = Container(IMAGE, rendered(free_port()), tmp_path, endpoint)
    yield made
    made.remove()


def port_of(args: list[str]) -> int:
    return int(next(arg for arg in args if arg.startswith("--port=")).removeprefix("--port="))


def wait_ready(running: Container) -> str:
    url = f"https://127.0.0.1:{port_of(running.args)}"
    try:
        wait_until("/readyz 200", lambda: https_status(f"{url}/readyz")[0] == 200, timeout=60)
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n{running.logs()}") from None
    return url


def create_pods(endpoint: LocalEndpoint, prefix: str, count: int) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        spec = {
            "schedulerName": "pyscheduler",
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
        }
        endpoint.request(
            "POST", "/api/v1/namespaces/default/pods", {"metadata": {"name": name}, "spec": spec}
        )
    return names


def all_bound(endpoint: LocalEndpoint, names: list[str]) -> dict[str, str] | None:
    nodes = {
        name: endpoint.request("GET", f"/api/v1/namespaces/default/pods/{name}")["spec"].get("nodeName")
        for name in names
    }
    return nodes if all(nodes.values()) else None


def test_the_image_and_the_chart_agree_on_entrypoint_user_and_home(tmp_path: Path) -> None:
    config = image_config(IMAGE)
    objects = rendered(free_port())
    pod = pick(objects, "Deployment")["spec"]["template"]["spec"]
    assert config["Entrypoint"] == ["pyscheduler", "run"]
    assert config["User"] == f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    assert "HOME=/tmp" in config["Env"]
    # the image's default args name the file the chart mounts, and the chart's args name it too
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "config")
    assert config["Cmd"] == [f"--config={mount['mountPath']}/config.yaml"]
    assert pod["containers"][0]["args"][0] == config["Cmd"][0]
    flags, _ = chart_run(objects, tmp_path, pod_name="check")
    assert {"--read-only", "--cap-drop", "ALL", "--user", "65532:65532"} <= set(flags)


def test_help_exits_0(container: Container) -> None:
    result = docker(*run_args(IMAGE, container.flags, ["--help"]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: pyscheduler run")


def test_a_config_error_exits_2_naming_the_field(container: Container, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir(mode=0o755)
    (bad / "config.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 140\nprofiles:\n- schedulerName: pyscheduler\n"
    )
    (bad / "config.yaml").chmod(0o644)
    flags = [*container.flags, "--volume", f"{bad}:/etc/pyscheduler-bad:ro"]
    args = ["--config=/etc/pyscheduler-bad/config.yaml", *container.args[1:]]
    result = docker(*run_args(IMAGE, flags, args))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "percentageOfNodesToScore: Invalid value: 140: not in valid range [0-100]" in result.stderr


def test_with_the_charts_args_it_serves_https_leads_binds_pods_and_guards_metrics(
    container: Container, endpoint: LocalEndpoint
) -> None:
    container.start()
    url = wait_ready(container)
    assert https_status(f"{url}/healthz") == (200, "ok")
    names = create_pods(endpoint, "chart-args", 3)
    bound = wait_until("the pods bound", lambda: all_bound(endpoint, names), timeout=30)
    assert set(bound.values()) <= {
        n["metadata"]["name"] for n in endpoint.request("GET", "/api/v1/nodes")["items"]
    }
    lease = endpoint.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pyscheduler")
    assert lease["spec"]["holderIdentity"].startswith(container.name)
    # /metrics: anonymous is refused (403, as kube-scheduler), a bad token is not authenticated
    # (401), the metrics reader's token reads kube-scheduler's metric names
    assert https_status(f"{url}/metrics")[0] == 403
    assert https_status(f"{url}/metrics", token="not-a-token")[0] == 401
    status, metrics = https_status(f"{url}/metrics", token=READER_TOKEN)
    assert status == 200
    assert 'scheduler_schedule_attempts_total{profile="pyscheduler",result="scheduled"} 3.0' in metrics
    assert container.stop() == 0, container.logs()


def test_the_runtime_image_has_no_sim_extra_pip_tests_or_sources(container: Container) -> None:
    for command in SIM_COMMANDS:
        result = docker(*run_args(IMAGE, container.flags, [command], entrypoint="pyscheduler"))
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.count("\n") == 1
        assert "pip install 'pyscheduler[sim]'" in result.stderr
    probe = (
        "import importlib.util, json, pathlib, site;"
        "root = pathlib.Path(site.getsitepackages()[0]);"
        "print(json.dumps({"
        "'modules': {m: importlib.util.find_spec(m) is not None"
        " for m in ('pip', 'setuptools', 'simcluster', 'kubernetes_asyncio', 'scheduler')},"
        "'sources': len(list(root.rglob('*.py'))),"
        "'tests': sorted(str(p.relative_to(root)) for p in root.rglob('tests') if p.is_dir())}))"
    )
    result = docker(*run_args(IMAGE, container.flags, ["-c", probe], entrypoint="python3"))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["modules"] == {
        "pip": False,
        "setuptools": False,
        "simcluster": False,
        "kubernetes_asyncio": False,
        "scheduler": True,
    }
    assert found["sources"] == 0  # bytecode only
    assert found["tests"] == []


@pytest.mark.skipif(not PLUGINS_IMAGE, reason="PYSCHEDULER_PLUGINS_IMAGE not set (`make image-test` sets it)")
def test_the_plugins_image_runs_the_entry_point_plugins_the_chart_enables(
    endpoint: LocalEndpoint, tmp_path: Path
) -> None:
    running = Container(PLUGINS_IMAGE, rendered(free_port(), ("plugins-values.yaml",)), tmp_path, endpoint)
    try:
        listed = docker(*run_args(PLUGINS_IMAGE, running.flags, ["plugins"], entrypoint="pyscheduler"))
        assert listed.returncode == 0, listed.stderr
        for plugin in ("CostByLabel", "MaintenanceWindow"):
            line = next((row for row in listed.stdout.splitlines() if row.startswith(plugin)), "")
            assert "pyscheduler_example_plugins" in line, listed.stdout
        running.start()
        url = wait_ready(running)
        status, configz = https_status(f"{url}/configz", token=endpoint.token)
        assert status == 200, configz
        assert "CostByLabel" in configz and "MaintenanceWindow" in configz
        names = create_pods(endpoint, "with-plugins", 2)
        wait_until("the pods bound by the plugins' profile", lambda: all_bound(endpoint, names), timeout=30)
        assert running.stop() == 0, running.logs()
    finally:
        running.remove()


@pytest.mark.skipif(not PLUGINS_IMAGE, reason="PYSCHEDULER_PLUGINS_IMAGE not set (`make image-test` sets it)")
def test_the_sim_extra_brings_the_local_endpoint(tmp_path: Path) -> None:
    flags, _ = chart_run(rendered(free_port()), tmp_path, pod_name="sim")
    result = docker(*run_args(PLUGINS_IMAGE, flags, ["sim-cluster", "--help"], entrypoint="pyscheduler"))
    assert result.returncode == 0, result.stderr
    assert "--kubeconfig-out" in result.stdout
