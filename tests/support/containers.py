"""Helpers of the container tests: Docker, the local endpoint on the host, and `docker run` as the chart
runs the scheduler.

``chart_run`` turns the rendered Deployment's pod into ``docker run`` flags: its args (after the
image's entrypoint, as the kubelet passes them), its environment, its volumes (the ConfigMap's files
mounted read-only, the emptyDir as a tmpfs of its size limit), its user, read-only root filesystem,
dropped capabilities, no privilege escalation and memory limit. Anything in the pod it cannot
translate fails the test rather than being left out.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tests.support.shipping import Manifest, pick

T = TypeVar("T")

DOCKER = shutil.which("docker")
IMAGE = os.environ.get("PYSCHEDULER_IMAGE", "")
PLUGINS_IMAGE = os.environ.get("PYSCHEDULER_PLUGINS_IMAGE", "")
READER_TOKEN = "metrics-reader-token"  # the local endpoint's token for a user allowed to get /metrics


def docker_unavailable() -> str | None:
    """Why the container tests cannot run here, or None."""
    if not IMAGE:
        return "the container tests run through `make image-test` (PYSCHEDULER_IMAGE names the image)"
    if DOCKER is None:
        return "docker not found (`make docker` installs Debian's docker.io)"
    info = subprocess.run([DOCKER, "info"], capture_output=True, text=True, timeout=60, check=False)
    if info.returncode != 0:
        return f"the Docker daemon does not answer (`make docker` starts one): {info.stderr.strip()[:200]}"
    return None


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert DOCKER is not None
    return subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout, check=False)


def image_config(image: str) -> dict[str, Any]:
    inspected = docker("image", "inspect", image)
    assert inspected.returncode == 0, f"image {image} not built: {inspected.stderr}"
    return json.loads(inspected.stdout)[0]["Config"]


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.2) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def https_status(url: str, token: str = "") -> tuple[int, str]:
    """(status, body) of a GET that does not verify the certificate (self-signed by default);
    (0, reason) when nothing answers."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=5, context=context
        ) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except (urllib.error.URLError, OSError) as err:
        return 0, str(err)


@dataclass(slots=True)
class LocalEndpoint:
    """`pyscheduler sim-cluster` on the host: its URL, its admin kubeconfig, and requests to it."""

    url: str
    kubeconfig: Path
    token: str

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


@contextmanager
def local_endpoint(folder: Path, nodes: int = 3) -> Iterator[LocalEndpoint]:
    """The local endpoint with RBAC on: its own admin, and one user who may get /metrics."""
    access = folder / "access.yaml"
    access.write_text(
        yaml.safe_dump(
            {
                "tokens": [{"token": READER_TOKEN, "user": "metrics-reader"}],
                "rules": [{"users": ["metrics-reader"], "verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
            }
        )
    )
    kubeconfig = folder / "admin.kubeconfig"
    log = folder / "sim-cluster.log"
    command = [sys.executable, "-m", "scheduler", "sim-cluster", "--nodes", str(nodes)]
    command += ["--access", str(access), "--kubeconfig-out", str(kubeconfig)]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    def written() -> bool:
        assert process.poll() is None, f"sim-cluster exited:\n{log.read_text()}"
        return "kubeconfig written" in log.read_text()

    try:
        wait_until("the local endpoint's kubeconfig", written, timeout=30)
        kubeconfig.chmod(0o644)  # read by the container's UID 65532
        config = yaml.safe_load(kubeconfig.read_text())
        yield LocalEndpoint(
            url=config["clusters"][0]["cluster"]["server"],
            kubeconfig=kubeconfig,
            token=config["users"][0]["user"]["token"],
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def chart_run(objects: list[Manifest], folder: Path, pod_name: str) -> tuple[list[str], list[str]]:
    """(docker run flags, container args) for the scheduler container of the rendered chart."""
    deployment = pick(objects, "Deployment")
    namespace = deployment["metadata"]["namespace"]
    pod = deployment["spec"]["template"]["spec"]
    (main,) = pod["containers"]
    assert "command" not in main, "the chart must leave the image's entrypoint in place"
    flags: list[str] = []
    user, group = pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]
    flags += ["--user", f"{user}:{group}"]
    security = main["securityContext"]
    flags += ["--read-only"] if security.pop("readOnlyRootFilesystem") else []
    flags += ["--security-opt", "no-new-privileges"] if not security.pop("allowPrivilegeEscalation") else []
    for capability in security.pop("capabilities").pop("drop"):
        flags += ["--cap-drop", capability]
    assert not security, f"securityContext fields not translated: {security}"
    if "memory" in main["resources"].get("limits", {}):
        flags += ["--memory", main["resources"]["limits"]["memory"].replace("Mi", "m").replace("Gi", "g")]
    downward = {"metadata.name": pod_name, "metadata.namespace": namespace}
    for variable in main["env"]:
        value = (
            variable["value"]
            if "value" in variable
            else downward[variable["valueFrom"]["fieldRef"]["fieldPath"]]
        )
        flags += ["--env", f"{variable['name']}={value}"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    for mount in main["volumeMounts"]:
        flags += volume_flags(objects, volumes[mount["name"]], mount, folder)
    return flags, main["args"]


def volume_flags(objects: list[Manifest], volume: Manifest, mount: Manifest, folder: Path) -> list[str]:
    if "configMap" in volume:
        config_map = pick(objects, "ConfigMap", volume["configMap"]["name"])
        source = folder / volume["name"]
        source.mkdir(mode=0o755, exist_ok=True)
        for key, text in config_map["data"].items():
            (source / key).write_text(text)
            (source / key).chmod(0o644)
        return ["--volume", f"{source}:{mount['mountPath']}:ro"]
    if "emptyDir" in volume:
        size = volume["emptyDir"].get("sizeLimit", "64Mi").replace("Mi", "m")
        return ["--tmpfs", f"{mount['mountPath']}:rw,size={size},mode=1777"]
    raise AssertionError(f"volume {volume['name']} is of a kind the container test does not translate")


def run_args(
    image: str, flags: list[str], args: list[str], entrypoint: str | None = None, name: str | None = None
) -> list[str]:
    """`docker run` on the host network with ``flags`` (from ``chart_run``); detached when named."""
    command = ["run", "--network", "host", *flags]
    command += ["--detach", "--name", name] if name else ["--rm"]
    command += ["--entrypoint", entrypoint] if entrypoint else []
    return [*command, image, *args]
