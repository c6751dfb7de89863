"""`pyscheduler podgroup-controller` keeps PodGroup status on the local endpoint."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
import ssl
import sys
import threading
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import pytest
import yaml
from aiohttp import web

from scheduler.cli import main as cli
from scheduler.client.config import load_client_config
from scheduler.client.rest import KubeClient
from scheduler.podgroup_controller import operator
from scheduler.podgroup_controller.reconciler import Reconciler
from simcluster import SimCluster
from tests.support.cluster import eventually
from tests.support.coscheduling import PODGROUPS, install_crd, member, podgroup
from tests.support.crds import Http
from tests.support.extender import make_pki
from tests.support.rawhttp import Server, TunnelProxy

GROUP = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/train"
OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u-1", "controller": True}


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    # the kubelet starts bound pods; no other controllers (the pods' owner is made up)
    async with SimCluster(nodes=2, kubelet=True, controllers=False, bookmark_interval=0.5) as cluster:
        await install_crd(cluster)
        yield cluster


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def running(
    sim: SimCluster, tmp_path: Path, reconciler: type[Reconciler] = Reconciler, resync: float = 300.0
) -> AsyncIterator[str]:
    """The operator in a thread with its own event loop, as its own process would run it;
    yields the URL of its liveness probe."""
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "kubeconfig"))
    stop, ready = threading.Event(), threading.Event()
    liveness = f"http://127.0.0.1:{free_port()}/healthz"

    async def run() -> None:
        config = await load_client_config(kubeconfig)
        async with KubeClient(config) as client:
            await operator.run(
                config,
                reconciler(client),
                liveness_endpoint=liveness,
                stop_flag=stop,
                ready_flag=ready,
                resync_seconds=resync,
            )

    thread = threading.Thread(target=lambda: asyncio.run(run()), name="podgroup-controller", daemon=True)
    thread.start()
    assert await asyncio.to_thread(ready.wait, 10), "the controller did not start"
    yield liveness
    stop.set()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()


@pytest.fixture
async def controller(sim: SimCluster, tmp_path: Path) -> AsyncIterator[str]:
    async with running(sim, tmp_path) as liveness:
        yield liveness


async def probe(url: str, timeout: float = 10.0) -> int:
    """The probe's HTTP status, once kopf serves it (it starts next to the watches)."""
    deadline = asyncio.get_running_loop().time() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(url) as answer:
                    return answer.status
            except aiohttp.ClientConnectionError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.05)


def status(sim: SimCluster) -> dict[str, Any]:
    return (sim.store.get(PODGROUPS, "default", "train") or {}).get("status") or {}


def phase_is(sim: SimCluster, phase: str) -> dict[str, Any] | None:
    found = status(sim)
    return found if found.get("phase") == phase else None


async def test_the_status_follows_the_group_from_pending_to_finished(
    sim: SimCluster, controller: str
) -> None:
    assert await probe(controller) == 200  # what the chart's livenessProbe asks
    await sim.create(PODGROUPS, podgroup("train", 2))
    await eventually(lambda: phase_is(sim, "Pending"))
    for i in range(2):
        pod = member(f"train-{i}", "train", cpu="1", schedulerName="nobody")
        pod["metadata"]["ownerReferences"] = [OWNER]
        await sim.create("pods", pod)
    scheduling = await eventually(lambda: phase_is(sim, "Scheduling"))
    assert scheduling["occupiedBy"] == "default/train"
    assert scheduling["scheduleStartTime"].endswith("Z")

    async with aiohttp.ClientSession() as session:
        http = Http(session, sim.url)
        for i in range(2):
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": f"train-{i}"},
                "target": {"kind": "Node", "name": "node-0000"},
            }
            code, body, _ = await http.call(
                "POST", f"/api/v1/namespaces/default/pods/train-{i}/binding", binding
            )
            assert code == 201, body
        running = await eventually(lambda: phase_is(sim, "Running"))
        assert (running["running"], running["succeeded"], running["failed"]) == (2, 0, 0)
        assert running["scheduleStartTime"] == scheduling["scheduleStartTime"]

        for i in range(2):
            code, body, _ = await http.call(
                "PATCH",
                f"/api/v1/namespaces/default/pods/train-{i}/status",
                {"status": {"phase": "Succeeded"}},
                "application/merge-patch+json",
            )
            assert code == 200, body
        finished = await eventually(lambda: phase_is(sim, "Finished"))
    assert (finished["running"], finished["succeeded"], finished["failed"]) == (0, 2, 0)


async def test_a_group_short_of_members_stays_pending(sim: SimCluster, controller: str) -> None:
    await sim.create(PODGROUPS, podgroup("train", 3))
    await sim.create("pods", member("train-0", "train", cpu="1", schedulerName="nobody"))
    await eventually(lambda: phase_is(sim, "Pending"))
    # another group's status is settled meanwhile: the controller has seen the pod by then
    await sim.create(PODGROUPS, podgroup("other", 1))
    await sim.create("pods", member("other-0", "other", cpu="1", schedulerName="nobody"))
    await eventually(
        lambda: (
            ((sim.store.get(PODGROUPS, "default", "other") or {}).get("status") or {}).get("phase")
            == "Scheduling"
        )
    )
    assert phase_is(sim, "Pending")


class MissesEvents(Reconciler):
    """Ignores every event: only the periodic resync brings the status up to date."""

    resyncing = False

    async def resync(self, namespaces: Collection[str] = ()) -> None:
        self.resyncing = True
        try:
            await super().resync(namespaces)
        finally:
            self.resyncing = False

    async def reconcile(self, namespace: str, name: str) -> None:
        if self.resyncing:
            await super().reconcile(namespace, name)


async def test_the_periodic_resync_repairs_what_missed_events_left_stale(
    sim: SimCluster, tmp_path: Path
) -> None:
    async with running(sim, tmp_path, MissesEvents, resync=0.1):
        await sim.create(PODGROUPS, podgroup("train", 1))
        await sim.create("pods", member("train-0", "train", cpu="1", schedulerName="nobody"))
        await eventually(lambda: phase_is(sim, "Scheduling"))


async def test_a_resync_reconciles_the_groups_of_its_namespaces_only(sim: SimCluster, tmp_path: Path) -> None:
    await sim.create(PODGROUPS, podgroup("train", 1))
    other = podgroup("train", 1)
    other["metadata"]["namespace"] = "batch"
    await sim.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}})
    await sim.create(PODGROUPS, other)
    config = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    async with KubeClient(config) as client:
        await Reconciler(client).resync(["default"])
    assert phase_is(sim, "Pending")
    assert "status" not in (sim.store.get(PODGROUPS, "batch", "train") or {})


async def test_a_group_found_gone_is_forgotten(sim: SimCluster, tmp_path: Path) -> None:
    await sim.create(PODGROUPS, podgroup("train", 1))
    config = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    async with KubeClient(config) as client:
        reconciler = Reconciler(client)
        await reconciler.reconcile("default", "train")
        await reconciler.reconcile("default", "never-created")  # a pod naming a missing group
        assert list(reconciler._locks) == ["default/train"]
        sim.api.delete(sim.api.resource(PODGROUPS), "default", "train")
        await reconciler.reconcile("default", "train")
        assert reconciler._locks == {}


def test_the_pods_watch_asks_the_server_for_labelled_pods_only() -> None:
    settings = kopf.OperatorSettings()
    operator.configure(settings)
    pods = kopf.Resource("", "v1", "pods")
    assert settings.watching.label_selectors.collect(pods) == ["scheduling.x-k8s.io/pod-group"]
    assert (
        settings.watching.label_selectors.collect(
            kopf.Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups")
        )
        == []
    )


def test_a_resync_period_that_is_not_positive_stops_it_with_exit_code_2(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli(["podgroup-controller", "--resync-period", "0"])
    assert exited.value.code == 2
    assert "--resync-period: must be a number greater than 0: '0'" in capsys.readouterr().err


def test_a_kubeconfig_that_does_not_exist_stops_it_with_exit_code_2(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope"
    assert cli(["podgroup-controller", "--kubeconfig", str(missing)]) == 2
    assert f"kubeconfig {missing} does not exist" in capsys.readouterr().err


def test_a_kubeconfig_that_cannot_be_read_names_the_problem(tmp_path: Path, capsys) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: 5\n")
    assert cli(["podgroup-controller", "--kubeconfig", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pyscheduler podgroup-controller: kubeconfig {broken} is not usable:"), err


@pytest.mark.slow
async def test_the_command_keeps_status_and_stops_cleanly_on_sigterm(sim: SimCluster, tmp_path: Path) -> None:
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scheduler",
        "podgroup-controller",
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await sim.create(PODGROUPS, podgroup("train", 1))
        await sim.create("pods", member("train-0", "train", cpu="1", schedulerName="nobody"))
        await eventually(lambda: phase_is(sim, "Scheduling"), timeout=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()


# ---------------------------------------------------------------------------- how kopf logs in

PKI = make_pki()
EXEC_PLUGIN = """#!{python}
import json
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {{"clientCertificateData": {cert!r}, "clientKeyData": {key!r}}}}}))
"""


class TlsApi:
    """An HTTPS API server on loopback (the test PKI's certificate, for 127.0.0.1 and
    extender.test) that records the name each client asked for (SNI) and its certificate's CN."""

    def __init__(self, tmp_path: Path) -> None:
        self.context = PKI.server_context(tmp_path, client_certificates=True)
        self.context.verify_mode = ssl.CERT_OPTIONAL
        self.names: list[str | None] = []
        self.peers: list[str | None] = []
        self.context.sni_callback = lambda _, name, __: self.names.append(name)  # type: ignore[assignment, func-returns-value]
        self.port = 0

    async def answer(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item for rdn in (peer or {}).get("subject", ()) for item in rdn)
        self.peers.append(subject.get("commonName"))
        return web.json_response({"kind": "NodeList", "items": []})


@pytest.fixture
async def tls_api(tmp_path: Path) -> AsyncIterator[TlsApi]:
    api = TlsApi(tmp_path)
    app = web.Application()
    app.router.add_get("/{tail:.*}", api.answer)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=api.context)
    await site.start()
    api.port = runner.addresses[0][1]
    yield api
    await runner.cleanup()


def kubeconfig_for(tmp_path: Path, server: str, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    path = tmp_path / "kubeconfig"
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(PKI.ca).decode(), **cluster}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


async def login_and_get(kubeconfig: Path) -> int:
    """What kopf does with the login's answer: requests through its session."""
    info = await operator.KopfLogin(await load_client_config(str(kubeconfig))).login()
    async with info.aiohttp_session as session, session.get(info.server + "/api/v1/nodes") as response:
        return response.status


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


async def test_kopf_asks_for_and_checks_the_kubeconfigs_tls_server_name(
    tls_api: TlsApi, tmp_path: Path, no_proxy_variables: None
) -> None:
    server = f"https://127.0.0.1:{tls_api.port}"
    named = kubeconfig_for(tmp_path, server, {"tls-server-name": "extender.test"}, {"token": "t"})
    assert await login_and_get(named) == 200
    assert tls_api.names == ["extender.test"]
    wrong = kubeconfig_for(tmp_path, server, {"tls-server-name": "other.test"}, {"token": "t"})
    with pytest.raises(aiohttp.ClientConnectorCertificateError, match=r"other\.test"):
        await login_and_get(wrong)


async def test_kopf_presents_an_exec_plugins_client_certificate(
    tls_api: TlsApi, tmp_path: Path, no_proxy_variables: None
) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        EXEC_PLUGIN.format(python=sys.executable, cert=PKI.client_cert.decode(), key=PKI.client_key.decode())
    )
    plugin.chmod(0o755)
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    kubeconfig = kubeconfig_for(tmp_path, f"https://127.0.0.1:{tls_api.port}", {}, exec_user)
    assert await login_and_get(kubeconfig) == 200
    assert tls_api.peers == ["pyscheduler"]


async def test_kopf_goes_through_the_environments_proxy_with_its_credentials(
    tls_api: TlsApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_proxy_variables: None
) -> None:
    proxy = await Server(TunnelProxy(routes={"extender.test:443": ("127.0.0.1", tls_api.port)})).start()
    try:
        monkeypatch.setenv("HTTPS_PROXY", f"http://me:pw@127.0.0.1:{proxy.port}")
        # extender.test resolves nowhere: only the proxy reaches it
        kubeconfig = kubeconfig_for(tmp_path, "https://extender.test", {}, {"token": "t"})
        assert await login_and_get(kubeconfig) == 200
    finally:
        await proxy.stop()
    assert (proxy.seen[0].method, proxy.seen[0].target) == ("CONNECT", "extender.test:443")
    assert proxy.seen[0].headers["proxy-authorization"] == "Basic " + base64.b64encode(b"me:pw").decode()


def test_a_proxy_kopf_cannot_use_stops_it_with_exit_code_2_naming_it(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, no_proxy_variables: None
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://proxy.corp:1080")
    kubeconfig = kubeconfig_for(tmp_path, "https://api.cluster.invalid:6443", {}, {"token": "t"})
    assert cli(["podgroup-controller", "--kubeconfig", str(kubeconfig)]) == 2
    assert "cannot use the socks5 proxy proxy.corp:1080" in capsys.readouterr().err
