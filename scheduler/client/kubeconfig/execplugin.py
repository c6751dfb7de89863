"""A client-go credential plugin (``users[].user.exec``): run, its ExecCredential read and cached
until it expires or a 401 says otherwise. Never run interactively."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import json
import logging
import os
import shutil
import ssl
import time
import unicodedata
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.client.kubeconfig.credentials import Clock, Credentials
from scheduler.client.kubeconfig.errors import CredentialError, reason
from scheduler.client.kubeconfig.tls import load_pem_pair

log = logging.getLogger(__name__)

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"  # a cluster extension passed to plugins
EXEC_TIMEOUT = 120.0  # seconds a credential plugin may run (client-go waits forever)
_PLUGIN_HELP = (
    "it looks like a client-go credential plugin that is not installed, see "
    "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins"
)


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
            raise CredentialError(f"{where} could not be started: {reason(exc)}{self._hint()}") from exc
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
                    f"{where}: failed parsing client key/certificate: {reason(exc)}"
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


def _printable(text: str) -> str:
    """Control characters (ANSI escapes) shown as U+XXXX, as client-go cleans install hints."""
    return "".join(
        ch if ch in "\t\n" or not unicodedata.category(ch).startswith("C") else f"U+{ord(ch):04X}"
        for ch in text
    )
