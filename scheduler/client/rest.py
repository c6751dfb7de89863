"""Plain-JSON requests to the Kubernetes API.

The generated OpenAPI models are slow to build and lossy for fields they do not know, so every
request here sends and receives raw JSON (orjson) over ``transport.HttpPool``. A
``kubeconfig.ClientConfig`` (from a kubeconfig or the in-cluster service account) gives the
server URL, CA, client certificate and proxy, and its credentials the Authorization header of
every request (a token file re-read, an exec plugin re-run, when due or after a 401).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import orjson

from scheduler.client.kubeconfig.clientconfig import ClientConfig
from scheduler.client.kubeconfig.errors import CredentialError
from scheduler.client.ratelimit import RateLimiter
from scheduler.client.transport import ConnectionBroke, Endpoint, HttpError, HttpPool, Response
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


# Methods a request may be repeated with when its connection broke after it was sent.
REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS"})


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")  # transport.Response names headers in lower case
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        return None  # an HTTP-date; the API server only ever sends seconds


class KubeClient:
    """``framework.ApiClient`` over the cluster's credentials and a keep-alive connection pool.

    ``qps``/``burst`` throttle every request except watch streams (qps <= 0 disables it;
    ``rate_limiter`` replaces the bucket, e.g. to share one between clients).
    Reads answered 429/5xx with a Retry-After are retried up to ``read_retries`` times; writes
    are never retried here, because only the caller knows whether repeating them is safe.
    At most ``max_connections`` requests are in flight at once (watches have their own).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        qps: float = 50.0,
        burst: int = 100,
        timeout: float = 30.0,
        read_retries: int = 3,
        user_agent: str = USER_AGENT,
        rate_limiter: RateLimiter | None = None,
        max_connections: int = 32,
        pool: HttpPool | None = None,
    ) -> None:
        self._config = config
        self._credentials = config.credentials
        self._owns_pool = pool is None
        self._pool = pool or HttpPool(endpoint_of(config), max_connections=max_connections)
        if self._owns_pool:  # a rotated client certificate closes the connections made with the old
            config.credentials.on_certificate_change(self._pool.drop_connections)
        self._user_agent = user_agent
        self._static_headers = (("User-Agent", user_agent), ("Accept", "application/json"))
        # as client-go: large answers come gzipped (the API server compresses those over
        # 128 KiB) unless the cluster says disable-compression; watches are not compressed
        self._accept_gzip = not config.disable_compression
        self._limiter = rate_limiter or RateLimiter(qps, burst)
        self._timeout = timeout
        self._read_retries = read_retries

    def sibling(self, *, qps: float, burst: int) -> KubeClient:
        """A client over this one's connections with a token bucket of its own.

        kube-scheduler writes events and renews its lease through clients of their own, so a
        binding burst that drains the bucket delays neither; here they share the connections.
        Closing the sibling leaves the connections to this client.
        """
        return KubeClient(
            self._config,
            qps=qps,
            burst=burst,
            timeout=self._timeout,
            read_retries=self._read_retries,
            user_agent=self._user_agent,
            pool=self._pool,
        )

    @property
    def config(self) -> ClientConfig:
        return self._config

    async def close(self) -> None:
        if self._owns_pool:
            await self._pool.close()

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
        target = self._pool.endpoint.target(path, params)
        attempt = 0
        reauthenticated = False
        while True:
            await self._limiter.acquire()
            headers = await self._headers(content_type if data is not None else None)
            if self._accept_gzip:
                headers.append(("Accept-Encoding", "gzip"))
            answer = await self._exchange(method, target, headers, data)
            status = answer.status
            if status == 401 and not reauthenticated and self._credentials.refreshable:
                # client-go re-runs an exec plugin (re-reads a token file) on a 401; a refused
                # request was not processed, so it is sent once more with the fresh credentials.
                reauthenticated = True
                self._credentials.invalidate(_authorization(headers))
                log.info("%s %s answered 401, retrying with refreshed credentials", method, path)
                continue
            result = ApiResponse.from_bytes(answer.status, answer.body)
            wait = _retry_after(answer.headers) if status == 429 or status >= 500 else None
            if wait is None or method not in _READ_METHODS or attempt >= self._read_retries:
                return result
            attempt += 1
            log.info("%s %s answered %d, retrying in %.1fs", method, path, status, wait)
            await asyncio.sleep(wait)

    async def _exchange(
        self, method: str, target: str, headers: list[tuple[str, str]], data: bytes | None
    ) -> Response:
        """One request, bounded by the timeout; raises ``TransportError`` when no answer comes."""
        for last_try in (False, True):
            try:
                async with asyncio.timeout(self._timeout):
                    return await self._pool.request(method, target, headers, data)
            except ConnectionBroke as exc:
                if last_try or (exc.written and method not in REPLAYABLE):
                    raise TransportError(f"{method} {target}: {exc}") from exc
                # A pooled connection that died while idle (a proxy or the server closed it) fails
                # the first request sent over it: try once more, on a fresh connection. A write the
                # server may have received is not sent twice (Go's transport replays only reads).
                log.debug("%s %s: %s; retrying on a new connection", method, target, exc)
            except TimeoutError as exc:
                raise TransportError(f"{method} {target}: no answer within {self._timeout:g}s") from exc
            except HttpError as exc:
                raise TransportError(f"{method} {target}: {exc}") from exc
        raise AssertionError("unreachable: the last try returns or raises")

    async def _headers(self, content_type: str | None) -> list[tuple[str, str]]:
        """The static headers, the credentials' Authorization (fetched anew when due) and type.

        Raises ``TransportError`` when there are no credentials to send (an exec plugin failed).
        """
        headers = list(self._static_headers)
        try:
            auth = await self._credentials.authorization()
        except CredentialError as exc:
            raise TransportError(f"getting credentials: {exc}") from exc
        if auth:
            headers.append(("Authorization", auth))
        if content_type is not None:
            headers.append(("Content-Type", content_type))
        return headers

    async def stream_lines(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        read_timeout: float | None = None,
        on_connected: Callable[[], None] | None = None,
    ) -> AsyncGenerator[bytes, None]:
        """GET a streaming endpoint (a watch) and yield its non-empty lines.

        Not throttled, like client-go's watches. A non-2xx answer raises ``ApiError`` before
        the first line; ``read_timeout`` bounds the silence between two chunks; ``on_connected``
        is called once the server has answered 2xx (a quiet watch yields nothing for a while).
        """
        target = self._pool.endpoint.target(path, params)
        headers = await self._headers(None)
        try:
            stream = await self._pool.stream("GET", target, headers, connect_timeout=self._timeout)
        except TimeoutError as exc:
            raise TransportError(f"watch {path}: no answer within {self._timeout:g}s") from exc
        except HttpError as exc:
            raise TransportError(f"watch {path}: {exc}") from exc
        try:
            if not 200 <= stream.status < 300:
                if stream.status == 401:  # the caller's next watch gets fresh credentials
                    self._credentials.invalidate(_authorization(headers))
                raw = await stream.read_all()
                raise ApiError.from_response(ApiResponse.from_bytes(stream.status, raw))
            if on_connected is not None:
                on_connected()
            try:
                async for line in stream.lines(read_timeout):
                    yield line
            except TimeoutError as exc:
                raise TransportError(f"watch {path}: nothing for {read_timeout:g}s") from exc
            except HttpError as exc:
                raise TransportError(f"watch {path}: {exc}") from exc
        finally:
            stream.close()


def endpoint_of(config: ClientConfig) -> Endpoint:
    """The API server of a ClientConfig: URL, TLS context, the name TLS checks and proxy."""
    return Endpoint.from_url(
        config.server,
        tls=config.ssl_context(),
        server_hostname=config.tls_server_name,
        proxy_url=config.proxy_url,
    )


def _authorization(headers: list[tuple[str, str]]) -> str | None:
    """The Authorization value a request was sent with (what ``invalidate`` compares)."""
    return next((value for name, value in headers if name == "Authorization"), None)
