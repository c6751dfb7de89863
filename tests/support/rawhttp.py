"""Hand-written HTTP over real loopback sockets for the transport tests.

``Server`` runs a script per accepted connection (``asyncio.start_server``): the script reads
requests and writes whatever bytes it likes, so a test controls framing, splits and closes.
``Feed`` records what the client's connections receive, delivery by delivery, so a server can
wait until its last piece has arrived before it writes the next: each piece is then seen by the
client on its own, whatever TCP would have coalesced. ``TunnelProxy`` is an HTTP proxy script.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
import struct
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


class _HangUp:
    """A piece that closes the connection (the end of a close-delimited body)."""


HANG_UP = _HangUp()
Piece = bytes | _HangUp


@dataclass
class Seen:
    """A request as the server read it."""

    connection: int  # the index of the accepted connection it came on
    method: str
    target: str
    headers: dict[str, str]  # names in lower case
    body: bytes


class Feed:
    """Every delivery of bytes to the client's connections (``_Connection.data_received``)."""

    def __init__(self) -> None:
        self.deliveries: list[bytes] = []
        self.total = 0
        self._changed = asyncio.Event()

    def record(self, data: bytes) -> None:
        self.deliveries.append(bytes(data))
        self.total += len(data)
        self._changed.set()

    async def reach(self, total: int, timeout: float = 2.0) -> None:
        async with asyncio.timeout(timeout):
            while self.total < total:
                self._changed.clear()
                await self._changed.wait()

    def boundaries(self) -> set[int]:
        """The offsets, in all bytes received, at which one delivery ended."""
        ends, offset = set(), 0
        for data in self.deliveries:
            offset += len(data)
            ends.add(offset)
        return ends


class Peer:
    """One accepted connection, as its script sees it."""

    def __init__(
        self, server: Server, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ):
        self.server = server
        self.index = index
        self.reader = reader
        self.writer = writer
        self.ended = asyncio.Event()  # the script returned: the client closed, or the script hung up

    async def request(self) -> Seen | None:
        """The next request on this connection; None once the client has closed it."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head[:-4].decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        seen = Seen(self.index, method, target, headers, body)
        self.server.seen.append(seen)
        return seen

    async def send(self, *pieces: Piece, feed: Feed | None = None) -> None:
        """Write the pieces; with a feed, each only once the client has received the one before."""
        for piece in pieces:
            if isinstance(piece, _HangUp):
                await self.hang_up()
                return
            start = feed.total if feed is not None else 0
            self.writer.write(piece)
            await self.writer.drain()
            if feed is not None:
                await feed.reach(start + len(piece))

    async def hang_up(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()

    def reset(self) -> None:
        """Abort the connection with a TCP reset (SO_LINGER 0), not an orderly close."""
        self.writer.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
        )
        self.writer.transport.abort()

    @property
    def hung_up(self) -> bool:
        return self.writer.is_closing()


Script = Callable[[Peer], Awaitable[None]]


@dataclass
class Server:
    """A loopback server running ``script`` for every connection it accepts."""

    script: Script
    tls: ssl.SSLContext | None = None
    host: str = "127.0.0.1"
    peers: list[Peer] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)  # what a script raised, unexpectedly
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> Server:
        self._server = await asyncio.start_server(self._handle, self.host, 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def connections(self) -> int:
        return len(self.peers)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = Peer(self, len(self.peers), reader, writer)
        self.peers.append(peer)
        try:
            await self.script(peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away under the script
        except asyncio.CancelledError:
            pass  # stopped; ending normally keeps asyncio's stream callback from logging it
        except Exception as exc:
            self.errors.append(exc)
        finally:
            writer.close()
            peer.ended.set()
            self._tasks.discard(task)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for peer in self.peers:
            peer.writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                await self._server.wait_closed()


def ok(body: bytes = b"ok", *headers: str, version: str = "HTTP/1.1") -> bytes:
    """A 200 answer framed by Content-Length, with extra header lines."""
    extra = "".join(f"{line}\r\n" for line in headers)
    return f"{version} 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def chunk(data: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), extension, data)


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def answers(*replies: Piece | list[Piece], feed: Feed | None = None) -> Script:
    """Each request, on whichever connection, gets the next reply (bytes, or a list of pieces).

    The connection stays open for the next request unless a reply hangs up.
    """
    queue: deque[Piece | list[Piece]] = deque(replies)

    async def script(peer: Peer) -> None:
        while await peer.request() is not None:
            reply = queue.popleft()
            await peer.send(*(reply if isinstance(reply, list) else [reply]), feed=feed)
            if peer.hung_up:
                return

    return script


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


class TunnelProxy:
    """An HTTP proxy script: CONNECT opens a tunnel, any other request is answered by the proxy.

    ``routes`` maps a CONNECT authority to the address really dialled (a name that resolves
    nowhere can then name the API server); ``refuse`` is an answer given to every request.
    """

    def __init__(self, routes: dict[str, tuple[str, int]] | None = None, refuse: bytes | None = None) -> None:
        self.routes = routes or {}
        self.refuse = refuse

    async def __call__(self, peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            if self.refuse is not None:
                await peer.send(self.refuse)
                continue
            if request.method != "CONNECT":
                await peer.send(ok(f"proxied {request.method} {request.target}".encode()))
                continue
            host, _, port = request.target.rpartition(":")
            address = self.routes.get(request.target, (host.strip("[]"), int(port)))
            up_reader, up_writer = await asyncio.open_connection(*address)
            await peer.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(pipe(peer.reader, up_writer), pipe(up_reader, peer.writer))
            return


async def until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    """Poll ``condition`` until it holds; TimeoutError after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.002)


class SocksProxy:
    """A SOCKS5 proxy script (RFC 1928; RFC 1929's username and password when ``credentials``
    are set). ``routes`` as TunnelProxy's; ``reply`` a failure code every CONNECT is answered.
    ``asked`` records each CONNECT as (address type, host, port), ``logins`` each login."""

    def __init__(
        self,
        routes: dict[str, tuple[str, int]] | None = None,
        credentials: tuple[bytes, bytes] | None = None,
        reply: int = 0,
    ) -> None:
        self.routes = routes or {}
        self.credentials = credentials
        self.reply = reply
        self.asked: list[tuple[int, str, int]] = []
        self.logins: list[tuple[bytes, bytes]] = []

    async def __call__(self, peer: Peer) -> None:
        reader, writer = peer.reader, peer.writer
        _, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        wanted = 2 if self.credentials is not None else 0
        if wanted not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(bytes([5, wanted]))
        if self.credentials is not None:
            _, length = await reader.readexactly(2)
            user = await reader.readexactly(length)
            password = await reader.readexactly((await reader.readexactly(1))[0])
            self.logins.append((user, password))
            accepted = (user, password) == self.credentials
            writer.write(bytes([1, 0 if accepted else 1]))
            if not accepted:
                return
        _, _command, _, kind = await reader.readexactly(4)
        if kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
        else:
            host = str(ipaddress.ip_address(await reader.readexactly(4 if kind == 1 else 16)))
        port = int.from_bytes(await reader.readexactly(2), "big")
        self.asked.append((kind, host, port))
        bound = bytes([1, 127, 0, 0, 1]) + (1080).to_bytes(2, "big")
        if self.reply:
            writer.write(bytes([5, self.reply, 0]) + bound)
            return
        up_reader, up_writer = await asyncio.open_connection(*self.routes.get(f"{host}:{port}", (host, port)))
        writer.write(bytes([5, 0, 0]) + bound)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
