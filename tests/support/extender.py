"""A scheduler extender served on loopback for the tests, and a small PKI for its TLS."""

from __future__ import annotations

import datetime
import inspect
import ipaddress
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# verb -> answer to the request body: a JSON value, or (HTTP status, JSON value); may be async
Handler = Callable[[dict[str, Any]], Any]


class ExtenderServer:
    """Answers POST /<verb> with ``handlers[verb](body)`` and records every (verb, body)."""

    def __init__(self, handlers: Mapping[str, Handler], *, tls: ssl.SSLContext | None = None) -> None:
        self.handlers = dict(handlers)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._tls = tls
        self._runner: web.AppRunner | None = None
        self.port = 0
        app = web.Application()
        app.router.add_post("/{verb}", self._answer)
        self._app = app

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    def bodies(self, verb: str) -> list[dict[str, Any]]:
        return [body for called, body in self.calls if called == verb]

    def pods_sent(self, verb: str) -> list[str]:
        return [body["Pod"]["metadata"]["name"] for body in self.bodies(verb)]

    async def _answer(self, request: web.Request) -> web.Response:
        verb = request.match_info["verb"]
        body = await request.json()
        self.calls.append((verb, body))
        answer = self.handlers[verb](body)
        if inspect.isawaitable(answer):
            answer = await answer
        status, value = answer if isinstance(answer, tuple) else (200, answer)
        return web.json_response(value, status=status)

    async def __aenter__(self) -> ExtenderServer:
        self._runner = web.AppRunner(self._app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock, ssl_context=self._tls).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def free_port() -> int:
    """A loopback port nothing listens on (for a refused connection)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------------- TLS


@dataclass(frozen=True)
class Pki:
    """A self-signed CA, a server certificate for 127.0.0.1 and extender.test, two client ones
    (CN pyscheduler, and pyscheduler-renewed as after a rotation)."""

    ca: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes
    renewed_cert: bytes
    renewed_key: bytes

    def server_context(self, tmp: Path, *, client_certificates: bool = False) -> ssl.SSLContext:
        cert, key, ca = tmp / "server.crt", tmp / "server.key", tmp / "ca.crt"
        cert.write_bytes(self.server_cert)
        key.write_bytes(self.server_key)
        ca.write_bytes(self.ca)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        if client_certificates:
            context.load_verify_locations(ca)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def make_pki() -> Pki:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test extender CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(name: str, sans: list[x509.GeneralName] | None) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cert.public_bytes(serialization.Encoding.PEM), key_pem

    server_cert, server_key = leaf(
        "extender", [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("extender.test")]
    )
    client_cert, client_key = leaf("pyscheduler", None)
    renewed_cert, renewed_key = leaf("pyscheduler-renewed", None)
    return Pki(
        ca.public_bytes(serialization.Encoding.PEM),
        server_cert,
        server_key,
        client_cert,
        client_key,
        renewed_cert,
        renewed_key,
    )


def record_key_files(monkeypatch: Any) -> list[str]:
    """Every file ``load_cert_chain`` is given from now on, as the kernel names it: a named file
    by its path, an anonymous memory file as ``/memfd:NAME (deleted)``."""
    seen: list[str] = []
    load_cert_chain = ssl.SSLContext.load_cert_chain

    def spy(context: ssl.SSLContext, certfile: Any, keyfile: Any = None, password: Any = None) -> None:
        for name in (certfile, keyfile):
            if name is not None:
                path = str(name)
                seen.append(os.readlink(path) if path.startswith("/proc/self/fd/") else path)
        load_cert_chain(context, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    return seen
