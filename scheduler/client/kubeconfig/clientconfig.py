"""``ClientConfig``: where the API server is, how to trust it, who to say we are."""

from __future__ import annotations

import ssl
import urllib.parse
from dataclasses import dataclass, field

from scheduler.client.kubeconfig.credentials import Credentials
from scheduler.client.kubeconfig.errors import KubeconfigError, reason
from scheduler.client.kubeconfig.tls import PinnedNameContext, load_cert_files, load_pem_pair, read_pem


@dataclass(frozen=True)
class ClientConfig:
    """Where the API server is, how to trust it and who to say we are."""

    server: str
    certificate_authority: str | None = None  # a CA file
    certificate_authority_data: bytes | None = field(default=None, repr=False)  # PEM; wins over the file
    client_certificate: str | None = None
    client_certificate_data: bytes | None = field(default=None, repr=False)
    client_key: str | None = None
    client_key_data: bytes | None = field(default=None, repr=False)
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    disable_compression: bool = False  # the cluster's disable-compression: never ask for gzip
    credentials: Credentials = field(default_factory=Credentials)
    # What error messages name: 'cluster "c" in /path/kubeconfig', 'user "u" in ...'.
    cluster_origin: str = "the cluster"
    user_origin: str = "the user"
    # the context's namespace (the service account's in a pod): kubectl's default for -n
    namespace: str = ""

    @property
    def https(self) -> bool:
        return urllib.parse.urlsplit(self.server).scheme == "https"

    def ssl_context(self, *, pin_server_name: bool = False) -> ssl.SSLContext | None:
        """A fresh client TLS context for the server (None for http://). Raises KubeconfigError.

        ``pin_server_name``: the context itself asks for and checks ``tls_server_name`` (when
        set) on every connection, for a client that cannot be given the name (aiohttp's)."""
        if not self.https:
            return None
        context = self._trust(pin_server_name)
        # Go's verifier trusts any certificate of the CA bundle as an anchor and is not
        # OpenSSL's X509_STRICT; match it.
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
        if self.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._client_certificate(context)
        return context

    def _trust(self, pin_server_name: bool) -> ssl.SSLContext:
        """A context that trusts the CA data, else the CA file, else the system's CAs."""
        context: ssl.SSLContext
        if pin_server_name and self.tls_server_name:
            pinned = PinnedNameContext(ssl.PROTOCOL_TLS_CLIENT)
            pinned.server_name = self.tls_server_name
            context = pinned
        else:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        data = self.certificate_authority_data
        try:
            if data is not None:
                context.load_verify_locations(cadata=data.decode("latin-1"))
            elif self.certificate_authority:
                context.load_verify_locations(cafile=self.certificate_authority)
            else:
                context.load_default_certs()
        except (OSError, ValueError) as exc:
            what = (
                "certificate-authority-data"
                if data is not None
                else f"certificate-authority {self.certificate_authority}"
            )
            raise KubeconfigError(f"{self.cluster_origin}: {what}: {reason(exc)}") from exc
        return context

    def _client_certificate(self, context: ssl.SSLContext) -> None:
        has_cert = self.client_certificate or self.client_certificate_data is not None
        has_key = self.client_key or self.client_key_data is not None
        if not has_cert and not has_key:
            try:
                self.credentials.bind_tls(context)
            except (OSError, ValueError) as exc:
                raise KubeconfigError(
                    f"{self.user_origin}: the exec plugin's client certificate: {reason(exc)}"
                ) from exc
            return
        if not (has_cert and has_key):
            raise KubeconfigError(
                f"{self.user_origin}: a client certificate needs both a certificate and a key"
            )
        try:
            if self.client_certificate_data is None and self.client_key_data is None:
                assert self.client_certificate and self.client_key
                load_cert_files(context, self.client_certificate, self.client_key)
                return
            cert = self.client_certificate_data
            if cert is None:
                cert = read_pem(self.client_certificate, self.user_origin, "client-certificate")
            key = self.client_key_data
            if key is None:
                key = read_pem(self.client_key, self.user_origin, "client-key")
            load_pem_pair(context, cert, key)
        except (OSError, ValueError) as exc:
            raise KubeconfigError(f"{self.user_origin}: client certificate and key: {reason(exc)}") from exc
