"""HTTP/1.1 to the API server on asyncio protocols: a keep-alive pool, TLS, proxies, gzip.

Why not a general HTTP client: per request those build URL objects, header multidicts, request
and response objects and timers. kubernetes_asyncio's client, which the scheduler first used,
also creates its aiohttp session with ``trust_env=True``, so every request scanned the
environment for proxies and read ``~/.netrc`` in a thread; that was a third of the scheduler's
CPU per pod. Measured since (``python -m bench.transport``), aiohttp with ``trust_env=False``
still spends two to three times this module's CPU per request. The API server's side of HTTP
is small — JSON bodies framed by Content-Length or chunked, keep-alive connections — so this
module speaks just that: one request at a time per pooled connection, one ``write`` per
request, the answer parsed from the bytes as they arrive. Watches get a connection of their
own, read as a stream of lines. A gzipped answer (``KubeClient`` asks for gzip as client-go
does, unless the kubeconfig says ``disable-compression``) is decompressed whole.

Proxies follow client-go (Go's transport): the kubeconfig's ``proxy-url`` if set, else
``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``NO_PROXY`` read once, never for loopback hosts. An
``http://`` proxy gets plain requests in absolute form and a CONNECT tunnel for https; an
``https://`` proxy is the same over TLS to the proxy (its certificate checked as the API
server's is, as Go does); a ``socks5://`` (``socks5h://``) proxy opens a SOCKS5 tunnel (with
the URL's user and password, if any), the API server named by its host name.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import ssl
import urllib.parse
import zlib
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

MAX_HEAD = 64 * 1024  # bytes of status line and headers an answer may have
HIGH_WATER = 4 * 1024 * 1024  # unread bytes at which the socket stops being read
_NO_BODY_STATUSES = frozenset({204, 304})
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_HEX_DIGITS = b"0123456789abcdefABCDEF"


class HttpError(Exception):
    """No complete HTTP answer arrived."""


class ConnectError(HttpError):
    """The connection (TCP, proxy tunnel or TLS handshake) could not be made."""


class ConnectionBroke(HttpError):
    """The connection closed or reset under a request. ``written``: the whole request had been
    sent, so the server may have acted on it (a write then must not be sent again blindly)."""

    def __init__(self, message: str, *, written: bool = False) -> None:
        super().__init__(message)
        self.written = written


class ProtocolError(HttpError):
    """The server's answer was not HTTP/1.1 this client understands."""


PROXY_SCHEMES = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}  # and default ports


class ProxyError(ValueError):
    """A proxy URL that cannot be used; the message names where it came from."""


@dataclass(frozen=True, slots=True)
class Proxy:
    scheme: str  # one of PROXY_SCHEMES
    host: str
    port: int
    username: str | None = None  # from the URL's user:password
    password: str = field(default="", repr=False)

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """Raises ``ProxyError``; a URL without a scheme is an http:// one, as in Go."""
        parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
        scheme = parts.scheme.lower()
        if scheme not in PROXY_SCHEMES:
            raise ProxyError(f"proxy {url!r}: the scheme must be http, https, socks5 or socks5h")
        try:
            port = parts.port
        except ValueError:
            raise ProxyError(f"proxy {url!r}: the port is not a number from 1 to 65535") from None
        if not parts.hostname:
            raise ProxyError(f"proxy {url!r} names no host")
        username = urllib.parse.unquote(parts.username) if parts.username is not None else None
        password = urllib.parse.unquote(parts.password or "")
        return cls(scheme, parts.hostname, port or PROXY_SCHEMES[scheme], username, password)

    @property
    def socks(self) -> bool:
        return self.scheme.startswith("socks5")

    @property
    def authorization(self) -> str | None:
        """The Proxy-Authorization value for an HTTP(S) proxy with credentials."""
        if self.username is None or self.socks:
            return None
        userinfo = f"{self.username}:{self.password}"
        return "Basic " + base64.b64encode(userinfo.encode()).decode()

    @property
    def url(self) -> str:
        """scheme://host:port, without the credentials."""
        return f"{self.scheme}://{_host_port(self.host, self.port)}"

    def describe(self) -> str:
        return f"{self.scheme} proxy {_host_port(self.host, self.port)}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the API server is and how to reach it."""

    scheme: str
    host: str
    port: int
    base_path: str  # a path prefix of the server URL ("" for none), e.g. behind a gateway
    tls: ssl.SSLContext | None
    server_hostname: str | None  # the name TLS verifies, when not ``host``
    proxy: Proxy | None

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        proxy_url: str | None = None,
    ) -> Endpoint:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server {url!r} is not an http:// or https:// URL")
        https = parts.scheme == "https"
        if https and tls is None:
            tls = ssl.create_default_context()
        port = parts.port or (443 if https else 80)
        proxy = proxy_for(parts.scheme, parts.hostname, port, proxy_url)
        return cls(
            scheme=parts.scheme,
            host=parts.hostname,
            port=port,
            base_path=parts.path.rstrip("/"),
            tls=tls if https else None,
            server_hostname=server_hostname,
            proxy=proxy,
        )

    @property
    def authority(self) -> str:
        """The Host header: host, and the port when it is not the scheme's."""
        default = 443 if self.scheme == "https" else 80
        return _host_port(self.host, None if self.port == default else self.port)

    def target(self, path: str, params: Mapping[str, str] | None) -> str:
        """The request target: the path under the base path, percent-encoded, with a query."""
        target = urllib.parse.quote(self.base_path + path, safe=_PATH_SAFE)
        if params:
            target += "?" + urllib.parse.urlencode(params)
        if self.proxy is not None and not self.proxy.socks and self.tls is None:
            return f"http://{self.authority}{target}"  # plain http through an HTTP proxy: absolute form
        return target


def proxy_for(scheme: str, host: str, port: int, proxy_url: str | None = None) -> Proxy | None:
    """The proxy to reach ``scheme://host:port`` through: ``proxy_url`` if given, else the
    environment's (``environment_proxy``). Raises ``ProxyError`` naming the variable."""
    if proxy_url:
        return Proxy.parse(proxy_url)
    found = _environment_proxy(scheme, host, port)
    if found is None:
        return None
    variable, value = found
    try:
        return Proxy.parse(value)
    except ProxyError as exc:
        raise ProxyError(f"${variable}: {exc}") from None


def environment_proxy(scheme: str, host: str, port: int) -> str | None:
    """client-go's ProxyFromEnvironment (Go's httpproxy): the proxy for ``scheme://host[:port]``.

    ``HTTPS_PROXY`` for https, ``HTTP_PROXY`` for http (the upper-case name first, then the
    lower-case one, the first that is set and not empty); none for loopback hosts or hosts
    ``NO_PROXY`` names: ``*``, IP addresses, CIDR ranges, ``name`` (the name and its subdomains),
    ``.name`` (subdomains only), each optionally with ``:port``.
    """
    found = _environment_proxy(scheme, host, port)
    return found[1] if found is not None else None


def _environment_proxy(scheme: str, host: str, port: int) -> tuple[str, str] | None:
    """``environment_proxy``, with the name of the variable that gave it."""
    if _is_loopback(host):
        return None
    found = _environment("HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY")
    if found is None:
        return None
    no_proxy = _environment("NO_PROXY")
    if _bypassed(host.lower(), port, no_proxy[1] if no_proxy is not None else ""):
        return None
    return found


def _environment(name: str) -> tuple[str, str] | None:
    """The first of ``name`` and its lower-case form that is set and not empty, with its value."""
    for variable in (name, name.lower()):
        if value := os.environ.get(variable):
            return variable, value
    return None


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Does ``no_proxy`` (Go's NO_PROXY syntax) name ``host``?"""
    address = _ip(host)
    for entry in (part.strip().lower() for part in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if "/" in entry:
            try:
                if address is not None and address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            if _ip(name) == address:
                return True
            continue
        name = name[1:] if name.startswith("*.") else name
        if name.startswith("."):
            if host.endswith(name):
                return True
        elif host == name or host.endswith("." + name):
            return True
    return False


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port`` (``[v6]:port``) into its parts; a bare IPv6 address has no port."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, int(port) if port.isdigit() else None
    return entry, None


def _host_port(host: str, port: int | None) -> str:
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    return host if port is None else f"{host}:{port}"


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection; the reader awaits bytes that ``data_received`` buffers."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.lost = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._paused = False
        self.generation = 0  # the pool's generation it was made in (see HttpPool.drop_connections)

    # --- asyncio.Protocol ---
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, though not necessarily a subclass of asyncio.Transport (uvloop's)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > HIGH_WATER and self.transport is not None and not self._paused:
            self._paused = True  # the reader is behind: stop reading the socket until it asks again
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.lost = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # --- for the pool ---
    @property
    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def send(self, data: bytes) -> None:
        if not self.usable:
            raise ConnectionBroke("the connection is closed")
        assert self.transport is not None
        self.transport.write(data)
        if self._writable is not None:
            await self._writable
            if self.lost:
                raise self._broke()

    async def more(self) -> None:
        """Wait until more bytes arrive; raise ``ConnectionBroke`` if none ever will."""
        if self.lost:
            raise self._broke()
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _broke(self) -> ConnectionBroke:
        reason = f": {self.error}" if self.error else ""
        return ConnectionBroke(f"the server closed the connection{reason}")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def _read_head(conn: _Connection) -> tuple[int, dict[str, str]]:
    buffer = conn.buffer
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        if len(buffer) > MAX_HEAD:
            raise ProtocolError(f"the answer's head exceeds {MAX_HEAD} bytes")
        await conn.more()
    if end > MAX_HEAD:  # a head that arrived whole in one read
        raise ProtocolError(f"the answer's head exceeds {MAX_HEAD} bytes")
    head = bytes(buffer[:end]).decode("latin-1")
    del buffer[: end + 4]
    status_line, _, header_lines = head.partition("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if (
        not version.startswith("HTTP/1.")
        or not (len(code) == 3 and code.isascii() and code.isdigit())
        or rest[3:4] not in ("", " ")
    ):
        raise ProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in header_lines.split("\r\n") if header_lines else ():  # a head may have no headers
        name, sep, value = line.partition(":")
        if not sep:
            raise ProtocolError(f"malformed header line: {line[:80]!r}")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    if version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
        headers["connection"] = "close"
    status = int(code)
    if 100 <= status < 200:  # an interim answer (none is asked for): the real one follows
        return await _read_head(conn)
    return status, headers


def _framing(method: str, status: int, headers: Mapping[str, str]) -> int | None:
    """The body's length; -1 for chunked, None for "until the connection closes"."""
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        return 0
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return -1
    length = headers.get("content-length")
    if length is None:
        return None
    if not (length.isascii() and length.isdigit()):
        raise ProtocolError(f"bad Content-Length {length!r}")
    return int(length)


async def _read_exact(conn: _Connection, size: int) -> bytes:
    buffer = conn.buffer
    while len(buffer) < size:
        await conn.more()
    data = bytes(buffer[:size])
    del buffer[:size]
    return data


async def _read_line(conn: _Connection) -> bytes:
    buffer = conn.buffer
    while (end := buffer.find(b"\r\n")) < 0:
        if len(buffer) > MAX_HEAD:
            raise ProtocolError("a chunk size line is too long")
        await conn.more()
    line = bytes(buffer[:end])
    del buffer[: end + 2]
    return line


async def _chunks(conn: _Connection) -> AsyncIterator[bytes]:
    """The data of a chunked body, chunk by chunk; the trailers are read and dropped."""
    while True:
        size_line = (await _read_line(conn)).split(b";", 1)[0].strip()
        if not size_line or size_line.strip(_HEX_DIGITS):  # int() would take "-3", "0x5", "1_0"
            raise ProtocolError(f"bad chunk size {size_line[:20]!r}")
        size = int(size_line, 16)
        if size == 0:
            while await _read_line(conn):
                pass
            return
        chunk = await _read_exact(conn, size + 2)
        if not chunk.endswith(b"\r\n"):
            raise ProtocolError("a chunk does not end with CRLF")
        yield chunk[:-2]


async def _read_body(conn: _Connection, framing: int | None) -> bytes:
    if framing is not None and framing >= 0:
        return await _read_exact(conn, framing)
    if framing == -1:
        return b"".join([chunk async for chunk in _chunks(conn)])
    while not conn.lost:  # until the server closes the connection
        await conn.more()
    if conn.error is not None:  # reset rather than closed: the body may be cut short
        raise conn._broke()
    data = bytes(conn.buffer)
    conn.buffer.clear()
    return data


def _decoded(body: bytes, headers: Mapping[str, str]) -> bytes:
    """The body without its Content-Encoding: gzip (asked for with Accept-Encoding) or none."""
    encoding = headers.get("content-encoding", "").strip().lower()
    if not encoding or encoding == "identity":
        return body
    if encoding != "gzip":
        raise ProtocolError(f"an answer in Content-Encoding {encoding!r}, which was not asked for")
    try:
        return zlib.decompress(body, wbits=16 + zlib.MAX_WBITS)
    except zlib.error as exc:
        raise ProtocolError(f"a gzip answer that does not decompress: {exc}") from exc


def encode_request(
    method: str, target: str, authority: str, headers: Iterable[tuple[str, str]], body: bytes | None
) -> bytes:
    """The bytes of one request: request line, headers and body in a single buffer."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}"]
    for name, value in headers:
        if "\r" in value or "\n" in value:
            raise ValueError(f"header {name} holds a line break")
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


class HttpPool:
    """Keep-alive connections to one endpoint, at most ``max_connections`` at once.

    ``request`` borrows a connection (the most recently used idle one, or a new one), sends,
    reads the whole answer and gives the connection back if it can carry another request.
    ``stream`` opens a connection of its own for an answer read as lines (a watch).
    """

    def __init__(self, endpoint: Endpoint, *, max_connections: int = 32) -> None:
        self.endpoint = endpoint
        self._max = max_connections
        self._idle: list[_Connection] = []
        self._busy = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._streams: set[_Connection] = set()
        self._closed = False
        self._generation = 0

    async def request(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes | None
    ) -> Response:
        """One request and its whole answer. Bound it with ``asyncio.timeout`` around the call."""
        data = self._encode(method, target, headers, body)
        conn = await self._acquire()
        reusable = False
        try:
            await conn.send(data)
            try:
                status, answer_headers = await _read_head(conn)
            except ConnectionBroke as exc:
                raise ConnectionBroke(str(exc), written=True) from exc
            framing = _framing(method, status, answer_headers)
            payload = _decoded(await _read_body(conn, framing), answer_headers)
            # bytes beyond the answer would be read as the next one's: such a connection is dropped
            reusable = (
                framing is not None
                and answer_headers.get("connection", "").lower() != "close"
                and not conn.buffer
            )
            return Response(status, answer_headers, payload)
        finally:
            self._release(conn, reusable and conn.usable)

    async def stream(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], *, connect_timeout: float | None
    ) -> LineStream:
        """Send a request on a connection of its own and return once the answer's head is in."""
        data = self._encode(method, target, headers, None)
        async with asyncio.timeout(connect_timeout):
            conn = await self._connect()
            while conn.generation != self._generation:  # made with a certificate gone meanwhile
                conn.close()
                conn = await self._connect()
        self._streams.add(conn)
        try:
            async with asyncio.timeout(connect_timeout):
                await conn.send(data)
                status, answer_headers = await _read_head(conn)
        except BaseException:
            self._drop_stream(conn)
            raise
        return LineStream(self, conn, status, answer_headers, _framing(method, status, answer_headers))

    def drop_connections(self) -> None:
        """Make every connection open now go: the idle ones and the streams (watches) at once, a
        busy one once its answer is in. Called when the client certificate changes (client-go
        closes all connections then), so the old identity is used for nothing more."""
        self._generation += 1
        for conn in [*self._idle, *self._streams]:
            conn.close()
        self._idle.clear()
        self._streams.clear()

    async def close(self) -> None:
        self._closed = True
        for conn in [*self._idle, *self._streams]:
            conn.close()
        self._idle.clear()
        self._streams.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _encode(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes | None
    ) -> bytes:
        endpoint = self.endpoint
        proxy = endpoint.proxy
        if proxy is not None and proxy.authorization and endpoint.tls is None:
            # plain http through a proxy: each request goes to the proxy, so do its credentials
            headers = [*headers, ("Proxy-Authorization", proxy.authorization)]
        return encode_request(method, target, endpoint.authority, headers, body)

    # --- connections ---
    async def _acquire(self) -> _Connection:
        while True:
            if self._closed:
                raise ConnectError("the client is closed")
            while self._idle:
                conn = self._idle.pop()
                if conn.usable:
                    self._busy += 1
                    return conn
            if self._busy < self._max:
                self._busy += 1
                try:
                    return await self._connect()
                except BaseException:
                    self._busy -= 1
                    self._wake_one()
                    raise
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake_one()  # pass on the turn this cancelled waiter was given
                raise

    def _release(self, conn: _Connection, reusable: bool) -> None:
        self._busy -= 1
        if reusable and not self._closed and conn.generation == self._generation:
            self._idle.append(conn)
        else:
            conn.close()
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _drop_stream(self, conn: _Connection) -> None:
        self._streams.discard(conn)
        conn.close()

    async def _connect(self) -> _Connection:
        """A connection to the API server: direct, or through the proxy's tunnel."""
        generation = self._generation  # a certificate rotated while connecting makes it stale
        conn = await self._tunnel_or_direct()
        conn.generation = generation
        return conn

    async def _tunnel_or_direct(self) -> _Connection:
        endpoint = self.endpoint
        proxy = endpoint.proxy
        name = endpoint.server_hostname or endpoint.host
        if proxy is None:
            return await _open(endpoint.host, endpoint.port, endpoint.tls, name)
        # an https:// proxy is reached over TLS, checked as Go's transport does (the API server's
        # TLS settings, the proxy's name)
        proxy_tls = (endpoint.tls or ssl.create_default_context()) if proxy.scheme == "https" else None
        conn = await _open(proxy.host, proxy.port, proxy_tls, proxy.host)
        authority = _host_port(endpoint.host, endpoint.port)
        try:
            if proxy.socks:
                await _socks5_connect(conn, proxy, endpoint.host, endpoint.port)
            elif endpoint.tls is not None:
                await _http_connect(conn, proxy, authority)
            if endpoint.tls is not None:
                await _start_tls(conn, endpoint.tls, name, f"TLS to {authority} through the proxy")
        except HttpError as exc:
            conn.close()
            if isinstance(exc, ConnectError):
                raise
            raise ConnectError(f"{proxy.describe()}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn


async def _open(host: str, port: int, tls: ssl.SSLContext | None, name: str) -> _Connection:
    loop = asyncio.get_running_loop()
    try:
        _, conn = await loop.create_connection(
            _Connection, host, port, ssl=tls, server_hostname=name if tls is not None else None
        )
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(f"connect to {_host_port(host, port)}: {_describe(exc)}") from exc
    return conn


async def _start_tls(conn: _Connection, tls: ssl.SSLContext, name: str, what: str) -> None:
    """TLS over the connection as it is (inside a tunnel, itself perhaps TLS to the proxy)."""
    assert conn.transport is not None
    try:
        transport = await asyncio.get_running_loop().start_tls(
            conn.transport, conn, tls, server_hostname=name
        )
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(f"{what}: {_describe(exc)}") from exc
    conn.transport = cast(asyncio.Transport, transport)


async def _http_connect(conn: _Connection, proxy: Proxy, authority: str) -> None:
    """CONNECT ``authority`` through an HTTP(S) proxy."""
    authorization = proxy.authorization
    headers = [("Proxy-Authorization", authorization)] if authorization else []
    await conn.send(encode_request("CONNECT", authority, authority, headers, None))
    status, _ = await _read_head(conn)
    if status != 200:
        raise ConnectError(f"{proxy.describe()} refused CONNECT {authority}: {status}")


# RFC 1928's reply codes, as Go's SOCKS client words them
_SOCKS_REPLIES = {
    1: "general SOCKS server failure",
    2: "connection not allowed by ruleset",
    3: "network unreachable",
    4: "host unreachable",
    5: "connection refused",
    6: "TTL expired",
    7: "command not supported",
    8: "address type not supported",
}
_SOCKS_NO_AUTH, _SOCKS_PASSWORD, _SOCKS_NONE_ACCEPTABLE = 0x00, 0x02, 0xFF


async def _socks5_connect(conn: _Connection, proxy: Proxy, host: str, port: int) -> None:
    """A SOCKS5 tunnel to ``host:port`` (RFC 1928), with RFC 1929's username and password when
    the proxy URL has them; a host name is sent as such, for the proxy to resolve (as Go does)."""
    where = proxy.describe()
    methods = bytes([_SOCKS_NO_AUTH, _SOCKS_PASSWORD] if proxy.username is not None else [_SOCKS_NO_AUTH])
    await conn.send(bytes([5, len(methods)]) + methods)
    version, method = await _read_exact(conn, 2)
    if version != 5:
        raise ProtocolError(f"{where} did not answer as a SOCKS5 proxy")
    if method == _SOCKS_PASSWORD and proxy.username is not None:
        user, password = proxy.username.encode(), proxy.password.encode()
        if len(user) > 255 or len(password) > 255:
            raise ConnectError(f"{where}: a SOCKS5 username or password has at most 255 bytes")
        await conn.send(bytes([1, len(user)]) + user + bytes([len(password)]) + password)
        _, status = await _read_exact(conn, 2)
        if status != 0:
            raise ConnectError(f"{where} refused the username and password")
    elif method != _SOCKS_NO_AUTH:
        offered = "no authentication or a username and password" if proxy.username else "no authentication"
        raise ConnectError(f"{where} accepts none of the methods offered ({offered})")
    address = _ip(host)
    if address is None:
        name = host.encode("idna")
        if len(name) > 255:
            raise ConnectError(f"{where}: the host name {host!r} is too long for SOCKS5")
        destination = bytes([3, len(name)]) + name
    else:
        destination = bytes([1 if address.version == 4 else 4]) + address.packed
    await conn.send(bytes([5, 1, 0]) + destination + port.to_bytes(2, "big"))
    version, reply, _, kind = await _read_exact(conn, 4)
    if version != 5:
        raise ProtocolError(f"{where} did not answer as a SOCKS5 proxy")
    if reply != 0:
        reason = _SOCKS_REPLIES.get(reply, f"unknown reply {reply}")
        raise ConnectError(f"{where} could not connect to {_host_port(host, port)}: {reason}")
    if kind == 3:
        bound_length = (await _read_exact(conn, 1))[0]
    elif kind in (1, 4):
        bound_length = 4 if kind == 1 else 16
    else:
        raise ProtocolError(f"{where} answered with an unknown address type {kind}")
    await _read_exact(conn, bound_length + 2)  # the address the proxy connected from: unused


class LineStream:
    """An answer read as it arrives, one non-empty line at a time (a watch's JSON events)."""

    def __init__(
        self, pool: HttpPool, conn: _Connection, status: int, headers: Mapping[str, str], framing: int | None
    ) -> None:
        self._pool = pool
        self._conn = conn
        self.status = status
        self.headers = headers
        self._framing = framing

    async def read_all(self) -> bytes:
        """The whole body (for an error answer), then the connection is closed."""
        try:
            return await _read_body(self._conn, self._framing)
        finally:
            self.close()

    async def lines(self, read_timeout: float | None) -> AsyncIterator[bytes]:
        """Non-empty lines until the body ends; ``read_timeout`` bounds each silence."""
        pending = bytearray()
        async for data in self._data(read_timeout):
            pending += data
            if b"\n" not in data:
                continue
            end = pending.rfind(b"\n")
            complete = bytes(pending[:end])
            del pending[: end + 1]
            for line in complete.split(b"\n"):
                line = line.strip()
                if line:
                    yield line
        rest = bytes(pending).strip()
        if rest:
            yield rest

    async def _data(self, read_timeout: float | None) -> AsyncIterator[bytes]:
        conn = self._conn
        framing = self._framing
        if framing == -1:
            chunks = _chunks(conn)
            while True:
                async with asyncio.timeout(read_timeout):
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        return
                yield chunk
        remaining = framing
        while remaining is None or remaining > 0:
            buffer = conn.buffer
            if not buffer:
                if conn.lost and remaining is None:
                    if conn.error is not None:  # reset rather than closed
                        raise conn._broke()
                    return
                async with asyncio.timeout(read_timeout):
                    await conn.more()
                continue
            take = len(buffer) if remaining is None else min(remaining, len(buffer))
            data = bytes(buffer[:take])
            del buffer[:take]
            if remaining is not None:
                remaining -= take
            yield data

    def close(self) -> None:
        self._pool._drop_stream(self._conn)


def _describe(exc: BaseException) -> str:
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
