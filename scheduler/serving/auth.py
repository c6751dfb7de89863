"""Who may read /metrics, /configz and the debug paths: delegated to the API server.

As kube-scheduler (and every Kubernetes component) does it: a bearer token is checked with a
TokenReview, a client certificate against ``--client-ca-file``; a request with neither is
``system:anonymous``. Then a SubjectAccessReview asks whether that user may ``get`` the path
(Prometheus needs a ClusterRole granting ``get`` on the non-resource URL ``/metrics``), except for
the ``--authorization-always-allow-paths`` (the probes by default). Both answers are cached
briefly (10 s by default, as upstream), so a scrape every few seconds costs no API calls.

Anyone who can reach the port can make the scheduler ask, so asking is bounded: each cache
holds at most ``CACHE_SIZE`` answers (the least recently used go first), accepted and refused
tokens (allowed and denied verdicts) in caches of their own so a flood of bad ones never evicts
a good one; concurrent requests with the same token share one review; at most
``MAX_REVIEWS_IN_FLIGHT`` reviews of each kind are sent at once with ``MAX_REVIEWS_WAITING``
more queued, and a request beyond that is answered 429 at once. The clients that send the
reviews have token buckets and connections of their own (see ``SchedulerApp``), so the flood
never delays a binding.

Invalid credentials answer 401, a user without the permission 403, each with a ``Status`` body
worded as the API server words it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from cachetools import TTLCache

from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
CACHE_SIZE = 4096  # answers per cache (accepted tokens, refused tokens, allowed, denied verdicts)
MAX_REVIEWS_IN_FLIGHT = 16  # per kind (TokenReview, SubjectAccessReview)
MAX_REVIEWS_WAITING = 256  # per kind; a request that finds the queue full is answered 429
# upstream's delegating authenticator and authorizer: clients of their own with these limits
REVIEW_QPS = 200.0
REVIEW_BURST = 400
BUSY_MESSAGE = "too many requests are waiting for the API server to review them, try again later"


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
    """The outcome for one request: ``status`` 200 (go on), 401, 403 or 429 with a message."""

    status: int
    message: str = ""
    identity: Identity | None = None


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class AnswerCache(TTLCache[K, V]):
    """At most ``size`` answers, each kept ``ttl`` seconds; when full, the least recently used
    goes (cachetools' TTLCache). A ``ttl`` or ``size`` of 0 keeps nothing."""

    def __init__(self, size: int, ttl: float, clock: Callable[[], float]) -> None:
        super().__init__(maxsize=max(size, 0), ttl=ttl, timer=clock)

    def put(self, key: K, value: V) -> None:
        if self.ttl > 0 and self.maxsize > 0:
            self[key] = value


class ReviewsBusy(Exception):
    """Every review slot is taken and the queue is full."""


T = TypeVar("T")


class ReviewQueue:
    """Reviews of one kind: at most ``in_flight`` sent at once and ``waiting`` more queued in
    order; beyond that ``ReviewsBusy``. A review of a key already under way is shared, not sent
    again (upstream's singleflight); it runs to its end even when the request that started it
    goes away, since others may wait for it."""

    def __init__(self, kind: str, in_flight: int, waiting: int) -> None:
        self._kind = kind
        self._in_flight = in_flight
        self._capacity = in_flight + waiting
        self._slots = asyncio.Semaphore(in_flight)
        self._admitted = 0  # sent or queued
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}
        self._refused = 0  # since the queue last filled up

    async def review(self, key: Hashable, send: Callable[[], Awaitable[T]]) -> T:
        """``send()``'s answer, or that of the same key's review under way."""
        shared = self._pending.get(key)
        if shared is None:
            if self._admitted >= self._capacity:
                self._note_refusal()
                raise ReviewsBusy(self._kind)
            self._admitted += 1
            shared = asyncio.ensure_future(self._in_turn(send))
            self._pending[key] = shared
            shared.add_done_callback(lambda _: self._pending.pop(key, None))
        return await asyncio.shield(shared)

    async def _in_turn(self, send: Callable[[], Awaitable[T]]) -> T:
        try:
            async with self._slots:
                return await send()
        finally:
            self._admitted -= 1
            if self._refused and self._admitted < self._in_flight:
                log.warning("%ss keep up again; %d requests were refused", self._kind, self._refused)
                self._refused = 0

    def _note_refusal(self) -> None:
        if not self._refused:
            log.warning(
                "%ss: %d in flight and %d queued; answering further requests 429 until they drain",
                self._kind,
                self._in_flight,
                self._capacity - self._in_flight,
            )
        self._refused += 1


class DelegatedAuth:
    """``authn_client`` sends the TokenReviews, ``authz_client`` the SubjectAccessReviews: clients
    of their own, never the scheduler's (whose token bucket paces bindings)."""

    def __init__(
        self,
        authn_client: ApiClient,
        authz_client: ApiClient,
        options: AuthOptions,
        clock: Callable[[], float] = time.monotonic,
        *,
        cache_size: int = CACHE_SIZE,
        max_in_flight: int = MAX_REVIEWS_IN_FLIGHT,
        max_waiting: int = MAX_REVIEWS_WAITING,
    ) -> None:
        self._authn = authn_client
        self._authz = authz_client
        self._options = options
        # tokens are cached by a keyed hash: no token is kept, and no caller can aim at a slot
        self._hash_key = secrets.token_bytes(32)
        self._accepted: AnswerCache[bytes, Identity] = AnswerCache(cache_size, options.token_cache_ttl, clock)
        self._refused: AnswerCache[bytes, bool] = AnswerCache(cache_size, options.token_cache_ttl, clock)
        self._allowed: AnswerCache[Any, str] = AnswerCache(cache_size, options.allow_cache_ttl, clock)
        self._denied: AnswerCache[Any, str] = AnswerCache(cache_size, options.deny_cache_ttl, clock)
        self._token_reviews = ReviewQueue("TokenReview", max_in_flight, max_waiting)
        self._access_reviews = ReviewQueue("SubjectAccessReview", max_in_flight, max_waiting)

    async def decide(
        self,
        method: str,
        path: str,
        authorization: str | None,
        certificate: tuple[str, tuple[str, ...]] | None,
    ) -> Decision:
        try:
            identity = await self._authenticate(authorization, certificate)
            if identity is None:
                return Decision(401, "Unauthorized")
            if self._always_allowed(path):
                return Decision(200, identity=identity)
            verb = "get" if method in ("GET", "HEAD") else method.lower()
            allowed, reason = await self._authorize(identity, verb, path)
        except ReviewsBusy:
            return Decision(429, BUSY_MESSAGE)
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
        key = hmac.digest(self._hash_key, token.encode(), hashlib.sha256)
        identity = self._accepted.get(key)
        if identity is not None:
            return identity
        if self._refused.get(key):
            return None
        return await self._token_reviews.review(key, lambda: self._send_token_review(key, token))

    async def _send_token_review(self, key: bytes, token: str) -> Identity | None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            response = await self._authn.request("POST", TOKEN_REVIEWS, body)
        except Exception as exc:  # the API is unreachable: not the caller's fault, not cached
            log.warning("TokenReview failed: %s", exc)
            return None
        if response.status not in (200, 201):
            log.warning("TokenReview answered %s", response.status)
            return None
        status = (response.body or {}).get("status") or {}
        if not status.get("authenticated"):
            self._refused.put(key, True)
            return None
        user = status.get("user") or {}
        extra = tuple(sorted((k, tuple(v)) for k, v in (user.get("extra") or {}).items()))
        identity = Identity(
            str(user.get("username", "")), tuple(user.get("groups") or ()), str(user.get("uid", "")), extra
        )
        self._accepted.put(key, identity)
        return identity

    async def _authorize(self, identity: Identity, verb: str, path: str) -> tuple[bool, str]:
        key = (identity, verb, path)
        reason = self._allowed.get(key)
        if reason is not None:
            return True, reason
        reason = self._denied.get(key)
        if reason is not None:
            return False, reason
        return await self._access_reviews.review(key, lambda: self._send_access_review(key))

    async def _send_access_review(self, key: tuple[Identity, str, str]) -> tuple[bool, str]:
        identity, verb, path = key
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
        allowed = bool(status.get("allowed")) and not status.get("denied")
        reason = str(status.get("reason") or "")
        (self._allowed if allowed else self._denied).put(key, reason)
        return allowed, reason
