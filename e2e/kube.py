"""A thin kubectl/helm driver for the e2e suite.

The suite talks to the cluster through the real ``kubectl`` and ``helm`` binaries rather than
the scheduler's own client code, so that a bug shared by the scheduler and its tests cannot
hide itself.
"""

from __future__ import annotations

import json
import re
import selectors
import shutil
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def find_tool(name: str) -> str | None:
    """The virtualenv's copy first (kubectl v1.36 from the `dev` extra), then .tools/bin, then PATH."""
    for folder in (Path(sys.executable).parent, ROOT / ".tools" / "bin"):
        if (folder / name).is_file():
            return str(folder / name)
    return shutil.which(name)


class CommandFailed(Exception):
    """A kubectl or helm command exited non-zero; ``output`` is what it said about it."""

    def __init__(self, argv: list[str], output: str) -> None:
        super().__init__(f"{' '.join(argv)}: {output}")
        self.output = output


def run(argv: list[str], stdin: str | None = None, timeout: float = 120) -> str:
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise CommandFailed(argv, result.stderr.strip() or result.stdout.strip())
    return result.stdout


@dataclass(slots=True, frozen=True)
class Kubectl:
    binary: str

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
        return run([self.binary, *args], stdin=stdin, timeout=timeout)

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))

    def raw(self, path: str) -> str:
        return self("get", "--raw", path)

    def apply(self, *objects: dict[str, Any]) -> None:
        """Apply as JSON, without client-side validation: that needs the server's OpenAPI
        document, which local API endpoints (`pyscheduler sim-cluster`) may not serve."""
        items = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
        self("apply", "--validate=false", "-f", "-", stdin=json.dumps(items))

    def node_of(self, pod: str, namespace: str) -> str | None:
        """The node a pod is bound to, or None while it is pending."""
        return self.json("get", "pod", pod, "-n", namespace)["spec"].get("nodeName")

    @contextmanager
    def port_forward(self, namespace: str, target: str, port: int, timeout: float = 30) -> Iterator[int]:
        """``kubectl port-forward`` to ``target`` (``pod/NAME``); yields the local port on 127.0.0.1."""
        argv = [self.binary, "port-forward", "-n", namespace, "--address", "127.0.0.1", target, f":{port}"]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            yield _forwarded_port(argv, process, timeout)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def get_or_none(self, kind: str, name: str, namespace: str) -> Any:
        try:
            return self.json("get", kind, name, "-n", namespace)
        except CommandFailed as error:
            if "NotFound" in error.output or "not found" in error.output:
                return None
            raise


def _forwarded_port(argv: list[str], process: subprocess.Popen[str], timeout: float) -> int:
    """The local port from kubectl's ``Forwarding from 127.0.0.1:PORT -> ...`` line."""
    assert process.stdout is not None and process.stderr is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                break
            line = process.stdout.readline()
            if not line:  # kubectl exited: say why
                raise CommandFailed(argv, process.stderr.read().strip() or "port-forward exited")
            found = re.search(r"127\.0\.0\.1:(\d+) ->", line)
            if found:
                return int(found[1])
    raise CommandFailed(argv, f"no forwarded port announced within {timeout:.0f}s")


def https_get(url: str, token: str = "", timeout: float = 10) -> str:
    """GET ``url`` with an optional bearer token. The certificate is not verified: the scheduler's
    is self-signed by default. Raises urllib.error.HTTPError on 4xx/5xx."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        return response.read().decode()


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 90, interval: float = 1) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def pod_spec(scheduler_name: str, image: str, **extra: Any) -> dict[str, Any]:
    """A pause container that fits the restricted Pod Security Standard and asks little."""
    return {
        "schedulerName": scheduler_name,
        "terminationGracePeriodSeconds": 0,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "pause",
                "image": image,
                "resources": {"requests": {"cpu": "5m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
        **extra,
    }


def pod(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def metric_names(exposition: str) -> set[str]:
    """Metric family names present in a Prometheus text exposition."""
    names = set()
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            names.add(line.split("{", 1)[0].split(" ", 1)[0])
    return names
