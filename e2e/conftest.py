"""End-to-end suite against the cluster of $KUBECONFIG; run it with `make e2e`.

Two modes: ``--scheduler=chart`` (default) installs helm/pyscheduler with ``--image`` and
uninstalls it afterwards; ``--scheduler=external`` tests a scheduler that is already running
(for instance ``pyscheduler run`` on a laptop), reached at ``--metrics-url``. Every test skips
with the reason when no cluster answers.

The scheduler serves HTTPS with delegated authorization: the probes are open to anyone, /metrics
needs a token whose user may ``get`` it. In chart mode the suite binds the chart's
metrics-reader ClusterRole to a service account of its own (``rbac.metricsReader``) and reads
/metrics with that account's token through a port-forward (the API server's pod proxy does not
pass the caller's token on); the probes go through the pod proxy, anonymous like the kubelet's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kube import ROOT, CommandFailed, Kubectl, find_tool, https_get, run, unique, wait_for

CHART = ROOT / "helm" / "pyscheduler"
PORT = 10251
METRICS_READER = "pyscheduler-e2e-metrics"  # chart mode: the service account bound to metrics-reader


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyscheduler e2e")
    group.addoption(
        "--scheduler",
        choices=("chart", "external"),
        default="chart",
        help="chart: install the Helm chart; external: test a scheduler that is already running",
    )
    group.addoption("--scheduler-name", default="pyscheduler", help="the schedulerName under test")
    group.addoption("--image", default="pyscheduler:dev", help="chart mode: the scheduler image (REPO:TAG)")
    group.addoption("--release", default="pyscheduler-e2e", help="chart mode: Helm release name")
    group.addoption("--install-namespace", default="pyscheduler-e2e", help="chart mode: release namespace")
    group.addoption(
        "--metrics-url",
        default=f"https://127.0.0.1:{PORT}",
        help="external mode: the scheduler's server (http://... if it runs with --plain-http)",
    )
    group.addoption(
        "--metrics-token",
        default=os.environ.get("PYSCHEDULER_METRICS_TOKEN", ""),
        help="external mode: a bearer token allowed to get /metrics (default: $PYSCHEDULER_METRICS_TOKEN)",
    )
    group.addoption("--pod-image", default="registry.k8s.io/pause:3.10", help="image of the test workloads")
    group.addoption(
        "--no-kubelets",
        action="store_true",
        help="nodes are simulated (e.g. kwok): check that pods are bound, not that they run",
    )
    group.addoption("--keep", action="store_true", help="chart mode: leave the release installed afterwards")
    group.addoption(
        "--helm-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="chart mode: one more `helm --set` for the release, e.g. imagePullSecrets[0].name=regcred",
    )


@dataclass(slots=True)
class Scheduler:
    """The scheduler under test, however it was started."""

    kubectl: Kubectl
    mode: str
    name: str
    namespace: str = ""
    release: str = ""
    url: str = ""
    token: str = ""  # a bearer token allowed to get /metrics ("" when none is known)

    @property
    def installed(self) -> bool:
        return self.mode == "chart"

    @property
    def fullname(self) -> str:
        """The release's full name (the chart's naming rule): its Lease and service account."""
        return self.release if "pyscheduler" in self.release else f"{self.release}-pyscheduler"

    @property
    def lease(self) -> str:
        return self.fullname

    @property
    def plain_http(self) -> bool:
        return not self.installed and self.url.startswith("http://")

    def pods(self) -> list[dict]:
        selector = f"app.kubernetes.io/instance={self.release},app.kubernetes.io/name=pyscheduler"
        return self.kubectl.json("get", "pods", "-n", self.namespace, "-l", selector)["items"]

    def leader(self) -> str | None:
        """The pod holding the Lease (identities are POD_NAME, optionally with a suffix)."""
        lease = self.kubectl.get_or_none("lease", self.lease, self.namespace)
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
        names = [p["metadata"]["name"] for p in self.pods() if not p["metadata"].get("deletionTimestamp")]
        return next((n for n in names if holder == n or holder.startswith(f"{n}_")), None)

    def some_pod(self) -> str:
        return self.leader() or self.pods()[0]["metadata"]["name"]

    def get_anonymous(self, path: str, pod: str | None = None) -> str:
        """GET without credentials, as the kubelet probes: in chart mode through the API server's
        pod proxy (HTTPS to the pod, which drops the caller's own credentials)."""
        if not self.installed:
            return https_get(self.url.rstrip("/") + path)
        pod = pod or self.some_pod()
        return self.kubectl.raw(f"/api/v1/namespaces/{self.namespace}/pods/https:{pod}:{PORT}/proxy{path}")

    def get(self, path: str, token: str | None = None, pod: str | None = None) -> str:
        """GET with a bearer token (the metrics reader's by default): in chart mode over a
        port-forward to the pod. Raises urllib.error.HTTPError on 401/403."""
        token = self.token if token is None else token
        if not self.installed:
            return https_get(self.url.rstrip("/") + path, token)
        with self.kubectl.port_forward(self.namespace, f"pod/{pod or self.some_pod()}", PORT) as local:
            return https_get(f"https://127.0.0.1:{local}{path}", token)


@pytest.fixture(scope="session")
def kubectl() -> Kubectl:
    binary = find_tool("kubectl")
    if binary is None:
        pytest.skip("kubectl not found in the virtualenv or on PATH (run `make install`)")
    kubectl = Kubectl(binary)
    try:
        kubectl("version", "--request-timeout=5s")
    except CommandFailed as error:
        where = os.environ.get("KUBECONFIG") or "the default kubeconfig"
        pytest.skip(f"no cluster reachable through {where}: {error.output.splitlines()[-1][:200]}")
    return kubectl


@pytest.fixture(scope="session")
def scheduler(request: pytest.FixtureRequest, kubectl: Kubectl) -> Iterator[Scheduler]:
    option = request.config.getoption
    if option("--scheduler") == "external":
        url, token = option("--metrics-url"), option("--metrics-token")
        yield Scheduler(kubectl, "external", option("--scheduler-name"), url=url, token=token)
        return
    helm = find_tool("helm")
    if helm is None:
        pytest.skip("helm not found in .tools/bin or on PATH (run `make tools`)")
    sched = Scheduler(
        kubectl, "chart", option("--scheduler-name"), option("--install-namespace"), option("--release")
    )
    readers = f'rbac.metricsReader.serviceAccounts=[{{"name": "{METRICS_READER}"}}]'
    sets = [arg for item in option("--helm-set") for arg in ("--set", item)]
    install_chart(helm, sched, option("--image"), "--set-json", readers, *sets)
    wait_for("a scheduler replica to take the Lease", sched.leader, timeout=120)
    sched.token = service_account_token(kubectl, sched.namespace, METRICS_READER)
    yield sched
    if not option("--keep"):
        uninstall_chart(helm, sched)
        kubectl("delete", "namespace", sched.namespace, "--wait=false", "--ignore-not-found")


def install_chart(helm: str, sched: Scheduler, image: str, *extra: str) -> None:
    repository, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    run(
        [
            helm, "upgrade", "--install", sched.release, str(CHART),
            "--namespace", sched.namespace, "--create-namespace",
            "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
            "--set", f"schedulerName={sched.name}",
            "--wait", "--timeout", "5m", *extra,
        ],
        timeout=330,
    )  # fmt: skip


def service_account_token(kubectl: Kubectl, namespace: str, name: str) -> str:
    """A short-lived token of the service account ``name``, created first if need be."""
    kubectl.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
    )
    return kubectl("create", "token", name, "-n", namespace, "--duration=1h").strip()


def uninstall_chart(helm: str, sched: Scheduler) -> None:
    run(
        [
            helm,
            "uninstall",
            sched.release,
            "--namespace",
            sched.namespace,
            "--wait",
            "--cascade",
            "foreground",
        ],
        timeout=330,
    )


@pytest.fixture(scope="session")
def helm_binary(scheduler: Scheduler) -> str:
    if not scheduler.installed:
        pytest.skip("--scheduler=external: the suite did not install the chart")
    helm = find_tool("helm")
    assert helm is not None
    return helm


@pytest.fixture
def namespace(kubectl: Kubectl) -> Iterator[str]:
    """A fresh namespace for one test's workloads, deleted afterwards."""
    name = unique("pyscheduler-e2e-work")
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")
