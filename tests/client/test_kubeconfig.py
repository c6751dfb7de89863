"""Our kubeconfig loader against client-go's clientcmd semantics, over real HTTP and TLS."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import logging
import os
import re
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from scheduler.client import ClientConfig, KubeClient, TransportError, load_client_config
from scheduler.client.kubeconfig.credentials import TokenFile
from scheduler.client.kubeconfig.errors import CredentialError, KubeconfigError, NotInClusterError
from scheduler.client.kubeconfig.execplugin import EXEC_CLUSTER_EXTENSION, ExecPlugin
from scheduler.client.kubeconfig.incluster import in_cluster_config
from scheduler.client.kubeconfig.loading import load_kubeconfig
from scheduler.testing import FakeClock
from tests.support.extender import Pki, make_pki, record_key_files

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


# ---------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


@pytest.fixture
def key_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files OpenSSL is given certificates and keys by, as the kernel names them."""
    return record_key_files(monkeypatch)


def server_tls(pki: Pki, tmp_path: Path, *, client_certificates: bool = False) -> ssl.SSLContext:
    directory = tmp_path / "server"
    directory.mkdir(exist_ok=True)
    return pki.server_context(directory, client_certificates=client_certificates)


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def config_doc(
    server: str = "https://127.0.0.1:6443",
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    current: str | None = "x",
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "u", "user": user or {}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }
    if current is not None:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """``await serve(handler, tls=None)``: an aiohttp server on loopback; returns its URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler, tls: ssl.SSLContext | None = None) -> str:
        async def route(request: web.Request) -> web.StreamResponse:
            return await handler(request)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", route)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        runners.append(runner)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"{'https' if tls else 'http'}://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


class Recorder:
    """A handler that records each request's Authorization and client certificate's CN."""

    def __init__(self, accept: Callable[[str | None], bool] = lambda auth: True) -> None:
        self.accept = accept
        self.seen: list[str | None] = []
        self.peers: list[str | None] = []

    async def __call__(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization")
        self.seen.append(auth)
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        self.peers.append(_common_name(peer))
        if not self.accept(auth):
            return web.json_response({"kind": "Status", "reason": "Unauthorized", "code": 401}, status=401)
        return web.json_response({"kind": "NodeList", "items": []})


def _common_name(peer: Any) -> str | None:
    for rdn in (peer or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


async def get(config: ClientConfig, path: str = "/api/v1/nodes") -> int:
    async with KubeClient(config, qps=0, timeout=5) as client:
        return (await client.request("GET", path)).status


PLUGIN = """#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
calls = os.path.join(here, "calls.jsonl")
with open(calls, "a") as out:
    record = {{"argv": sys.argv[1:], "info": os.environ.get("KUBERNETES_EXEC_INFO"),
               "env": os.environ.get("PLUGIN_ENV"), "stdin_tty": os.isatty(0)}}
    out.write(json.dumps(record) + "\\n")
with open(calls) as lines:
    runs = sum(1 for _ in lines)
with open(os.path.join(here, "answer.json")) as f:
    answer = json.load(f)
sys.stderr.write(answer.get("stderr", ""))
if "exit" in answer:
    sys.exit(answer["exit"])
out = answer.get("stdout")
if out is None:
    out = json.dumps(answer["credential"]).replace("RUNS", str(runs))
sys.stdout.write(out)
"""


class Plugin:
    """A credential plugin script in its own directory; the test scripts its next answers."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.path = directory / "plugin.py"
        self.path.write_text(PLUGIN.format(python=sys.executable))
        self.path.chmod(0o755)
        self.answer(token="tok-RUNS")

    def answer(
        self,
        *,
        token: str | None = None,
        expires: float | None = None,
        api_version: str = V1,
        cert: tuple[bytes, bytes] | None = None,
        **raw: Any,
    ) -> None:
        status: dict[str, Any] = {}
        if token is not None:
            status["token"] = token
        if expires is not None:
            status["expirationTimestamp"] = (
                datetime.datetime.fromtimestamp(expires, datetime.UTC).isoformat().replace("+00:00", "Z")
            )
        if cert is not None:
            status["clientCertificateData"], status["clientKeyData"] = cert[0].decode(), cert[1].decode()
        answer = {"credential": {"apiVersion": api_version, "kind": "ExecCredential", "status": status}}
        answer.update(raw)
        (self.dir / "answer.json").write_text(json.dumps(answer))

    def calls(self) -> list[dict[str, Any]]:
        path = self.dir / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def user(self, **fields: Any) -> dict[str, Any]:
        """A kubeconfig user that runs this plugin (by the path relative to the kubeconfig)."""
        spec = {"apiVersion": V1, "command": "./plugin.py", "interactiveMode": "Never", **fields}
        return {"exec": spec}


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    return Plugin(tmp_path / "plugin")


# ---------------------------------------------------------------------------- merging and paths


async def test_files_merge_as_clientcmd_does_the_first_file_to_name_an_entry_wins_it_whole(
    tmp_path: Path,
) -> None:
    first = write(
        tmp_path / "a",
        {
            "users": [{"name": "u", "user": {"token": "from-a"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        },
    )
    second = write(
        tmp_path / "b",
        {
            "current-context": "x",
            "clusters": [{"name": "c", "cluster": {"server": "http://b.example:8080"}}],
            # u is a's: b's fields for it are dropped, even those a does not set
            "users": [{"name": "u", "user": {"username": "b", "password": "p"}}],
            "contexts": [{"name": "x", "context": {"cluster": "elsewhere", "user": "u"}}],
        },
    )
    config = await load_kubeconfig([first, tmp_path / "missing", second])
    assert config.server == "http://b.example:8080"
    assert await config.credentials.authorization() == "Bearer from-a"
    assert config.cluster_origin == f'cluster "c" in {second}'
    assert config.user_origin == f'user "u" in {first}'


async def test_the_current_context_comes_from_the_first_file_that_sets_one(tmp_path: Path) -> None:
    doc = config_doc("http://one:1")
    doc["clusters"].append({"name": "c2", "cluster": {"server": "http://two:2"}})
    doc["contexts"].append({"name": "y", "context": {"cluster": "c2", "user": "u"}})
    first = write(tmp_path / "a", {**doc, "current-context": ""})  # empty: not set
    second = write(tmp_path / "b", {"current-context": "y"})
    third = write(tmp_path / "c", {"current-context": "x"})
    joined = os.pathsep.join(map(str, [first, second, third]))
    assert (await load_kubeconfig(joined)).server == "http://two:2"
    assert (await load_kubeconfig(joined, context="x")).server == "http://one:1"


async def test_the_namespace_is_the_contexts(tmp_path: Path) -> None:
    doc = config_doc("http://one:1")
    doc["contexts"].append({"name": "y", "context": {"cluster": "c", "user": "u", "namespace": "team"}})
    path = write(tmp_path / "a", doc)
    assert (await load_kubeconfig(path)).namespace == ""
    assert (await load_kubeconfig(path, context="y")).namespace == "team"


async def test_kubeconfig_env_lists_several_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write(tmp_path / "a", {"current-context": "x"})
    second = write(tmp_path / "b", config_doc("http://127.0.0.1:1", user={"token": "t"}, current=None))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(tmp_path / "nope"), str(second)]))
    config = await load_client_config(None)
    assert config.server == "http://127.0.0.1:1"
    assert await config.credentials.authorization() == "Bearer t"


async def test_relative_paths_resolve_against_the_file_that_names_them(tmp_path: Path, pki: Pki) -> None:
    clusters = tmp_path / "clusters"
    users = tmp_path / "users"
    (clusters / "pki").mkdir(parents=True)
    (clusters / "pki" / "ca.crt").write_bytes(pki.ca)
    (users / "creds").mkdir(parents=True)
    (users / "creds" / "token").write_text("from-the-file\n")
    (users / "creds" / "client.crt").write_bytes(pki.client_cert)
    (users / "creds" / "client.key").write_bytes(pki.client_key)
    cluster_file = write(
        clusters / "kc",
        {
            "current-context": "x",
            "clusters": [
                {
                    "name": "c",
                    "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "pki/ca.crt"},
                }
            ],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        },
    )
    user = {
        "tokenFile": "creds/token",
        "client-certificate": "creds/client.crt",
        "client-key": "creds/client.key",
    }
    user_file = write(users / "kc", {"users": [{"name": "u", "user": user}]})
    config = await load_kubeconfig([cluster_file, user_file])
    assert config.certificate_authority == str(clusters / "pki" / "ca.crt")
    assert config.client_certificate == str(users / "creds" / "client.crt")
    assert config.client_key == str(users / "creds" / "client.key")
    assert await config.credentials.authorization() == "Bearer from-the-file"


async def test_a_server_without_a_scheme_is_https_when_tls_is_configured(tmp_path: Path) -> None:
    plain = await load_kubeconfig(write(tmp_path / "a", config_doc("10.0.0.1:8080")))
    assert plain.server == "http://10.0.0.1:8080"
    assert plain.ssl_context() is None
    insecure = config_doc("10.0.0.1:6443", cluster={"insecure-skip-tls-verify": True})
    assert (await load_kubeconfig(write(tmp_path / "b", insecure))).server == "https://10.0.0.1:6443"


async def test_username_and_password_are_basic_auth(tmp_path: Path) -> None:
    path = write(tmp_path / "kc", config_doc(user={"username": "admin", "password": "s3cret"}))
    config = await load_kubeconfig(path)
    assert await config.credentials.authorization() == "Basic " + b64("admin:s3cret")
    assert "s3cret" not in repr(config)


# ---------------------------------------------------------------------------- TLS


async def test_ca_data_and_client_certificate_data_over_real_tls(
    tmp_path: Path, pki: Pki, serve: Any, key_files: list[str]
) -> None:
    recorder = Recorder()
    url = await serve(recorder, server_tls(pki, tmp_path, client_certificates=True))
    key_files.clear()  # the server's own
    user = {"client-certificate-data": b64(pki.client_cert), "client-key-data": b64(pki.client_key)}
    doc = config_doc(url, cluster={"certificate-authority-data": b64(pki.ca)}, user=user)
    config = await load_kubeconfig(write(tmp_path / "kc", doc))
    assert await get(config) == 200
    assert recorder.peers == ["pyscheduler"]
    assert recorder.seen == [None]
    assert key_files and all(name.startswith("/memfd:") for name in key_files)  # no named file
    assert "PRIVATE KEY" not in repr(config)


async def test_ca_and_client_certificate_files_over_real_tls(tmp_path: Path, pki: Pki, serve: Any) -> None:
    recorder = Recorder()
    url = await serve(recorder, server_tls(pki, tmp_path, client_certificates=True))
    (tmp_path / "ca.crt").write_bytes(pki.ca)
    (tmp_path / "tls.crt").write_bytes(pki.client_cert)
    (tmp_path / "tls.key").write_bytes(pki.client_key)
    user = {"client-certificate": "tls.crt", "client-key": "tls.key", "token": "and-a-token"}
    doc = config_doc(url, cluster={"certificate-authority": "ca.crt"}, user=user)
    assert await get(await load_kubeconfig(write(tmp_path / "kc", doc))) == 200
    assert recorder.peers == ["pyscheduler"]
    assert recorder.seen == ["Bearer and-a-token"]


async def test_the_server_certificate_is_verified(tmp_path: Path, pki: Pki, serve: Any) -> None:
    url = await serve(Recorder(), server_tls(pki, tmp_path))
    other_ca = make_pki().ca
    doc = config_doc(url, cluster={"certificate-authority-data": b64(other_ca)})
    with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
        await get(await load_kubeconfig(write(tmp_path / "kc", doc)))
    # without any CA the system's are used, which do not know the test CA either
    with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
        await get(await load_kubeconfig(write(tmp_path / "kc2", config_doc(url))))
    insecure = config_doc(url, cluster={"insecure-skip-tls-verify": True})
    assert await get(await load_kubeconfig(write(tmp_path / "kc3", insecure))) == 200


async def test_tls_server_name_is_the_name_checked(tmp_path: Path, pki: Pki, serve: Any) -> None:
    url = await serve(Recorder(), server_tls(pki, tmp_path))
    named = url.replace("127.0.0.1", "localhost")  # not in the certificate
    ca = {"certificate-authority-data": b64(pki.ca)}
    with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
        await get(await load_kubeconfig(write(tmp_path / "a", config_doc(named, cluster=ca))))
    right = config_doc(named, cluster={**ca, "tls-server-name": "extender.test"})
    assert await get(await load_kubeconfig(write(tmp_path / "b", right))) == 200
    wrong = config_doc(url, cluster={**ca, "tls-server-name": "other.test"})
    with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
        await get(await load_kubeconfig(write(tmp_path / "c", wrong)))


# ---------------------------------------------------------------------------- token files


async def test_a_token_file_is_read_again_once_its_minute_is_nearly_up(tmp_path: Path) -> None:
    clock = FakeClock()
    token = tmp_path / "token"
    token.write_text("one")
    config = await load_kubeconfig(
        write(tmp_path / "kc", config_doc(user={"tokenFile": "token"})), clock=clock
    )
    assert await config.credentials.authorization() == "Bearer one"
    token.write_text("two\n")
    await clock.advance(49)
    assert await config.credentials.authorization() == "Bearer one"
    await clock.advance(2)  # 60 s, less client-go's 10 s leeway
    assert await config.credentials.authorization() == "Bearer two"
    token.write_text("three")
    config.credentials.invalidate("Bearer one")  # an old token's 401: the cache is newer already
    assert await config.credentials.authorization() == "Bearer two"
    config.credentials.invalidate("Bearer two")
    assert await config.credentials.authorization() == "Bearer three"


async def test_a_token_file_that_goes_away_keeps_the_last_token(tmp_path: Path, caplog: Any) -> None:
    clock = FakeClock()
    token = tmp_path / "token"
    token.write_text("kept")
    source = TokenFile(token, period=5, leeway=0, clock=clock)
    assert await source.authorization() == "Bearer kept"
    token.unlink()
    await clock.advance(10)
    with caplog.at_level(logging.ERROR, logger="scheduler.client.kubeconfig"):
        assert await source.authorization() == "Bearer kept"
        assert await source.authorization() == "Bearer kept"
    assert len(caplog.records) == 1 and str(token) in caplog.records[0].getMessage()
    with pytest.raises(CredentialError, match="cannot read token file"):
        await TokenFile(token).authorization()
    # with the kubeconfig's token beside the file, that token is used until the file appears
    both = TokenFile(token, token="inline", clock=clock)
    assert await both.authorization() == "Bearer inline"
    token.write_text("file")
    await clock.advance(60)
    assert await both.authorization() == "Bearer file"


async def test_a_401_rereads_the_token_file_and_sends_the_request_again(tmp_path: Path, serve: Any) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    recorder = Recorder(accept=lambda auth: auth == f"Bearer {token.read_text()}")
    url = await serve(recorder)
    config = await load_kubeconfig(write(tmp_path / "kc", config_doc(url, user={"tokenFile": str(token)})))
    async with KubeClient(config, qps=0) as client:
        assert (await client.request("GET", "/api/v1/nodes")).status == 200
        token.write_text("rotated")  # long before the minute is up
        assert (await client.request("POST", "/api/v1/namespaces", {"metadata": {"name": "n"}})).status == 200
    assert recorder.seen == ["Bearer old", "Bearer old", "Bearer rotated"]


async def test_a_401_with_a_fixed_token_is_answered_at_once(tmp_path: Path, serve: Any) -> None:
    recorder = Recorder(accept=lambda auth: False)
    url = await serve(recorder)
    config = await load_kubeconfig(write(tmp_path / "kc", config_doc(url, user={"token": "t"})))
    assert await get(config) == 401
    assert recorder.seen == ["Bearer t"]


# ---------------------------------------------------------------------------- exec plugins


async def test_an_exec_plugins_token_is_sent(tmp_path: Path, plugin: Plugin, serve: Any) -> None:
    recorder = Recorder()
    url = await serve(recorder)
    user = plugin.user(args=["--flag", "value"], env=[{"name": "PLUGIN_ENV", "value": "from-kubeconfig"}])
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(url, user=user)))
    assert await get(config) == 200
    assert await get(config) == 200
    assert recorder.seen == ["Bearer tok-1", "Bearer tok-1"]  # run once, at load; no expiry
    [call] = plugin.calls()
    assert call["argv"] == ["--flag", "value"]
    assert call["env"] == "from-kubeconfig"
    assert call["stdin_tty"] is False
    assert json.loads(call["info"]) == {
        "kind": "ExecCredential",
        "apiVersion": V1,
        "spec": {"interactive": False},
    }


async def test_provide_cluster_info_passes_the_cluster_as_client_go_does(
    tmp_path: Path, plugin: Plugin, pki: Pki
) -> None:
    (plugin.dir / "ca.crt").write_bytes(pki.ca)
    extension = {"name": EXEC_CLUSTER_EXTENSION, "extension": {"audience": "pyscheduler"}}
    cluster = {
        "certificate-authority": "ca.crt",
        "tls-server-name": "api.test",
        "proxy-url": "http://proxy.test:3128",
        "disable-compression": True,
        "extensions": [extension],
    }
    user = plugin.user(provideClusterInfo=True, apiVersion=V1BETA1)
    del user["exec"]["interactiveMode"]  # v1beta1 defaults it to IfAvailable
    plugin.answer(token="t", api_version=V1BETA1)
    await load_kubeconfig(
        write(plugin.dir / "kc", config_doc("https://10.0.0.1:6443", cluster=cluster, user=user))
    )
    info = json.loads(plugin.calls()[0]["info"])
    assert info == {
        "kind": "ExecCredential",
        "apiVersion": V1BETA1,
        "spec": {
            "interactive": False,
            "cluster": {
                "server": "https://10.0.0.1:6443",
                "tls-server-name": "api.test",
                "certificate-authority-data": b64(pki.ca),
                "proxy-url": "http://proxy.test:3128",
                "disable-compression": True,
                "config": {"audience": "pyscheduler"},
            },
        },
    }


async def test_an_exec_plugin_runs_again_when_its_token_expires(tmp_path: Path, plugin: Plugin) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    plugin.answer(token="tok-RUNS", expires=clock() + 300)
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(user=plugin.user())), clock=clock)
    assert await config.credentials.authorization() == "Bearer tok-1"
    await clock.advance(300)
    assert await config.credentials.authorization() == "Bearer tok-1"  # expired is *after* the time
    plugin.answer(token="tok-RUNS", expires=clock() + 600)
    await clock.advance(1)
    assert await config.credentials.authorization() == "Bearer tok-2"
    assert await config.credentials.authorization() == "Bearer tok-2"
    assert len(plugin.calls()) == 2


async def test_concurrent_requests_wait_for_one_run(tmp_path: Path, plugin: Plugin) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    plugin.answer(token="tok-RUNS", expires=clock() + 10)
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(user=plugin.user())), clock=clock)
    await clock.advance(11)
    plugin.answer(token="tok-RUNS", expires=clock() + 10)
    answers = await asyncio.gather(*(config.credentials.authorization() for _ in range(5)))
    assert answers == ["Bearer tok-2"] * 5
    assert len(plugin.calls()) == 2


async def test_a_401_runs_the_exec_plugin_again_and_sends_the_request_again(
    tmp_path: Path, plugin: Plugin, serve: Any
) -> None:
    recorder = Recorder(accept=lambda auth: auth != "Bearer tok-1")
    url = await serve(recorder)
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(url, user=plugin.user())))
    assert await get(config) == 200
    assert recorder.seen == ["Bearer tok-1", "Bearer tok-2"]
    assert len(plugin.calls()) == 2
    # a second 401 in a row is the answer: one retry per request
    recorder.accept = lambda auth: False
    assert await get(config) == 401
    assert recorder.seen[2:] == ["Bearer tok-2", "Bearer tok-3"]


async def test_a_401_on_a_watch_makes_the_next_one_use_fresh_credentials(
    tmp_path: Path, plugin: Plugin, serve: Any
) -> None:
    recorder = Recorder(accept=lambda auth: auth != "Bearer tok-1")
    url = await serve(recorder)
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(url, user=plugin.user())))
    async with KubeClient(config, qps=0) as client:
        with pytest.raises(Exception, match="401"):
            await anext(client.stream_lines("/api/v1/pods", {"watch": "true"}))
        assert await config.credentials.authorization() == "Bearer tok-2"


async def test_a_failing_rerun_keeps_credentials_that_have_not_expired(
    tmp_path: Path, plugin: Plugin, serve: Any, caplog: Any
) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    plugin.answer(token="tok-RUNS", expires=clock() + 100)
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(user=plugin.user())), clock=clock)
    plugin.answer(exit=1, stderr="the identity provider is down\n")
    config.credentials.invalidate()
    with caplog.at_level(logging.ERROR, logger="scheduler.client.kubeconfig"):
        assert await config.credentials.authorization() == "Bearer tok-1"
    assert "the identity provider is down" in caplog.text
    assert await config.credentials.authorization() == "Bearer tok-1"  # not re-run on every request
    assert len(plugin.calls()) == 2
    await clock.advance(101)
    with pytest.raises(CredentialError, match="identity provider is down"):
        await config.credentials.authorization()
    url = await serve(Recorder())
    failing = ClientConfig(server=url, credentials=config.credentials)
    with pytest.raises(TransportError, match=r"getting credentials: .*exit code 1"):
        await get(failing)


async def test_an_exec_plugins_client_certificate_is_used_for_tls(
    tmp_path: Path, plugin: Plugin, pki: Pki, serve: Any, key_files: list[str]
) -> None:
    recorder = Recorder()
    url = await serve(recorder, server_tls(pki, tmp_path, client_certificates=True))
    key_files.clear()  # the server's own
    plugin.answer(cert=(pki.client_cert, pki.client_key))
    doc = config_doc(url, cluster={"certificate-authority-data": b64(pki.ca)}, user=plugin.user())
    config = await load_kubeconfig(write(plugin.dir / "kc", doc))
    assert await get(config) == 200
    assert recorder.peers == ["pyscheduler"]
    assert recorder.seen == [None]  # no token
    assert key_files and all(name.startswith("/memfd:") for name in key_files)


async def test_a_rotated_exec_client_certificate_is_presented_on_new_connections(
    tmp_path: Path, plugin: Plugin, pki: Pki, serve: Any
) -> None:
    recorder = Recorder()
    url = await serve(recorder, server_tls(pki, tmp_path, client_certificates=True))
    stranger = make_pki()  # a client certificate the server's CA did not sign
    plugin.answer(cert=(stranger.client_cert, stranger.client_key))
    doc = config_doc(url, cluster={"certificate-authority-data": b64(pki.ca)}, user=plugin.user())
    config = await load_kubeconfig(write(plugin.dir / "kc", doc))
    async with KubeClient(config, qps=0, timeout=5) as client:
        with pytest.raises(TransportError):
            await client.request("GET", "/api/v1/nodes")
        plugin.answer(cert=(pki.client_cert, pki.client_key))
        config.credentials.invalidate()  # as a 401 would
        assert (await client.request("GET", "/api/v1/nodes")).status == 200
    assert recorder.peers == ["pyscheduler"]
    assert len(plugin.calls()) == 2


async def test_a_rotated_exec_client_certificate_closes_the_connections_made_with_the_old_one(
    tmp_path: Path, plugin: Plugin, pki: Pki, serve: Any
) -> None:
    recorder = Recorder()
    url = await serve(recorder, server_tls(pki, tmp_path, client_certificates=True))
    plugin.answer(cert=(pki.client_cert, pki.client_key))
    doc = config_doc(url, cluster={"certificate-authority-data": b64(pki.ca)}, user=plugin.user())
    config = await load_kubeconfig(write(plugin.dir / "kc", doc))
    async with KubeClient(config, qps=0, timeout=5) as client:
        assert (await client.request("GET", "/api/v1/nodes")).status == 200
        assert (await client.request("GET", "/api/v1/nodes")).status == 200  # the same connection
        plugin.answer(cert=(pki.renewed_cert, pki.renewed_key))
        config.credentials.invalidate()  # as a 401 would
        assert (await client.request("GET", "/api/v1/nodes")).status == 200
        assert (await client.request("GET", "/api/v1/nodes")).status == 200
    # the kept-alive connection went with the old certificate: every request since shows the new one
    assert recorder.peers == ["pyscheduler", "pyscheduler", "pyscheduler-renewed", "pyscheduler-renewed"]


async def test_other_credentials_win_over_an_exec_plugin(tmp_path: Path, plugin: Plugin) -> None:
    user = {**plugin.user(), "token": "static"}
    config = await load_kubeconfig(write(plugin.dir / "kc", config_doc(user=user)))
    assert await config.credentials.authorization() == "Bearer static"
    assert plugin.calls() == []


async def test_an_exec_plugin_on_the_path_is_found_there(
    tmp_path: Path, plugin: Plugin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{plugin.dir}{os.pathsep}{os.environ['PATH']}")
    user = plugin.user(command="plugin.py")
    config = await load_kubeconfig(write(tmp_path / "elsewhere" / "kc", config_doc(user=user)))
    assert await config.credentials.authorization() == "Bearer tok-1"


def test_exec_plugin_refuses_an_unknown_api_version() -> None:
    with pytest.raises(ValueError, match="apiVersion"):
        ExecPlugin("x", api_version="client.authentication.k8s.io/v1alpha1")


# ---------------------------------------------------------------------------- in-cluster


def service_account(directory: Path, pki: Pki, token: str = "sa-token") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(pki.ca)
    return directory


async def test_in_cluster_reads_the_service_account_and_rereads_its_token(tmp_path: Path, pki: Pki) -> None:
    clock = FakeClock()
    directory = service_account(tmp_path / "sa", pki)
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = in_cluster_config(directory, environ=env, clock=clock)
    assert config.server == "https://10.96.0.1:443"
    assert config.certificate_authority == str(directory / "ca.crt")
    assert await config.credentials.authorization() == "Bearer sa-token"
    (directory / "token").write_text("projected-again")
    await clock.advance(51)
    assert await config.credentials.authorization() == "Bearer projected-again"
    v6 = in_cluster_config(directory, environ={**env, "KUBERNETES_SERVICE_HOST": "fd00::1"})
    assert v6.server == "https://[fd00::1]:443"
    assert config.namespace == ""  # no namespace file
    (directory / "namespace").write_text("team\n")
    assert in_cluster_config(directory, environ=env).namespace == "team"


async def test_in_cluster_over_real_tls(
    tmp_path: Path, pki: Pki, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    url = await serve(recorder, server_tls(pki, tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", url.rsplit(":", 1)[1])
    monkeypatch.delenv("KUBECONFIG", raising=False)
    config = await load_client_config(None, service_account_dir=service_account(tmp_path / "sa", pki))
    assert await get(config) == 200
    assert recorder.seen == ["Bearer sa-token"]


def test_in_cluster_errors(tmp_path: Path, pki: Pki, caplog: Any) -> None:
    with pytest.raises(NotInClusterError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"):
        in_cluster_config(tmp_path, environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeconfigError, match=re.escape(f"cannot read token file {tmp_path / 'token'}")):
        in_cluster_config(tmp_path, environ=env)
    directory = service_account(tmp_path / "sa", pki)
    (directory / "ca.crt").write_text("not a certificate")
    with caplog.at_level(logging.ERROR, logger="scheduler.client.kubeconfig"):
        config = in_cluster_config(directory, environ=env)
    assert config.certificate_authority is None  # as client-go: logged, the system's CAs are used
    assert "ca.crt" in caplog.text


# ---------------------------------------------------------------------------- refusals


async def test_interactive_mode_always_is_refused(tmp_path: Path, plugin: Plugin) -> None:
    user = plugin.user(interactiveMode="Always")
    path = write(plugin.dir / "kc", config_doc(user=user))
    with pytest.raises(KubeconfigError, match="interactiveMode Always needs a terminal") as info:
        await load_kubeconfig(path)
    assert f'user "u" in {path}: exec:' in str(info.value)
    assert plugin.calls() == []


async def test_v1_exec_requires_an_interactive_mode(tmp_path: Path, plugin: Plugin) -> None:
    user = plugin.user()
    del user["exec"]["interactiveMode"]
    with pytest.raises(KubeconfigError, match="interactiveMode must be set for apiVersion"):
        await load_kubeconfig(write(plugin.dir / "kc", config_doc(user=user)))


async def test_an_auth_provider_is_refused_with_a_pointer_to_exec_plugins(tmp_path: Path) -> None:
    user = {"auth-provider": {"name": "gcp", "config": {"cmd-path": "gcloud"}}}
    path = write(tmp_path / "kc", config_doc(user=user))
    with pytest.raises(KubeconfigError) as info:
        await load_kubeconfig(path)
    message = str(info.value)
    assert f'user "u" in {path}' in message
    assert 'auth-provider "gcp" is not supported' in message
    assert "exec credential plugin" in message


async def test_load_client_config_names_the_kubeconfig_that_is_not_usable(tmp_path: Path) -> None:
    path = write(tmp_path / "kc", config_doc(user={"auth-provider": {"name": "oidc"}}))
    with pytest.raises(
        Exception, match=re.escape(f'kubeconfig {path} is not usable: user "u" in {path}: auth-provider')
    ):
        await load_client_config(str(path))


# ---------------------------------------------------------------------------- malformed files


def _user(**fields: Any) -> dict[str, Any]:
    return config_doc(user=fields)


def _cluster(**fields: Any) -> dict[str, Any]:
    return config_doc(cluster=fields)


def _replace(**top: Any) -> dict[str, Any]:
    return {**config_doc(), **top}


MALFORMED: list[tuple[str, Any, str]] = [
    ("yaml", "clusters: [\n", "{file}: not valid YAML"),
    ("not-a-mapping", "- a\n- b\n", "{file}: a kubeconfig is a mapping, not a list"),
    ("kind", _replace(kind="Pod"), "{file}: kind is 'Pod', not Config"),
    ("api-version", _replace(apiVersion="v2"), "{file}: apiVersion is 'v2', not v1"),
    ("clusters-type", _replace(clusters={"c": {}}), "{file}: clusters must be a list, not a mapping"),
    ("no-name", _replace(users=[{"user": {}}]), "{file}: users[0] has no name"),
    ("name-type", _replace(users=[{"name": 7, "user": {}}]), "{file}: users[0]: name must be a string"),
    (
        "duplicate",
        _replace(contexts=[{"name": "x", "context": {}}, {"name": "x", "context": {}}]),
        '{file}: contexts: the name "x" is used twice',
    ),
    ("entry-type", _replace(users=[{"name": "u", "user": "token"}]), 'user "u": user must be a mapping'),
    ("no-current-context", config_doc(current=None), "{file}: no current-context is set"),
    ("current-context-type", _replace(**{"current-context": ["x"]}), "current-context must be a string"),
    (
        "no-such-context",
        config_doc(current="nowhere"),
        '{file}: current-context "nowhere" is not a context in {file}',
    ),
    (
        "context-without-cluster",
        _replace(contexts=[{"name": "x", "context": {"user": "u"}}]),
        'context "x" in {file}: no cluster is set',
    ),
    (
        "context-without-user",
        _replace(contexts=[{"name": "x", "context": {"cluster": "c"}}]),
        'context "x" in {file}: no user is set',
    ),
    (
        "unknown-cluster",
        _replace(contexts=[{"name": "x", "context": {"cluster": "nope", "user": "u"}}]),
        'context "x" in {file}: cluster "nope" is not defined in {file}',
    ),
    (
        "unknown-user",
        _replace(contexts=[{"name": "x", "context": {"cluster": "c", "user": "nope"}}]),
        'context "x" in {file}: user "nope" is not defined in {file}',
    ),
    (
        "no-server",
        _replace(clusters=[{"name": "c", "cluster": {}}]),
        'cluster "c" in {file}: no server is set',
    ),
    ("server-type", _cluster(server=6443), 'cluster "c" in {file}: server must be a string, not a number'),
    ("server-scheme", _cluster(server="ftp://x"), "server 'ftp://x' is not an http:// or https:// URL"),
    (
        "insecure-type",
        _cluster(**{"insecure-skip-tls-verify": "yes please"}),
        "insecure-skip-tls-verify must be true or false",
    ),
    (
        "ca-base64",
        _cluster(**{"certificate-authority-data": "not base64!"}),
        'cluster "c" in {file}: certificate-authority-data is not valid base64',
    ),
    (
        "ca-not-pem",
        _cluster(**{"certificate-authority-data": b64("hello")}),
        'cluster "c" in {file}: certificate-authority-data: ',
    ),
    (
        "ca-file-missing",
        _cluster(**{"certificate-authority": "missing.crt"}),
        'cluster "c" in {file}: cannot read certificate-authority {dir}/missing.crt: No such file',
    ),
    (
        "ca-file-not-pem",
        _cluster(**{"certificate-authority": "kc"}),
        'cluster "c" in {file}: certificate-authority {dir}/kc: ',
    ),
    (
        "ca-file-and-data",
        _cluster(**{"certificate-authority": "kc", "certificate-authority-data": b64("x")}),
        "certificate-authority and certificate-authority-data are both set",
    ),
    (
        "ca-and-insecure",
        _cluster(**{"certificate-authority-data": b64("x"), "insecure-skip-tls-verify": True}),
        "insecure-skip-tls-verify cannot be combined with certificate-authority",
    ),
    (
        "proxy",
        _cluster(**{"proxy-url": "socks4://p:1080"}),
        "proxy-url: proxy 'socks4://p:1080': the scheme must be http, https, socks5 or socks5h",
    ),
    (
        "key-base64",
        _user(**{"client-certificate-data": b64("x"), "client-key-data": "%%%"}),
        'user "u" in {file}: client-key-data is not valid base64',
    ),
    ("cert-without-key", _user(**{"client-certificate-data": b64("x")}), "without client-key(-data)"),
    (
        "key-without-cert",
        _user(**{"client-key": "kc"}),
        "client-key(-data) is set without client-certificate",
    ),
    (
        "cert-file-and-data",
        _user(**{"client-certificate": "kc", "client-certificate-data": b64("x"), "client-key": "kc"}),
        "client-certificate and client-certificate-data are both set",
    ),
    (
        "cert-file-missing",
        _user(**{"client-certificate": "tls.crt", "client-key": "kc"}),
        'user "u" in {file}: cannot read client-certificate {dir}/tls.crt',
    ),
    (
        "cert-not-pem",
        _user(**{"client-certificate-data": b64("x"), "client-key-data": b64("y")}),
        'user "u" in {file}: client certificate and key: ',
    ),
    (
        "token-and-basic",
        _user(token="t", username="admin", password="p"),
        'user "u" in {file}: username/password and a token are both set',
    ),
    ("token-type", _user(token=12345), "token must be a string, not a number"),
    (
        "token-file-missing",
        _user(tokenFile="gone"),
        'user "u" in {file}: tokenFile: cannot read token file {dir}/gone',
    ),
    ("token-file-empty", _user(tokenFile="empty"), "tokenFile: token file {dir}/empty is empty"),
    ("impersonation", _user(token="t", **{"as": "admin"}), "as (impersonation) is not supported"),
    ("exec-type", _user(exec="kubelogin"), "exec must be a mapping, not a string"),
    ("exec-no-command", _user(exec={"apiVersion": V1}), 'user "u" in {file}: exec: no command is set'),
    ("exec-no-api-version", _user(exec={"command": "p"}), "exec: no apiVersion is set"),
    (
        "exec-old-api-version",
        _user(exec={"command": "p", "apiVersion": "client.authentication.k8s.io/v1alpha1"}),
        "exec: apiVersion 'client.authentication.k8s.io/v1alpha1' is not supported",
    ),
    (
        "exec-bad-mode",
        _user(exec={"command": "p", "apiVersion": V1, "interactiveMode": "Sometimes"}),
        "exec: interactiveMode 'Sometimes' is not one of Never, IfAvailable, Always",
    ),
    (
        "exec-env",
        _user(exec={"command": "p", "apiVersion": V1, "interactiveMode": "Never", "env": [{"value": "v"}]}),
        "exec: env[0] has no name",
    ),
    (
        "exec-args",
        _user(exec={"command": "p", "apiVersion": V1, "interactiveMode": "Never", "args": "--x"}),
        "exec: args must be a list of strings",
    ),
    (
        "exec-with-auth-provider",
        _user(exec={"command": "p", "apiVersion": V1}, **{"auth-provider": {"name": "oidc"}}),
        'auth-provider "oidc" is not supported',
    ),
]


@pytest.mark.parametrize(
    ("doc", "expected"), [case[1:] for case in MALFORMED], ids=[case[0] for case in MALFORMED]
)
async def test_a_malformed_kubeconfig_is_refused_naming_file_entry_and_field(
    tmp_path: Path, doc: Any, expected: str
) -> None:
    (tmp_path / "empty").write_text("\n")
    path = write(tmp_path / "kc", doc)
    with pytest.raises(KubeconfigError) as info:
        await load_kubeconfig(path)
    assert expected.format(file=path, dir=tmp_path) in str(info.value)


async def test_an_unreadable_kubeconfig_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "kc").mkdir()
    with pytest.raises(KubeconfigError, match=re.escape(f"{tmp_path / 'kc'}: cannot read")):
        await load_kubeconfig(tmp_path / "kc")
    with pytest.raises(KubeconfigError, match=re.escape(f"no such file: {tmp_path / 'a'}, {tmp_path / 'b'}")):
        await load_kubeconfig([tmp_path / "a", tmp_path / "b"])


async def test_an_encrypted_client_key_is_refused(tmp_path: Path, pki: Pki) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.client_key, None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    user = {"client-certificate-data": b64(pki.client_cert), "client-key-data": b64(encrypted)}
    with pytest.raises(KubeconfigError, match="the private key is encrypted"):
        await load_kubeconfig(write(tmp_path / "kc", config_doc(user=user)))


PLUGIN_FAILURES: list[tuple[str, dict[str, Any], str]] = [
    (
        "exit",
        {"exit": 3, "stderr": "starting\nerror: no credentials for \x1b[1mprod\x1b[0m\n\n"},
        "exec plugin: executable {plugin} failed with exit code 3: error: no credentials for "
        "U+001B[1mprodU+001B[0m; install hint: install it with: pip install plugin",
    ),
    ("not-json", {"stdout": "token=abc"}, "exec plugin: executable {plugin}: decoding stdout: "),
    ("not-an-object", {"stdout": "[]"}, "decoding stdout: not a JSON object"),
    ("kind", {"stdout": json.dumps({"apiVersion": V1, "kind": "Pod"})}, "kind 'Pod' is not ExecCredential"),
    (
        "version",
        {"stdout": json.dumps({"apiVersion": V1BETA1, "kind": "ExecCredential", "status": {"token": "t"}})},
        f"exec plugin is configured to use API version {V1}, plugin returned version {V1BETA1}",
    ),
    (
        "no-status",
        {"stdout": json.dumps({"apiVersion": V1, "kind": "ExecCredential"})},
        "exec plugin didn't return a status field",
    ),
    (
        "empty-status",
        {"stdout": json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": {}})},
        "exec plugin didn't return a token or cert/key pair",
    ),
    (
        "only-cert",
        {
            "stdout": json.dumps(
                {"apiVersion": V1, "kind": "ExecCredential", "status": {"clientCertificateData": "x"}}
            )
        },
        "exec plugin returned only certificate or key, not both",
    ),
    (
        "bad-cert",
        {
            "stdout": json.dumps(
                {
                    "apiVersion": V1,
                    "kind": "ExecCredential",
                    "status": {"clientCertificateData": "x", "clientKeyData": "y"},
                }
            )
        },
        "failed parsing client key/certificate",
    ),
    (
        "expiry",
        {
            "stdout": json.dumps(
                {
                    "apiVersion": V1,
                    "kind": "ExecCredential",
                    "status": {"token": "t", "expirationTimestamp": "tomorrow"},
                }
            )
        },
        "status.expirationTimestamp 'tomorrow': ",
    ),
]


@pytest.mark.parametrize(
    ("answer", "expected"), [case[1:] for case in PLUGIN_FAILURES], ids=[case[0] for case in PLUGIN_FAILURES]
)
async def test_an_exec_plugin_that_fails_at_load_fails_the_load(
    tmp_path: Path, plugin: Plugin, answer: dict[str, Any], expected: str
) -> None:
    (plugin.dir / "answer.json").write_text(json.dumps(answer))
    user = plugin.user(installHint="install it with:\n  pip install plugin")
    path = write(plugin.dir / "kc", config_doc(user=user))
    with pytest.raises(KubeconfigError) as info:
        await load_kubeconfig(path)
    message = str(info.value)
    assert message.startswith(f'user "u" in {path}: exec plugin')
    assert expected.format(plugin=plugin.path) in message


async def test_an_exec_plugin_that_is_not_installed_says_so_with_its_install_hint(tmp_path: Path) -> None:
    for command in ("no-such-credential-plugin", "./bin/no-such-plugin"):
        exec_spec = {
            "command": command,
            "apiVersion": V1,
            "interactiveMode": "Never",
            "installHint": "brew it",
        }
        path = write(tmp_path / "kc", config_doc(user={"exec": exec_spec}))
        with pytest.raises(KubeconfigError) as info:
            await load_kubeconfig(path)
        message = str(info.value)
        assert "not found; it looks like a client-go credential plugin that is not installed" in message
        assert message.endswith("; install hint: brew it")
