"""Who may read /metrics, /configz and the debug paths: delegated to the API server.

As kube-scheduler (and every Kubernetes component) does it: a bearer token is checked with a
TokenReview, a client certificate against ``--client-ca-file``; a request with neither is
``system:anonymous``. Then a SubjectAccessReview asks whether that user may ``get`` the path
(Prometheus needs a ClusterRole granting ``get`` on the non-resource URL ``/metrics``), except for
the ``--authorization-always-allow-paths`` (the probes by default). Both answers are cached
briefly (10 s by default, as upstream), so a scrape every few seconds costs no API calls.

Invalid credentials answer 401, a user without the permission 403, each with a ``Status`` body
worded as the API server words it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


@dataclass(slots=True, frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS = Identity("system:anonymous", ("system:unauthenticated",))


@dataclass(slots=True)
class AuthOptions:
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    token_cache_ttl: float = 10.0
    allow_cache_ttl: float = 10.0
    deny_cache_ttl: float = 10.0


@dataclass(slots=True, frozen=True)
class Decision:
    """The outcome for one request: ``status`` 200 (go on), 401 or 403 with a message."""

    status: int
    message: str = ""
    identity: Identity | None = None


class _TTLCache:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        found = self._entries.get(key)
        if found is None:
            return None
        expires, value = found
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl > 0:
            if len(self._entries) > 10_000:  # bounded: expired entries go first, then everything
                now = self._clock()
                self._entries = {k: v for k, v in self._entries.items() if v[0] > now} or {}
            self._entries[key] = (self._clock() + ttl, value)


class DelegatedAuth:
    """``authn_client`` sends the TokenReviews, ``authz_client`` the SubjectAccessReviews (usually
    both are the scheduler's own connection)."""

    def __init__(
        self,
        authn_client: ApiClient,
        authz_client: ApiClient,
        options: AuthOptions,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._authn = authn_client
        self._authz = authz_client
        self._options = options
        self._tokens = _TTLCache(clock)
        self._verdicts = _TTLCache(clock)

    async def decide(
        self,
        method: str,
        path: str,
        authorization: str | None,
        certificate: tuple[str, tuple[str, ...]] | None,
    ) -> Decision:
        identity = await self._authenticate(authorization, certificate)
        if identity is None:
            return Decision(401, "Unauthorized")
        if self._always_allowed(path):
            return Decision(200, identity=identity)
        verb = "get" if method in ("GET", "HEAD") else method.lower()
        allowed, reason = await self._authorize(identity, verb, path)
        if allowed:
            return Decision(200, identity=identity)
        message = f'forbidden: User "{identity.user}" cannot {verb} path "{path}"'
        return Decision(403, f"{message}: {reason}" if reason else message, identity)

    def _always_allowed(self, path: str) -> bool:
        for pattern in self._options.always_allow_paths:
            if pattern.endswith("*") and path.startswith(pattern[:-1]):
                return True
            if path == pattern:
                return True
        return False

    async def _authenticate(
        self, authorization: str | None, certificate: tuple[str, tuple[str, ...]] | None
    ) -> Identity | None:
        """The caller, anonymous without credentials, None when the credentials are not valid."""
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return None
            return await self._review_token(token.strip())
        if certificate is not None:
            user, groups = certificate
            return Identity(user, (*groups, "system:authenticated"))
        return ANONYMOUS

    async def _review_token(self, token: str) -> Identity | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(key)
        if cached is not None:
            return cached or None
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            response = await self._authn.request("POST", TOKEN_REVIEWS, body)
        except Exception as exc:  # the API is unreachable: not the caller's fault, not cached
            log.warning("TokenReview failed: %s", exc)
            return None
        status = (response.body or {}).get("status") or {} if response.status in (200, 201) else {}
        if not status.get("authenticated"):
            if response.status not in (200, 201):
                log.warning("TokenReview answered %s", response.status)
                return None
            self._tokens.put(key, False, self._options.token_cache_ttl)
            return None
        user = status.get("user") or {}
        extra = tuple(sorted((k, tuple(v)) for k, v in (user.get("extra") or {}).items()))
        identity = Identity(
            str(user.get("username", "")), tuple(user.get("groups") or ()), str(user.get("uid", "")), extra
        )
        self._tokens.put(key, identity, self._options.token_cache_ttl)
        return identity

    async def _authorize(self, identity: Identity, verb: str, path: str) -> tuple[bool, str]:
        key = (identity, verb, path)
        cached = self._verdicts.get(key)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {
            "user": identity.user,
            "groups": list(identity.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if identity.uid:
            spec["uid"] = identity.uid
        if identity.extra:
            spec["extra"] = {k: list(v) for k, v in identity.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        try:
            response = await self._authz.request("POST", SUBJECT_ACCESS_REVIEWS, body)
        except Exception as exc:
            log.warning("SubjectAccessReview failed: %s", exc)
            return False, "the API server could not be asked"
        if response.status not in (200, 201):
            log.warning("SubjectAccessReview answered %s", response.status)
            return False, "the API server could not be asked"
        status = (response.body or {}).get("status") or {}
        verdict = (bool(status.get("allowed")) and not status.get("denied"), str(status.get("reason") or ""))
        ttl = self._options.allow_cache_ttl if verdict[0] else self._options.deny_cache_ttl
        self._verdicts.put(key, verdict, ttl)
        return verdict
