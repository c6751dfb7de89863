"""Kubeconfig files and the in-cluster service account, read the way client-go's clientcmd does.

``load_kubeconfig(paths)`` merges a ``$KUBECONFIG``-style list of files (for clusters, users and
contexts the first file that defines a name wins, even for fields the later file adds; the
current-context comes from the first file that sets one), resolves relative file references
against the file that holds them, and picks the current context's cluster and user.
``in_cluster_config()`` reads the pod's service account. Both return a ``ClientConfig``: the
server, its TLS settings (``ssl_context()``), a proxy and the ``credentials`` that give each
request its Authorization header:

- ``token``: a fixed bearer token; ``tokenFile`` (and the service account token): re-read every
  minute or so (client-go's cached file token source), and at once after a 401;
- ``username``/``password``: basic auth;
- ``exec``: a credential plugin (``client.authentication.k8s.io/v1`` or ``v1beta1``), run again
  once its token's ``expirationTimestamp`` passes or after a 401. The scheduler never runs a
  plugin interactively: ``interactiveMode: Always`` is refused, ``IfAvailable`` runs it without a
  terminal. A client certificate the plugin returns is used for TLS;
- client certificates (files or data) for TLS;
- ``auth-provider`` is refused: client-go dropped its in-tree providers for exec plugins.

Key material never goes to a named file: CA data is handed to OpenSSL in memory; a client
certificate and key given as data (or by an exec plugin) are written to an anonymous memory file
(``memfd_create``) that OpenSSL opens through ``/proc/self/fd``, since it reads keys only from
files; ``load_pem_pair`` does that for the extenders' keys too.

Every problem is a ``KubeconfigError`` naming the file, the entry and the field.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
import inspect
import json
import logging
import math
import os
import shutil
import ssl
import time
import unicodedata
import urllib.parse
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from scheduler.client.transport import Proxy

log = logging.getLogger(__name__)

Clock = Callable[[], float]  # seconds since the epoch (exec expiry timestamps are wall-clock times)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# client-go's NewCachedFileTokenSource: a token read from a file is good for a minute, and read
# again 10 s before that (half of the kubelet's refresh margin for projected tokens).
TOKEN_FILE_PERIOD = 60.0
TOKEN_FILE_LEEWAY = 10.0
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"  # a cluster extension passed to plugins
EXEC_TIMEOUT = 120.0  # seconds a credential plugin may run (client-go waits forever)
_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
_IMPERSONATION_FIELDS = ("as", "as-uid", "as-groups", "as-user-extra")
_PLUGIN_HELP = (
    "it looks like a client-go credential plugin that is not installed, see "
    "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins"
)

try:
    _YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _YamlLoader = yaml.SafeLoader


class KubeconfigError(Exception):
    """A kubeconfig (or service account) that cannot be used; the message names file and field."""


class NotInClusterError(KubeconfigError):
    """Not running in a pod: the service's environment variables are not set."""


class CredentialError(Exception):
    """No credentials for a request: the exec plugin failed, the token file cannot be read."""


# ---------------------------------------------------------------------------- credentials


class Credentials:
    """No credentials: requests carry no Authorization header. The base of the others."""

    refreshable = False  # does ``invalidate`` make the next ``authorization`` fetch anew?

    async def authorization(self) -> str | None:
        """The Authorization header's value for the next request (None: send none)."""
        return None

    def invalidate(self, used: str | None = None) -> None:
        """Forget the cached credential: the next ``authorization`` re-runs or re-reads it.

        ``used`` is the Authorization value the server refused; when the cache already holds
        another (a concurrent request refreshed it), nothing is forgotten.
        """

    def client_certificate(self) -> tuple[bytes, bytes] | None:
        """A (certificate, key) PEM pair these credentials give for TLS (an exec plugin's)."""
        return None

    def bind_tls(self, context: ssl.SSLContext) -> None:
        """Load ``client_certificate()`` into ``context``, now and whenever it changes."""

    def on_certificate_change(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` whenever ``client_certificate()`` is replaced by another: the
        connections made with the old one must be closed, as client-go closes them. Held weakly
        when it is a bound method, so registering keeps no client alive."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BearerToken(Credentials):
    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    async def authorization(self) -> str | None:
        return self._value


class BasicAuth(Credentials):
    def __init__(self, username: str, password: str) -> None:
        self.username = username
        userinfo = f"{username}:{password}".encode()
        self._value = "Basic " + base64.b64encode(userinfo).decode("ascii")

    async def authorization(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return f"BasicAuth(username={self.username!r})"


class TokenFile(Credentials):
    """A bearer token read from a file, read again once ``period - leeway`` seconds have passed.

    A read that fails keeps the last token that was read (else ``token``, the kubeconfig's own
    ``token`` field), as client-go does; only when there is neither does the request fail.
    """

    refreshable = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        token: str | None = None,
        period: float = TOKEN_FILE_PERIOD,
        leeway: float = TOKEN_FILE_LEEWAY,
        clock: Clock = time.time,
    ) -> None:
        self.path = Path(path)
        self._fallback = token
        self._period = period
        self._leeway = min(leeway, period)
        self._clock = clock
        self._token: str | None = None
        self._expires = -math.inf
        self._failing = False

    def read(self) -> str:
        """Read the file now (raises ``CredentialError``); does not touch the cache."""
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialError(f"cannot read token file {self.path}: {_reason(exc)}") from exc
        if not token:
            raise CredentialError(f"token file {self.path} is empty")
        return token

    def current(self) -> str:
        """The token to send: cached while fresh, else read again."""
        now = self._clock()
        if self._token is not None and now < self._expires - self._leeway:
            return self._token
        try:
            token = self.read()
        except CredentialError as exc:
            keep = self._token or self._fallback
            if keep is None:
                raise
            if not self._failing:
                log.error("%s; still using the token read before", exc)
                self._failing = True
            return keep
        self._token, self._expires, self._failing = token, now + self._period, False
        return token

    async def authorization(self) -> str | None:
        return f"Bearer {self.current()}"

    def invalidate(self, used: str | None = None) -> None:
        if used is not None and self._token is not None and used != f"Bearer {self._token}":
            return
        self._expires = -math.inf

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"


@dataclass(frozen=True, slots=True)
class _ExecResult:
    token: str
    certificate: tuple[bytes, bytes] | None
    expires: float | None  # epoch seconds; None: until a 401 says otherwise


class ExecPlugin(Credentials):
    """A client-go credential plugin: ``command args...`` prints an ExecCredential.

    The answer is cached until its ``expirationTimestamp`` passes (without one, until a 401);
    concurrent requests wait for one run. When a run after a 401 fails while the last answer
    has not expired, that answer is kept, as client-go does.
    """

    refreshable = True

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Sequence[tuple[str, str]] = (),
        *,
        api_version: str = EXEC_API_VERSIONS[0],
        install_hint: str = "",
        cluster: Mapping[str, Any] | None = None,
        label: str = "",
        clock: Clock = time.time,
        timeout: float = EXEC_TIMEOUT,
    ) -> None:
        if api_version not in EXEC_API_VERSIONS:
            raise ValueError(f"exec plugin apiVersion {api_version!r} is not one of {EXEC_API_VERSIONS}")
        self.command = command
        self.args = tuple(args)
        self.env = tuple(env)
        self.api_version = api_version
        self.install_hint = _printable(" ".join(install_hint.split()))
        self.cluster = dict(cluster) if cluster is not None else None
        self._label = label or f"exec plugin {command}"
        self._clock = clock
        self._timeout = timeout
        self._result: _ExecResult | None = None
        self._stale = False
        self._lock = asyncio.Lock()
        self._contexts: weakref.WeakSet[ssl.SSLContext] = weakref.WeakSet()
        self._on_change: list[Callable[[], Callable[[], object] | None]] = []
        self.runs = 0  # how many times the plugin was started

    async def authorization(self) -> str | None:
        result = await self._current()
        return f"Bearer {result.token}" if result.token else None

    def invalidate(self, used: str | None = None) -> None:
        result = self._result
        if result is None:
            return
        if used is not None and used != (f"Bearer {result.token}" if result.token else None):
            return
        self._stale = True

    def client_certificate(self) -> tuple[bytes, bytes] | None:
        return self._result.certificate if self._result is not None else None

    def bind_tls(self, context: ssl.SSLContext) -> None:
        certificate = self.client_certificate()
        if certificate is not None:
            load_pem_pair(context, *certificate)
        self._contexts.add(context)

    def on_certificate_change(self, callback: Callable[[], object]) -> None:
        if inspect.ismethod(callback):
            self._on_change.append(weakref.WeakMethod(callback))
        else:
            self._on_change.append(lambda: callback)

    def __repr__(self) -> str:
        return f"ExecPlugin({self.command!r})"

    def _certificate_changed(self) -> None:
        alive = [(ref, callback) for ref in self._on_change if (callback := ref()) is not None]
        self._on_change = [ref for ref, _ in alive]
        for _, callback in alive:
            callback()

    def _usable(self) -> bool:
        result = self._result
        return result is not None and not self._stale and not self._expired(result)

    def _expired(self, result: _ExecResult) -> bool:
        return result.expires is not None and self._clock() > result.expires

    async def _current(self) -> _ExecResult:
        if self._usable():
            assert self._result is not None
            return self._result
        async with self._lock:
            if self._usable():
                assert self._result is not None
                return self._result
            old = self._result
            try:
                result = await self._run()
            except CredentialError as exc:
                if old is None or self._expired(old):
                    raise
                log.error("%s; still using the credentials it gave before", exc)
                self._stale = False  # until the next 401 or the expiry
                return old
            if result.certificate is not None and (old is None or old.certificate != result.certificate):
                for context in list(self._contexts):
                    load_pem_pair(context, *result.certificate)  # new connections present it
            self._result, self._stale = result, False
            if old is not None and old.certificate != result.certificate:
                self._certificate_changed()  # and the open ones, made with the old one, go
            return result

    def exec_info(self) -> str:
        """The ExecCredential the plugin finds in $KUBERNETES_EXEC_INFO."""
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = self.cluster
        info = {"kind": "ExecCredential", "apiVersion": self.api_version, "spec": spec}
        return json.dumps(info, separators=(",", ":"))

    async def _run(self) -> _ExecResult:
        where = f"{self._label}: executable {self.command}"
        executable = self.command if os.sep in self.command else shutil.which(self.command)
        if executable is None:
            raise CredentialError(f"{where} not found; {_PLUGIN_HELP}{self._hint()}")
        env = dict(os.environ)
        env.update(self.env)
        env[EXEC_INFO_ENV] = self.exec_info()
        self.runs += 1
        try:
            process = await asyncio.create_subprocess_exec(
                executable,
                *self.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except FileNotFoundError as exc:
            raise CredentialError(f"{where} not found; {_PLUGIN_HELP}{self._hint()}") from exc
        except OSError as exc:
            raise CredentialError(f"{where} could not be started: {_reason(exc)}{self._hint()}") from exc
        try:
            async with asyncio.timeout(self._timeout):
                stdout, stderr = await process.communicate()
        except TimeoutError:
            raise CredentialError(f"{where} did not finish within {self._timeout:g}s") from None
        finally:
            if process.returncode is None:
                process.kill()
        lines = [_printable(line.strip()) for line in stderr.decode(errors="replace").splitlines()]
        lines = [line for line in lines if line]
        code = process.returncode
        assert code is not None  # communicate() returned: the process has exited
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"failed with exit code {code}"
            said = f": {lines[-1]}" if lines else ""
            raise CredentialError(f"{where} {how}{said}{self._hint()}")
        for line in lines:
            log.info("%s: %s", where, line)
        return self._parse(stdout, where)

    def _hint(self) -> str:
        return f"; install hint: {self.install_hint}" if self.install_hint else ""

    def _parse(self, stdout: bytes, where: str) -> _ExecResult:
        try:
            answer = json.loads(stdout)
        except ValueError as exc:
            raise CredentialError(f"{where}: decoding stdout: {exc}") from exc
        if not isinstance(answer, dict):
            raise CredentialError(f"{where}: decoding stdout: not a JSON object")
        if answer.get("kind") != "ExecCredential":
            raise CredentialError(
                f"{where}: decoding stdout: kind {answer.get('kind')!r} is not ExecCredential"
            )
        if answer.get("apiVersion") != self.api_version:
            raise CredentialError(
                f"{where}: exec plugin is configured to use API version {self.api_version}, "
                f"plugin returned version {answer.get('apiVersion')}"
            )
        status = answer.get("status")
        if not isinstance(status, dict):
            raise CredentialError(f"{where}: exec plugin didn't return a status field")
        token, cert, key = (
            status.get(name) or "" for name in ("token", "clientCertificateData", "clientKeyData")
        )
        if not all(isinstance(value, str) for value in (token, cert, key)):
            raise CredentialError(
                f"{where}: status.token, clientCertificateData and clientKeyData must be strings"
            )
        if not (token or cert or key):
            raise CredentialError(f"{where}: exec plugin didn't return a token or cert/key pair")
        if bool(cert) != bool(key):
            raise CredentialError(f"{where}: exec plugin returned only certificate or key, not both")
        certificate = None
        if cert:
            certificate = (cert.encode(), key.encode())
            try:
                load_pem_pair(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), *certificate)
            except (OSError, ValueError) as exc:
                raise CredentialError(
                    f"{where}: failed parsing client key/certificate: {_reason(exc)}"
                ) from exc
        expires = None
        stamp = status.get("expirationTimestamp")
        if stamp:
            try:
                expires = _parse_time(stamp)
            except ValueError as exc:
                raise CredentialError(f"{where}: status.expirationTimestamp {stamp!r}: {exc}") from exc
        return _ExecResult(token, certificate, expires)


def _parse_time(value: Any) -> float:
    if not isinstance(value, str):
        raise ValueError("not an RFC 3339 time")
    moment = datetime.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError("an RFC 3339 time needs a time zone (e.g. Z)")
    return moment.timestamp()


# ---------------------------------------------------------------------------- the config


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
            raise KubeconfigError(f"{self.cluster_origin}: {what}: {_reason(exc)}") from exc
        return context

    def _client_certificate(self, context: ssl.SSLContext) -> None:
        has_cert = self.client_certificate or self.client_certificate_data is not None
        has_key = self.client_key or self.client_key_data is not None
        if not has_cert and not has_key:
            try:
                self.credentials.bind_tls(context)
            except (OSError, ValueError) as exc:
                raise KubeconfigError(
                    f"{self.user_origin}: the exec plugin's client certificate: {_reason(exc)}"
                ) from exc
            return
        if not (has_cert and has_key):
            raise KubeconfigError(
                f"{self.user_origin}: a client certificate needs both a certificate and a key"
            )
        try:
            if self.client_certificate_data is None and self.client_key_data is None:
                assert self.client_certificate and self.client_key
                _load_chain(context, self.client_certificate, self.client_key)
                return
            cert = self.client_certificate_data
            if cert is None:
                cert = _read_file(self.client_certificate, self.user_origin, "client-certificate")
            key = self.client_key_data
            if key is None:
                key = _read_file(self.client_key, self.user_origin, "client-key")
            load_pem_pair(context, cert, key)
        except (OSError, ValueError) as exc:
            raise KubeconfigError(f"{self.user_origin}: client certificate and key: {_reason(exc)}") from exc


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
        _load_chain(context, f"/proc/self/fd/{fd}", None)
    finally:
        os.close(fd)


def _load_chain(context: ssl.SSLContext, certfile: str, keyfile: str | None) -> None:
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


def _read_file(path: str | None, origin: str, what: str) -> bytes:
    assert path
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KubeconfigError(f"{origin}: cannot read {what} {path}: {_reason(exc)}") from exc


# ---------------------------------------------------------------------------- in-cluster


def in_cluster_config(
    directory: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
    *,
    environ: Mapping[str, str] | None = None,
    clock: Clock = time.time,
    token_file_period: float = TOKEN_FILE_PERIOD,
) -> ClientConfig:
    """The pod's service account: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
    ``directory``/token (re-read periodically) and ``directory``/ca.crt.

    As in client-go, a ca.crt that cannot be loaded is logged and the system's CAs are used.
    """
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise NotInClusterError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set")
    directory = Path(directory)
    token = TokenFile(directory / "token", period=token_file_period, clock=clock)
    try:
        token.current()
    except CredentialError as exc:
        raise KubeconfigError(str(exc)) from exc
    ca: str | None = str(directory / "ca.crt")
    try:
        ssl.create_default_context(cafile=ca)
    except (OSError, ValueError) as exc:
        log.error("expected to load the root CA from %s, but: %s", ca, _reason(exc))
        ca = None
    host = f"[{host}]" if ":" in host else host
    origin = f"the service account in {directory}"
    try:
        namespace = (directory / "namespace").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        namespace = ""
    return ClientConfig(
        server=f"https://{host}:{port}",
        certificate_authority=ca,
        credentials=token,
        cluster_origin=origin,
        user_origin=origin,
        namespace=namespace,
    )


# ---------------------------------------------------------------------------- kubeconfig files


@dataclass(frozen=True, slots=True)
class _Entry:
    kind: str  # "cluster", "user", "context"
    name: str
    data: Mapping[str, Any]
    file: Path

    @property
    def origin(self) -> str:
        return f'{self.kind} "{self.name}" in {self.file}'

    def error(self, message: str) -> KubeconfigError:
        return KubeconfigError(f"{self.origin}: {message}")

    def resolve(self, path: str) -> str:
        """A file reference, relative to the directory of the file that holds it."""
        return (
            path
            if os.path.isabs(path)
            else os.path.normpath(os.path.join(os.path.abspath(self.file.parent), path))
        )

    def string(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self.error(f"{key} must be a string, not {_type_name(value)}")
        return value

    def flag(self, key: str) -> bool:
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(f"{key} must be true or false, not {value!r}")
        return value

    def data_field(self, key: str) -> bytes | None:
        value = self.string(key)
        if value is None:
            return None
        try:  # Go's []byte fields: standard base64, line breaks ignored
            return base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise self.error(f"{key} is not valid base64: {exc}") from exc


@dataclass
class _Merged:
    files: list[Path]
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current_context: tuple[str, Path] | None = None

    @property
    def label(self) -> str:
        return ", ".join(map(str, self.files))


async def load_kubeconfig(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    context: str | None = None,
    clock: Clock = time.time,
    token_file_period: float = TOKEN_FILE_PERIOD,
) -> ClientConfig:
    """The ClientConfig of the current context (or ``context``) of the merged kubeconfig files.

    ``paths`` is one file or a list (a ``$KUBECONFIG`` string is split on ``os.pathsep``);
    files of the list that do not exist are skipped, as clientcmd does. An exec plugin is run
    once here, so a broken one fails the load. Raises ``KubeconfigError``.
    """
    merged = _merge(_file_list(paths))
    if context is None:
        if merged.current_context is None:
            raise KubeconfigError(f"{merged.label}: no current-context is set")
        context, where = merged.current_context
        chosen = merged.contexts.get(context)
        if chosen is None:
            raise KubeconfigError(f'{where}: current-context "{context}" is not a context in {merged.label}')
    else:
        chosen = merged.contexts.get(context)
        if chosen is None:
            raise KubeconfigError(f'context "{context}" is not defined in {merged.label}')
    cluster = _referenced(merged, chosen, "cluster", merged.clusters)
    user = _referenced(merged, chosen, "user", merged.users)
    config = _client_config(cluster, user, clock=clock, token_file_period=token_file_period)
    config = replace(config, namespace=chosen.string("namespace") or "")
    if isinstance(config.credentials, ExecPlugin):
        try:
            await config.credentials.authorization()
        except CredentialError as exc:
            raise KubeconfigError(str(exc)) from exc
    config.ssl_context()  # reads the CA and the client certificate now, to fail here if unusable
    return config


def _file_list(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, str):
        items: list[str | os.PathLike[str]] = list(paths.split(os.pathsep))
    elif isinstance(paths, os.PathLike):
        items = [paths]
    else:
        items = list(paths)
    files: list[Path] = []
    for item in items:
        if item and Path(item) not in files:
            files.append(Path(item))
    if not files:
        raise KubeconfigError("no kubeconfig file was given")
    return files


def _merge(files: list[Path]) -> _Merged:
    merged = _Merged(files=[])
    missing: list[str] = []
    for file in files:
        document = _read_document(file)
        if document is None:
            missing.append(str(file))
            continue
        merged.files.append(file)
        for key, kind, target in (
            ("clusters", "cluster", merged.clusters),
            ("users", "user", merged.users),
            ("contexts", "context", merged.contexts),
        ):
            for entry in _entries(document, file, key, kind):
                target.setdefault(entry.name, entry)  # the first file to name it wins, whole
        current = document.get("current-context")
        if current is not None and not isinstance(current, str):
            raise KubeconfigError(f"{file}: current-context must be a string, not {_type_name(current)}")
        if current and merged.current_context is None:
            merged.current_context = (current, file)
    if not merged.files:
        raise KubeconfigError(f"no such file: {', '.join(missing)}")
    return merged


def _read_document(file: Path) -> dict[str, Any] | None:
    """The file's top-level mapping; None when the file does not exist."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise KubeconfigError(f"{file}: cannot read: {_reason(exc)}") from exc
    try:
        document = yaml.load(text, Loader=_YamlLoader)  # a safe loader
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{file}: not valid YAML: {' '.join(str(exc).split())}") from exc
    if document is None:
        return {}  # an empty file is an empty config, as in clientcmd
    if not isinstance(document, dict):
        raise KubeconfigError(f"{file}: a kubeconfig is a mapping, not {_type_name(document)}")
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, "", "Config"):
        raise KubeconfigError(f"{file}: kind is {kind!r}, not Config")
    if version not in (None, "", "v1"):
        raise KubeconfigError(f"{file}: apiVersion is {version!r}, not v1")
    return document


def _entries(document: Mapping[str, Any], file: Path, key: str, kind: str) -> list[_Entry]:
    items = document.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise KubeconfigError(f"{file}: {key} must be a list, not {_type_name(items)}")
    entries: list[_Entry] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        where = f"{file}: {key}[{index}]"
        if not isinstance(item, dict):
            raise KubeconfigError(f"{where} must be a mapping, not {_type_name(item)}")
        name = item.get("name")
        if not name:
            raise KubeconfigError(f"{where} has no name")
        if not isinstance(name, str):
            raise KubeconfigError(f"{where}: name must be a string, not {_type_name(name)}")
        if name in seen:
            raise KubeconfigError(f'{file}: {key}: the name "{name}" is used twice')
        seen.add(name)
        data = item.get(kind)
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise KubeconfigError(
                f'{file}: {kind} "{name}": {kind} must be a mapping, not {_type_name(data)}'
            )
        entries.append(_Entry(kind, name, data, file))
    return entries


def _referenced(merged: _Merged, context: _Entry, key: str, table: dict[str, _Entry]) -> _Entry:
    name = context.string(key)
    if name is None:
        raise context.error(f"no {key} is set")
    entry = table.get(name)
    if entry is None:
        raise context.error(f'{key} "{name}" is not defined in {merged.label}')
    return entry


def _client_config(cluster: _Entry, user: _Entry, *, clock: Clock, token_file_period: float) -> ClientConfig:
    ca_file = cluster.string("certificate-authority")
    ca_data = cluster.data_field("certificate-authority-data")
    insecure = cluster.flag("insecure-skip-tls-verify")
    server_name = cluster.string("tls-server-name")
    if ca_file and ca_data is not None:
        raise cluster.error("certificate-authority and certificate-authority-data are both set; set one")
    if ca_file:
        ca_file = cluster.resolve(ca_file)
        _check_readable(cluster, "certificate-authority", ca_file)
    if insecure and (ca_file or ca_data is not None):
        raise cluster.error(
            "insecure-skip-tls-verify cannot be combined with certificate-authority(-data), as in client-go"
        )

    cert_file = user.string("client-certificate")
    cert_data = user.data_field("client-certificate-data")
    key_file = user.string("client-key")
    key_data = user.data_field("client-key-data")
    for file_key, file_value, data_value in (
        ("client-certificate", cert_file, cert_data),
        ("client-key", key_file, key_data),
    ):
        if file_value and data_value is not None:
            raise user.error(f"{file_key} and {file_key}-data are both set; set one")
    has_cert = bool(cert_file) or cert_data is not None
    has_key = bool(key_file) or key_data is not None
    if has_cert and not has_key:
        raise user.error("client-certificate(-data) is set without client-key(-data)")
    if has_key and not has_cert:
        raise user.error("client-key(-data) is set without client-certificate(-data)")
    if cert_file:
        cert_file = user.resolve(cert_file)
        _check_readable(user, "client-certificate", cert_file)
    if key_file:
        key_file = user.resolve(key_file)
        _check_readable(user, "client-key", key_file)

    server = cluster.string("server")
    if server is None:
        raise cluster.error("no server is set")
    if "://" not in server:  # client-go's DefaultServerURL: https when anything asks for TLS
        tls_wanted = ca_file or ca_data is not None or has_cert or insecure or server_name
        server = ("https://" if tls_wanted else "http://") + server
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise cluster.error(f"server {server!r} is not an http:// or https:// URL")
    proxy_url = cluster.string("proxy-url")
    if proxy_url:
        try:
            Proxy.parse(proxy_url)
        except ValueError as exc:
            raise cluster.error(f"proxy-url: {exc}") from exc

    credentials = _credentials(
        cluster,
        user,
        server=server,
        has_cert=has_cert,
        clock=clock,
        token_file_period=token_file_period,
    )
    return ClientConfig(
        server=server,
        certificate_authority=ca_file,
        certificate_authority_data=ca_data,
        client_certificate=cert_file,
        client_certificate_data=cert_data,
        client_key=key_file,
        client_key_data=key_data,
        insecure_skip_tls_verify=insecure,
        tls_server_name=server_name,
        proxy_url=proxy_url,
        disable_compression=cluster.flag("disable-compression"),
        credentials=credentials,
        cluster_origin=cluster.origin,
        user_origin=user.origin,
    )


def _credentials(
    cluster: _Entry, user: _Entry, *, server: str, has_cert: bool, clock: Clock, token_file_period: float
) -> Credentials:
    provider = user.data.get("auth-provider")
    if provider is not None:
        name = provider.get("name") if isinstance(provider, dict) else None
        raise user.error(
            f'auth-provider "{name or "?"}" is not supported (client-go removed its in-tree auth '
            "providers); use an exec credential plugin instead (users[].user.exec)"
        )
    for key in _IMPERSONATION_FIELDS:
        if user.data.get(key):
            raise user.error(f"{key} (impersonation) is not supported")
    token = user.string("token")
    token_file = user.string("tokenFile")
    username, password = user.string("username"), user.string("password")
    if (token or token_file) and (username or password):
        raise user.error("username/password and a token are both set; only one is allowed")
    exec_plugin = _exec_plugin(cluster, user, server=server, clock=clock)  # validated even if unused
    if token_file:
        path = user.resolve(token_file)
        source = TokenFile(path, token=token, period=token_file_period, clock=clock)
        if token is None:
            try:
                source.current()
            except CredentialError as exc:
                raise user.error(f"tokenFile: {exc}") from exc
        return source
    if token:
        return BearerToken(token)
    if username or password:
        return BasicAuth(username or "", password or "")
    if exec_plugin is not None and not has_cert:  # as in client-go, other credentials win over exec
        return exec_plugin
    return Credentials()


def _exec_plugin(cluster: _Entry, user: _Entry, *, server: str, clock: Clock) -> ExecPlugin | None:
    spec = user.data.get("exec")
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise user.error(f"exec must be a mapping, not {_type_name(spec)}")
    entry = _Entry("user", user.name, spec, user.file)

    def problem(message: str) -> KubeconfigError:
        return user.error(f"exec: {message}")

    command = entry.string("command")
    if command is None:
        raise problem("no command is set")
    if os.sep in command:  # a path, not a name to look up on $PATH: relative to the kubeconfig
        command = entry.resolve(command)
    args = spec.get("args") or []
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise problem("args must be a list of strings")
    env: list[tuple[str, str]] = []
    env_items = spec.get("env") or []
    if not isinstance(env_items, list):
        raise problem("env must be a list of {name, value}")
    for index, item in enumerate(env_items):
        name = item.get("name") if isinstance(item, dict) else None
        value = item.get("value", "") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise problem(f"env[{index}] has no name")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise problem(f"env[{index}] ({name}): value must be a string, not {_type_name(value)}")
        env.append((name, value))
    api_version = entry.string("apiVersion")
    if api_version is None:
        raise problem("no apiVersion is set")
    if api_version not in EXEC_API_VERSIONS:
        raise problem(
            f"apiVersion {api_version!r} is not supported; use one of {', '.join(EXEC_API_VERSIONS)}"
        )
    mode = entry.string("interactiveMode")
    if mode is None:
        if api_version != "client.authentication.k8s.io/v1beta1":
            raise problem(f"interactiveMode must be set for apiVersion {api_version} (Never or IfAvailable)")
        mode = "IfAvailable"
    if mode not in _INTERACTIVE_MODES:
        raise problem(f"interactiveMode {mode!r} is not one of {', '.join(_INTERACTIVE_MODES)}")
    if mode == "Always":
        raise problem(
            "interactiveMode Always needs a terminal, and the scheduler never runs a credential "
            "plugin interactively; use Never or IfAvailable"
        )
    hint = entry.string("installHint") or ""
    cluster_info = _exec_cluster_info(cluster, server) if entry.flag("provideClusterInfo") else None
    return ExecPlugin(
        command,
        args,
        env,
        api_version=api_version,
        install_hint=hint,
        cluster=cluster_info,
        label=f"{user.origin}: exec plugin",
        clock=clock,
    )


def _exec_cluster_info(cluster: _Entry, server: str) -> dict[str, Any]:
    """ExecCredential.spec.cluster (provideClusterInfo): client-go's fields, CA always as data."""
    info: dict[str, Any] = {"server": server}
    if name := cluster.string("tls-server-name"):
        info["tls-server-name"] = name
    if cluster.flag("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    ca = cluster.data_field("certificate-authority-data")
    ca_file = cluster.string("certificate-authority")
    if ca is None and ca_file:
        ca = _read_file(cluster.resolve(ca_file), cluster.origin, "certificate-authority")
    if ca is not None:
        info["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    if proxy := cluster.string("proxy-url"):
        info["proxy-url"] = proxy
    if cluster.flag("disable-compression"):
        info["disable-compression"] = True
    extensions = cluster.data.get("extensions") or []
    if isinstance(extensions, list):
        for item in extensions:
            if isinstance(item, dict) and item.get("name") == EXEC_CLUSTER_EXTENSION:
                info["config"] = item.get("extension")
    return info


def _check_readable(entry: _Entry, key: str, path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise entry.error(f"cannot read {key} {path}: {_reason(exc)}") from exc


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, ssl.SSLError):
        return exc.strerror
    message = " ".join(str(exc).split())
    return message or type(exc).__name__


def _printable(text: str) -> str:
    """Control characters (ANSI escapes) shown as U+XXXX, as client-go cleans install hints."""
    return "".join(
        ch if ch in "\t\n" or not unicodedata.category(ch).startswith("C") else f"U+{ord(ch):04X}"
        for ch in text
    )
