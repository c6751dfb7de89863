"""Key material for OpenSSL without a named file, and a context that pins a server name.

OpenSSL reads a certificate and key only from files: ``load_pem_pair`` hands PEM bytes over
through an anonymous memory file (``memfd_create``, opened by ``/proc/self/fd``); the extenders'
keys go the same way.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

from scheduler.client.kubeconfig.errors import KubeconfigError, reason


class PinnedNameContext(ssl.SSLContext):
    """A client TLS context that asks for (SNI) and verifies ``server_name`` on every connection
    asyncio makes with it, whatever host the connection goes to: a kubeconfig's tls-server-name
    for a client that has no way to be told it."""

    server_name = ""

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return super().wrap_bio(incoming, outgoing, server_side, self.server_name or server_hostname, session)


def load_pem_pair(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """``load_cert_chain`` from PEM bytes, through an anonymous memory file (no name on any file
    system, gone when closed). Raises ValueError where there is none (not Linux)."""
    if not hasattr(os, "memfd_create") or not os.path.isdir("/proc/self/fd"):  # Linux only
        raise ValueError(
            "a client key given as data needs memfd_create and /proc (Linux) to reach OpenSSL "
            "without a file; give the key and certificate as files instead"
        )
    fd = os.memfd_create("pyscheduler-client-certificate", os.MFD_CLOEXEC)
    try:
        data = memoryview(cert_pem.rstrip(b"\n") + b"\n" + key_pem)
        while data:
            data = data[os.write(fd, data) :]
        load_cert_files(context, f"/proc/self/fd/{fd}", None)
    finally:
        os.close(fd)


def load_cert_files(context: ssl.SSLContext, certfile: str, keyfile: str | None) -> None:
    """``load_cert_chain`` that never prompts: an encrypted key is refused, naming the reason."""
    asked: list[bool] = []

    def no_password() -> bytes:
        asked.append(True)
        raise ValueError("encrypted")

    try:
        context.load_cert_chain(certfile, keyfile, password=no_password)  # never a prompt
    except (OSError, ValueError) as exc:
        if asked:
            raise ValueError("the private key is encrypted, and a client key must not be") from exc
        raise


def read_pem(path: str | None, origin: str, what: str) -> bytes:
    """The content of ``path``; a KubeconfigError naming ``origin`` and ``what`` if unreadable."""
    assert path
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KubeconfigError(f"{origin}: cannot read {what} {path}: {reason(exc)}") from exc
