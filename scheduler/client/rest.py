"""Plain-JSON requests to the Kubernetes API.

The generated OpenAPI models are slow to build and lossy for fields they do not know, so every
request here sends and receives raw JSON (orjson) — but authentication, TLS and token refresh
stay kubernetes_asyncio's: each request takes its headers from the library's ``ApiClient``
(``update_params_for_auth``, which runs the token refresh hooks) and goes through the aiohttp
session that the library configured with the cluster's CA and client certificate. (``call_api``
itself cannot be used for writes: it re-encodes every JSON body with ``json.dumps``.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient as _LibApiClient
from kubernetes_asyncio.client import Configuration

from scheduler.client.ratelimit import RateLimiter
from scheduler.framework.interface import ApiResponse

log = logging.getLogger(__name__)

USER_AGENT = "pyscheduler"
_READ_METHODS = frozenset({"GET", "HEAD"})
MAX_RETRY_AFTER = 10.0  # seconds; a longer Retry-After is honoured only up to this


class ApiError(Exception):
    """An API request that did not succeed, with the fields of its ``kind: Status`` body."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body

    @classmethod
    def from_response(cls, resp: ApiResponse) -> ApiError:
        body = resp.body
        if isinstance(body, Mapping) and body.get("kind") == "Status":
            return cls(resp.status, str(body.get("reason") or ""), str(body.get("message") or ""), body)
        message = body if isinstance(body, str) else ""
        return cls(resp.status, _REASONS.get(resp.status, "Unknown"), message, body)

    @property
    def is_not_found(self) -> bool:
        return self.status == 404

    @property
    def is_conflict(self) -> bool:
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def is_gone(self) -> bool:
        return self.status == 410

    @property
    def is_retriable(self) -> bool:
        """Server-side trouble that a later attempt may not meet (client-go's Retriable)."""
        return self.status in (0, 429, 500, 502, 503, 504)


class TransportError(ApiError):
    """The request never got an HTTP answer (connection refused, reset, timed out)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "TransportError", message)


# The reasons the API server puts in a Status for these codes, for bodies that are not a Status.
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def raise_for_status(resp: ApiResponse) -> Any:
    """Return the body of a 2xx response; raise ``ApiError`` for anything else."""
    if 200 <= resp.status < 300:
        return resp.body
    raise ApiError.from_response(resp)


def _short(exc: BaseException) -> str:
    """``Type: message`` of a transport failure, without aiohttp's nested reprs."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _connection_broke(exc: TransportError) -> bool:
    """Did the connection fail under the request (not a timeout, not a refused connect)?"""
    cause = exc.__cause__
    return isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError) and not isinstance(
        cause, aiohttp.ClientConnectorError
    )


def decode_body(data: bytes) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", errors="replace")


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        return None  # an HTTP-date; the API server only ever sends seconds


class KubeClient:
    """``framework.ApiClient`` over kubernetes_asyncio's auth and connection pool.

    ``qps``/``burst`` throttle every request except watch streams (qps <= 0 disables it;
    ``rate_limiter`` replaces the bucket, e.g. to share one between clients).
    Reads answered 429/5xx with a Retry-After are retried up to ``read_retries`` times; writes
    are never retried here, because only the caller knows whether repeating them is safe.
    """

    def __init__(
        self,
        configuration: Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        timeout: float = 30.0,
        read_retries: int = 3,
        user_agent: str = USER_AGENT,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self._api = _LibApiClient(configuration)
        self._api.user_agent = user_agent
        self._host = configuration.host.rstrip("/")
        self._limiter = rate_limiter or RateLimiter(qps, burst)
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._read_retries = read_retries

    @property
    def configuration(self) -> Configuration:
        return self._api.configuration

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> ApiResponse:
        """Send one request; 4xx/5xx come back as a response (see ``raise_for_status``).

        Raises ``TransportError`` when no HTTP answer arrives.
        """
        method = method.upper()
        data = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        attempt = 0
        while True:
            await self._limiter.acquire()
            try:
                resp, raw = await self._exchange(method, path, params, data, content_type)
            except TransportError as exc:
                if not _connection_broke(exc):
                    raise
                # A pooled connection that died while idle (a proxy or the server closed it) fails
                # the first request sent over it: try once more, on a fresh connection.
                log.debug("%s %s: %s; retrying on a new connection", method, path, exc)
                resp, raw = await self._exchange(method, path, params, data, content_type)
            result = ApiResponse(resp.status, decode_body(raw))
            wait = _retry_after(resp.headers) if resp.status == 429 or resp.status >= 500 else None
            if wait is None or method not in _READ_METHODS or attempt >= self._read_retries:
                return result
            attempt += 1
            log.info("%s %s answered %d, retrying in %.1fs", method, path, resp.status, wait)
            await asyncio.sleep(wait)

    async def _exchange(
        self, method: str, path: str, params: Mapping[str, str] | None, data: bytes | None, content_type: str
    ) -> tuple[aiohttp.ClientResponse, bytes]:
        """Send one request and read its whole body."""
        resp = await self._open(method, path, params, data, content_type, self._timeout)
        try:
            return resp, await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise TransportError(f"{method} {path}: {_short(exc)}") from exc
        finally:
            resp.release()

    async def stream_lines(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        read_timeout: float | None = None,
        on_connected: Callable[[], None] | None = None,
    ) -> AsyncIterator[bytes]:
        """GET a streaming endpoint (a watch) and yield its non-empty lines.

        Not throttled, like client-go's watches. A non-2xx answer raises ``ApiError`` before
        the first line; ``read_timeout`` bounds the silence between two chunks; ``on_connected``
        is called once the server has answered 2xx (a quiet watch yields nothing for a while).
        """
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout.total, sock_read=read_timeout)
        resp = await self._open("GET", path, params, None, "application/json", timeout)
        try:
            if not 200 <= resp.status < 300:
                raw = await resp.read()
                raise ApiError.from_response(ApiResponse(resp.status, decode_body(raw)))
            if on_connected is not None:
                on_connected()
            try:
                async for line in resp.content:
                    line = line.strip()
                    if line:
                        yield line
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise TransportError(f"watch {path}: {_short(exc)}") from exc
        finally:
            resp.release()

    async def _open(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        headers = dict(self._api.default_headers)
        headers["Accept"] = "application/json"
        if data is not None:
            headers["Content-Type"] = content_type
        query: list[tuple[str, str]] = list((params or {}).items())
        await self._api.update_params_for_auth(headers, query, ["BearerToken"])
        rest = self._api.rest_client
        extra: dict[str, Any] = {}
        if rest.proxy:
            extra["proxy"] = rest.proxy
            if rest.proxy_headers:
                extra["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        try:
            return await rest.pool_manager.request(
                method,
                self._host + path,
                params=query or None,
                data=data,
                headers=headers,
                timeout=timeout,
                **extra,
            )
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise TransportError(f"{method} {path}: {_short(exc)}") from exc
