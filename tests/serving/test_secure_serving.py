"""The scheduler's port: HTTPS by default, callers authenticated and authorized by the API server."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509

from scheduler.client import KubeClient, load_client_config
from scheduler.metrics import SchedulerMetrics
from scheduler.serving import AuthOptions, DelegatedAuth, ServingCertificate, StatusServer, TLSOptions
from scheduler.serving.tls import TLSConfigError, self_signed_certificate
from scheduler.testing import FakeClock
from simcluster import SimCluster

PROMETHEUS_TOKEN = "prometheus-token"
STRANGER_TOKEN = "stranger-token"


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as cluster:
        table = cluster.access
        table.add_token(
            PROMETHEUS_TOKEN, "system:serviceaccount:monitoring:prometheus", groups=["monitoring"]
        )
        table.add_token(STRANGER_TOKEN, "stranger", groups=["dev"])
        table.grant(groups=["monitoring"], verbs=["get"], non_resource_urls=["/metrics"])
        yield cluster


@pytest.fixture
async def kube(sim: SimCluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    async with KubeClient(
        await load_client_config(str(sim.write_kubeconfig(tmp_path / "kc"))), qps=0
    ) as client:
        yield client


async def serve(kube: KubeClient, tls: TLSOptions | None = None, **auth: Any) -> StatusServer:
    server = StatusServer(
        "127.0.0.1",
        0,
        metrics=SchedulerMetrics(),
        configz=lambda: {"profiles": []},
        tls=ServingCertificate(tls or TLSOptions()),
        auth=DelegatedAuth(kube, kube, AuthOptions(**auth)),
    )
    await server.start()
    return server


async def get(url: str, token: str | None = None, **kwargs: Any) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kwargs.setdefault("ssl", False)
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers, **kwargs) as response:
        body = await response.json() if response.content_type == "application/json" else await response.text()
        return response.status, body


async def test_probes_answer_anyone_over_https_and_plain_http_is_not_served(kube: KubeClient) -> None:
    server = await serve(kube)
    try:
        assert server.url.startswith("https://")
        assert await get(server.url + "/healthz") == (200, "ok")
        assert (await get(server.url + "/readyz"))[0] == 200
        with pytest.raises(aiohttp.ClientError):
            await get(server.url.replace("https://", "http://") + "/healthz")
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("token", "status", "message"),
    [
        (None, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"'),
        ("no-such-token", 401, "Unauthorized"),
        (STRANGER_TOKEN, 403, 'forbidden: User "stranger" cannot get path "/metrics"'),
        (PROMETHEUS_TOKEN, 200, None),
    ],
)
async def test_metrics_need_a_user_the_api_server_allows_to_get_them(kube, token, status, message) -> None:
    server = await serve(kube)
    try:
        code, body = await get(server.url + "/metrics", token)
        assert code == status
        if message is not None:
            assert (body["kind"], body["code"], body["message"]) == ("Status", status, message)
        else:
            assert "scheduler_pending_pods" in body
    finally:
        await server.stop()


async def test_configz_is_guarded_like_metrics_and_the_allow_list_can_open_it(kube: KubeClient) -> None:
    server = await serve(kube, always_allow_paths=("/healthz", "/readyz", "/livez", "/config*"))
    try:
        assert (await get(server.url + "/configz"))[0] == 200
        assert (await get(server.url + "/metrics"))[0] == 403
        assert (await get(server.url + "/healthz", "no-such-token"))[0] == 401  # bad credentials: always
    finally:
        await server.stop()


async def test_a_client_certificate_signed_by_the_client_ca_authenticates(kube, sim, tmp_path) -> None:
    ca_pem, ca_key_pem = _certificate_authority()
    client_cert, client_key = _client_certificate(ca_pem, ca_key_pem, "prometheus", "monitoring")
    (tmp_path / "ca.crt").write_bytes(ca_pem)
    (tmp_path / "client.crt").write_bytes(client_cert)
    (tmp_path / "client.key").write_bytes(client_key)
    server = await serve(kube, TLSOptions(client_ca_file=str(tmp_path / "ca.crt")))
    try:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.load_cert_chain(tmp_path / "client.crt", tmp_path / "client.key")
        assert (await get(server.url + "/metrics", ssl=context))[0] == 200  # group monitoring may
        assert (await get(server.url + "/metrics"))[0] == 403  # without it: anonymous
    finally:
        await server.stop()


async def test_a_renewed_certificate_is_served_to_new_connections(kube: KubeClient, tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    for path, data in zip((cert, key), self_signed_certificate(("first.example",)), strict=True):
        path.write_bytes(data)
    certificate = ServingCertificate(TLSOptions(str(cert), str(key)))
    server = StatusServer("127.0.0.1", 0, tls=certificate)
    await server.start()
    try:
        assert await _served_names(server) == ["first.example"]
        for path, data in zip((cert, key), self_signed_certificate(("second.example",)), strict=True):
            path.write_bytes(data)
        import os

        os.utime(cert, (1, 2))  # a different stamp even within the same second
        assert certificate.reload_if_changed()
        assert await _served_names(server) == ["second.example"]
        assert not certificate.reload_if_changed()  # nothing new
    finally:
        await server.stop()


def test_the_self_signed_key_reaches_openssl_through_no_named_file(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[str] = []
    load_cert_chain = ssl.SSLContext.load_cert_chain

    def spy(context: ssl.SSLContext, certfile: Any, keyfile: Any = None, password: Any = None) -> None:
        for name in (str(n) for n in (certfile, keyfile) if n is not None):
            given.append(os.readlink(name) if name.startswith("/proc/self/fd/") else name)
        load_cert_chain(context, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    certificate = ServingCertificate(TLSOptions())
    assert given and all(name.startswith("/memfd:") for name in given), given
    assert x509.load_pem_x509_certificate(certificate.self_signed_pem).subject


async def test_tls_min_version_13_refuses_a_tls_12_client(kube: KubeClient) -> None:
    server = await serve(kube, TLSOptions(min_version="VersionTLS13"))
    try:
        old = ssl.create_default_context()
        old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(aiohttp.ClientError):
            await get(server.url + "/healthz", ssl=old)
        assert (await get(server.url + "/healthz"))[0] == 200
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (TLSOptions(cert_file="/nonexistent.crt", key_file="/nonexistent.key"), "--tls-cert-file"),
        (TLSOptions(cert_file="a.crt"), "--tls-cert-file and --tls-private-key-file"),
        (TLSOptions(min_version="VersionTLS11"), "--tls-min-version"),
    ],
)
def test_bad_tls_flags_are_refused_naming_the_flag(options: TLSOptions, flag: str) -> None:
    with pytest.raises(TLSConfigError, match=flag):
        options.validate()


class CountingApi:
    """Answers every review positively and counts them."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        from scheduler.framework.interface import ApiResponse

        self.calls.append(path.rsplit("/", 1)[-1])
        if path.endswith("tokenreviews"):
            return ApiResponse(201, {"status": {"authenticated": True, "user": {"username": "p"}}})
        return ApiResponse(201, {"status": {"allowed": True}})


async def test_review_answers_are_cached_for_their_ttl() -> None:
    clock = FakeClock()
    api = CountingApi()
    auth = DelegatedAuth(api, api, AuthOptions(), clock=clock)
    for _ in range(3):
        assert (await auth.decide("GET", "/metrics", "Bearer t", None)).status == 200
    assert api.calls == ["tokenreviews", "subjectaccessreviews"]
    await clock.advance(11)
    assert (await auth.decide("GET", "/metrics", "Bearer t", None)).status == 200
    assert api.calls == ["tokenreviews", "subjectaccessreviews"] * 2


async def test_a_ttl_of_zero_caches_no_review_answer() -> None:
    api = CountingApi()
    options = AuthOptions(token_cache_ttl=0, allow_cache_ttl=0, deny_cache_ttl=0)
    auth = DelegatedAuth(api, api, options, clock=FakeClock())
    for _ in range(2):
        assert (await auth.decide("GET", "/metrics", "Bearer t", None)).status == 200
    assert api.calls == ["tokenreviews", "subjectaccessreviews"] * 2


async def _served_names(server: StatusServer) -> list[str]:
    host, port = "127.0.0.1", server.port
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    _, writer = await asyncio.open_connection(host, port, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
    cert = x509.load_der_x509_certificate(der)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [n for n in names.get_values_for_type(x509.DNSName)]


def _certificate_authority() -> tuple[bytes, bytes]:
    import datetime

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pyscheduler-test-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _client_certificate(ca_pem: bytes, ca_key_pem: bytes, user: str, group: str) -> tuple[bytes, bytes]:
    import datetime

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, user), x509.NameAttribute(NameOID.ORGANIZATION_NAME, group)]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
