"""HTTPS for the scheduler's port, as kube-scheduler's secure serving does it.

The certificate comes from ``--tls-cert-file``/``--tls-private-key-file``, or, without them, a
self-signed one is made at start (in memory, like kube-scheduler without ``--cert-dir``). Files
are watched: a renewed certificate (cert-manager, a rotated Secret) is picked up by new
connections without a restart. ``--client-ca-file`` lets clients present certificates, which then
authenticate them (see :mod:`scheduler.serving.auth`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from scheduler.client.kubeconfig.tls import load_pem_pair

log = logging.getLogger(__name__)

# --tls-min-version values, as Go's crypto/tls names them
TLS_VERSIONS = {
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
RELOAD_INTERVAL = 10.0  # seconds between checks of the certificate files


class TLSConfigError(ValueError):
    """Unusable TLS flags or files; the message names the flag."""


@dataclass(slots=True)
class TLSOptions:
    cert_file: str = ""
    key_file: str = ""
    client_ca_file: str = ""
    min_version: str = "VersionTLS12"

    def validate(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise TLSConfigError("--tls-cert-file and --tls-private-key-file must be given together")
        if self.min_version not in TLS_VERSIONS:
            allowed = ", ".join(TLS_VERSIONS)
            raise TLSConfigError(
                f"--tls-min-version: unknown value {self.min_version!r} (allowed: {allowed})"
            )
        for flag, path in (
            ("--tls-cert-file", self.cert_file),
            ("--tls-private-key-file", self.key_file),
            ("--client-ca-file", self.client_ca_file),
        ):
            if path and not Path(path).is_file():
                raise TLSConfigError(f"{flag}: no such file {path!r}")


class ServingCertificate:
    """The SSL context of the serving port, kept up to date with the certificate files."""

    def __init__(self, options: TLSOptions, hostnames: tuple[str, ...] = ("localhost",)) -> None:
        options.validate()
        self.options = options
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = TLS_VERSIONS[options.min_version]
        if options.client_ca_file:
            self.context.load_verify_locations(cafile=options.client_ca_file)
            self.context.verify_mode = ssl.CERT_OPTIONAL  # a certificate is one way to authenticate
        self._stamp: tuple[float, float] | None = None
        if options.cert_file:
            self._load_files()
        else:
            self.self_signed_pem = self._load_self_signed(hostnames)

    @property
    def from_files(self) -> bool:
        return bool(self.options.cert_file)

    async def watch(self, interval: float = RELOAD_INTERVAL) -> None:
        """Reload the certificate when its files change, until cancelled."""
        if not self.from_files:
            return
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since last time; a bad pair keeps the old one."""
        if self._mtimes() == self._stamp:
            return False
        try:
            self._load_files()
        except (OSError, ssl.SSLError) as exc:
            log.error("keeping the current serving certificate: cannot load the new one: %s", exc)
            return False
        log.info("serving certificate reloaded from %s", self.options.cert_file)
        return True

    def _mtimes(self) -> tuple[float, float]:
        return (os.stat(self.options.cert_file).st_mtime, os.stat(self.options.key_file).st_mtime)

    def _load_files(self) -> None:
        stamp = self._mtimes()
        self.context.load_cert_chain(self.options.cert_file, self.options.key_file)
        self._stamp = stamp

    def _load_self_signed(self, hostnames: tuple[str, ...]) -> bytes:
        cert_pem, key_pem = self_signed_certificate(hostnames)
        load_pem_pair(self.context, cert_pem, key_pem)  # in memory: the key never reaches a named file
        log.info(
            "serving with a self-signed certificate (--tls-cert-file and --tls-private-key-file use yours)"
        )
        return cert_pem


def self_signed_certificate(hostnames: tuple[str, ...], days: int = 365) -> tuple[bytes, bytes]:
    """A self-signed serving certificate for ``hostnames`` (and 127.0.0.1, ::1): (cert, key) PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostnames[0]}@pyscheduler")])
    now = datetime.datetime.now(datetime.UTC)
    alt_names: list[x509.GeneralName] = [x509.DNSName(h) for h in hostnames]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", "::1")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def peer_identity(ssl_object: ssl.SSLObject | None) -> tuple[str, tuple[str, ...]] | None:
    """(user, groups) from a verified client certificate: CN and O, as Kubernetes reads them."""
    if ssl_object is None:
        return None
    with contextlib.suppress(ValueError):
        cert = ssl_object.getpeercert()
        if cert:
            # "subject" is a tuple of RDNs, each of (key, value) pairs; typeshed gives every key of
            # the certificate dict the union of all their value types
            rdns = cast("tuple[tuple[tuple[str, str], ...], ...]", cert.get("subject", ()))
            subject = [pair for rdn in rdns for pair in rdn]
            user = next((value for key, value in subject if key == "commonName"), "")
            groups = tuple(value for key, value in subject if key == "organizationName")
            if user:
                return user, groups
    return None
