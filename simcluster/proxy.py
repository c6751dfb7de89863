"""A TCP proxy that breaks connections on purpose: the network faults of the soak tests.

Put it between the scheduler and the local endpoint (the scheduler's kubeconfig points at the
proxy) and it forwards bytes both ways until told otherwise:

* ``cut()`` resets every live connection at once (both sides see a broken connection, as when a
  load balancer or a NAT table drops them); ``cut_every(seconds)`` keeps doing so;
* ``blackhole(seconds)`` accepts connections but forwards nothing until the time is up (data
  waits, as in a network partition that heals; requests time out on the client's side);
* ``delay = seconds`` holds every chunk that long before forwarding it.

The endpoint's own faults (error codes, dropped watches, 410s, compaction, bind conflicts) live
in :mod:`simcluster.faults`; this covers what happens below HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from dataclasses import dataclass, field

CHUNK = 64 * 1024


@dataclass(slots=True, eq=False)
class _Link:
    """One client connection and its upstream twin."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def abort(self) -> None:
        for writer in (self.client, self.upstream):
            if writer is not None:
                _reset(writer)
        for task in self.tasks:
            task.cancel()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close abruptly with a TCP RST (SO_LINGER 0), not a polite FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class FaultProxy:
    """Forwards ``host:port`` (0: any free port) to ``target_host:target_port``."""

    def __init__(self, target_host: str, target_port: int, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.host = host
        self.port = port
        self.delay = 0.0
        self.cuts = 0  # connections reset so far
        self.held = 0  # chunks waiting out a delay or a blackhole right now
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None
        self._blackhole_until = 0.0
        self._cutter: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def connections(self) -> int:
        return len(self._links)

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        self.stop_cutting()
        if self._server is not None:
            self._server.close()
        self.cut()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- faults ------------------------------------------------------------------------

    def cut(self) -> int:
        """Reset every live connection; returns how many there were."""
        links = list(self._links)
        self._links.clear()
        for link in links:
            link.abort()
        self.cuts += len(links)
        return len(links)

    def cut_every(self, seconds: float) -> None:
        """Reset every live connection each ``seconds`` until ``stop_cutting()``."""
        self.stop_cutting()
        self._cutter = asyncio.create_task(self._cut_periodically(seconds))

    def stop_cutting(self) -> None:
        if self._cutter is not None:
            self._cutter.cancel()
            self._cutter = None

    def blackhole(self, seconds: float) -> None:
        """Forward nothing (new or old connections) for ``seconds``."""
        self._blackhole_until = time.monotonic() + seconds

    @property
    def healed_at(self) -> float:
        """When the current blackhole ends (monotonic clock); in the past when there is none."""
        return self._blackhole_until

    def heal(self) -> None:
        """End a blackhole and any delay at once."""
        self._blackhole_until = 0.0
        self.delay = 0.0

    # ---- forwarding --------------------------------------------------------------------

    async def _cut_periodically(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.cut()

    async def _wait_for_network(self) -> None:
        while (remaining := self._blackhole_until - time.monotonic()) > 0:
            await asyncio.sleep(min(remaining, 0.05))

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = _Link(writer)
        self._links.add(link)
        try:
            await self._wait_for_network()
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except (OSError, asyncio.CancelledError):
            self._drop(link)
            return
        link.upstream = up_writer
        if link not in self._links:  # cut while connecting
            link.abort()
            return
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]
        await asyncio.gather(*link.tasks, return_exceptions=True)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link) -> None:
        try:
            while data := await source.read(CHUNK):
                self.held += 1
                try:
                    await self._wait_for_network()
                    if self.delay:
                        await asyncio.sleep(self.delay)
                finally:
                    self.held -= 1
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._drop(link)

    def _drop(self, link: _Link) -> None:
        """One side closed: close the other too (politely; a cut is done by ``cut()``)."""
        if link in self._links:
            self._links.discard(link)
            for writer in (link.client, link.upstream):
                if writer is not None:
                    with contextlib.suppress(Exception):
                        writer.close()
