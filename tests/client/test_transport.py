"""scheduler.client.transport against real sockets: framing, the pool, watches, TLS, proxies.

The servers are hand-written HTTP (tests/support/rawhttp.py), so every split, framing and close
of an answer is the test's choice; the ``feed`` fixture makes a split reach the client as such.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import os
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from scheduler.client import TransportError, transport
from scheduler.client.transport import (
    ConnectError,
    ConnectionBroke,
    Endpoint,
    HttpPool,
    ProtocolError,
    Proxy,
    ProxyError,
    Response,
    encode_request,
    environment_proxy,
)
from tests.support.extender import Pki, free_port, make_pki
from tests.support.rawhttp import (
    CHUNKED_HEAD,
    HANG_UP,
    LAST_CHUNK,
    Feed,
    Peer,
    Script,
    Server,
    SocksProxy,
    TunnelProxy,
    answers,
    chunk,
    ok,
    until,
)

Serve = Callable[..., Awaitable[Server]]
Pools = Callable[..., HttpPool]


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variables in either case (nor REQUEST_METHOD, which drops HTTP_PROXY)."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
            monkeypatch.delenv(name)


@pytest.fixture
async def serve(clean_env: None) -> AsyncIterator[Serve]:
    """``await serve(script, tls=None, host="127.0.0.1")``: a started Server, stopped after."""
    servers: list[Server] = []

    async def start(script: Script, *, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> Server:
        server = await Server(script, tls=tls, host=host).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
    assert [error for server in servers for error in server.errors] == []


@pytest.fixture
async def pools() -> AsyncIterator[Pools]:
    """``pools(url, max_connections=8, **Endpoint.from_url keywords)``, closed after the test."""
    made: list[HttpPool] = []

    def make(url: str, *, max_connections: int = 8, **kwargs: Any) -> HttpPool:
        pool = HttpPool(Endpoint.from_url(url, **kwargs), max_connections=max_connections)
        made.append(pool)
        return pool

    yield make
    for pool in made:
        await pool.close()


@pytest.fixture
def feed(monkeypatch: pytest.MonkeyPatch) -> Feed:
    """Records every delivery to the client's connections (and lets servers wait for one)."""
    recorder = Feed()
    original = transport._Connection.data_received

    def data_received(self: transport._Connection, data: bytes) -> None:
        recorder.record(data)
        original(self, data)

    monkeypatch.setattr(transport._Connection, "data_received", data_received)
    return recorder


@pytest.fixture(scope="module")
def pki() -> Pki:
    """A CA and a server certificate for 127.0.0.1 and extender.test."""
    return make_pki()


@pytest.fixture
def server_tls(pki: Pki, tmp_path: Path) -> ssl.SSLContext:
    return pki.server_context(tmp_path)


@pytest.fixture
def trusting(pki: Pki) -> ssl.SSLContext:
    """A client context that trusts the test CA (and nothing else)."""
    return ssl.create_default_context(cadata=pki.ca.decode())


async def get(pool: HttpPool, target: str = "/", method: str = "GET", body: bytes | None = None) -> Response:
    async with asyncio.timeout(5):
        return await pool.request(method, target, [], body)


def basic(userinfo: str) -> str:
    return "Basic " + base64.b64encode(userinfo.encode()).decode()


# ---------------------------------------------------------------------------- framing

CHUNKED_ANSWER = (
    CHUNKED_HEAD
    + chunk(b"hello", b";name=value")
    + chunk(b", world")
    + b"0\r\nX-Trailer: yes\r\nX-Other: 1\r\n\r\n"
)

# Split the chunked answer right after the first occurrence of each of these.
AWKWARD_SPLITS = {
    "inside the status line": b"HTTP/1.",
    "head end after CR": b"json\r",
    "head end after CRLF": b"json\r\n",
    "head end after CRLF CR": b"json\r\n\r",
    "chunk size before its extension": b"\r\n\r\n5",
    "inside the chunk extension": b"5;na",
    "chunk size line mid-CRLF": b"5;name=value\r",
    "inside chunk data": b"hel",
    "chunk data before its CRLF": b"hello",
    "chunk data mid-CRLF": b"hello\r",
    "last chunk mid-CRLF": b"world\r\n0\r",
    "inside a trailer": b"X-Trai",
    "between trailers": b"yes\r\n",
    "final CRLF split": b"X-Other: 1\r\n\r",
}


@pytest.mark.parametrize("prefix", list(AWKWARD_SPLITS.values()), ids=list(AWKWARD_SPLITS))
async def test_a_chunked_answer_split_at_an_awkward_point_is_read_whole(
    serve: Serve, pools: Pools, feed: Feed, prefix: bytes
) -> None:
    at = CHUNKED_ANSWER.index(prefix) + len(prefix)
    server = await serve(answers([CHUNKED_ANSWER[:at], CHUNKED_ANSWER[at:]], ok(b"next"), feed=feed))
    pool = pools(server.url)

    response = await get(pool)

    assert at in feed.boundaries()  # the client really saw the answer in two parts
    assert (response.status, response.body) == (200, b"hello, world")
    assert response.headers["content-type"] == "application/json"
    assert "x-trailer" not in response.headers  # trailers are read and dropped
    # the trailers were consumed to the last CRLF: the connection carries the next answer
    assert (await get(pool)).body == b"next"
    assert server.connections == 1


BYTE_BY_BYTE = {
    "content-length": ok(b'{"kind":"Pod"}', "Content-Type: application/json"),
    "chunked with extensions and trailers": CHUNKED_ANSWER,
    "close-delimited": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the server closes",
}


@pytest.mark.parametrize("framing", list(BYTE_BY_BYTE))
async def test_an_answer_arriving_one_byte_at_a_time_is_read_whole(
    serve: Serve, pools: Pools, feed: Feed, framing: str
) -> None:
    answer = BYTE_BY_BYTE[framing]
    pieces: list[Any] = [answer[i : i + 1] for i in range(len(answer))]
    close_delimited = framing == "close-delimited"
    if close_delimited:
        pieces.append(HANG_UP)
    server = await serve(answers(pieces, ok(b"next"), feed=feed))
    pool = pools(server.url)

    response = await get(pool)

    assert feed.boundaries() >= set(range(1, len(answer) + 1))  # every byte on its own
    expected = {
        "content-length": b'{"kind":"Pod"}',
        "chunked with extensions and trailers": b"hello, world",
        "close-delimited": b"until the server closes",
    }[framing]
    assert (response.status, response.body) == (200, expected)
    assert (await get(pool)).body == b"next"
    # a close-delimited body ends the connection; the others keep it
    assert server.connections == (2 if close_delimited else 1)


async def test_a_close_delimited_body_is_read_to_the_close_and_its_connection_is_not_reused(
    serve: Serve, pools: Pools
) -> None:
    body = b"x" * 300_000  # several reads
    server = await serve(answers([b"HTTP/1.1 200 OK\r\n\r\n" + body, HANG_UP], ok(b"next")))
    pool = pools(server.url)

    assert (await get(pool)).body == body
    assert (await get(pool)).body == b"next"
    assert [seen.connection for seen in server.seen] == [0, 1]


@pytest.mark.parametrize(
    ("answer", "reused"),
    [
        (ok(b"a", "Connection: close"), False),
        (ok(b"a", "Connection: Close"), False),
        (ok(b"a", version="HTTP/1.0"), False),
        (ok(b"a", "Connection: keep-alive", version="HTTP/1.0"), True),
        (ok(b"a", "Connection: keep-alive"), True),
    ],
    ids=["connection close", "Connection: Close", "HTTP/1.0", "HTTP/1.0 keep-alive", "HTTP/1.1 keep-alive"],
)
async def test_a_connection_is_reused_only_when_the_answer_allows_it(
    serve: Serve, pools: Pools, answer: bytes, reused: bool
) -> None:
    # the server keeps every connection open: only the client decides whether to reuse it
    server = await serve(answers(answer, ok(b"b")))
    pool = pools(server.url)

    assert (await get(pool)).body == b"a"
    if not reused:  # the client closed the connection it will not reuse
        await until(server.peers[0].ended.is_set)
    assert (await get(pool)).body == b"b"
    assert server.connections == (1 if reused else 2)


@pytest.mark.parametrize(
    ("method", "answer", "status"),
    [
        ("GET", b"HTTP/1.1 204 No Content\r\n\r\n", 204),
        ("DELETE", b"HTTP/1.1 204 No Content\r\nContent-Length: 12\r\n\r\n", 204),
        ("GET", b"HTTP/1.1 304 Not Modified\r\nETag: x\r\nContent-Length: 40\r\n\r\n", 304),
        ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n", 200),
        ("HEAD", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 200),
    ],
    ids=["204 without headers", "204 with a length", "304 with a length", "HEAD", "HEAD chunked"],
)
async def test_answers_without_a_body_end_at_their_head(
    serve: Serve, pools: Pools, method: str, answer: bytes, status: int
) -> None:
    # the next answer is written only when the next request comes: reading a body would hang
    server = await serve(answers(answer, ok(b"next")))
    pool = pools(server.url)

    response = await get(pool, method=method)

    assert (response.status, response.body) == (status, b"")
    assert (await get(pool)).body == b"next"
    assert server.connections == 1


@pytest.mark.parametrize(
    "interim",
    [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"],
    ids=["100 without headers", "103 with a header"],
)
async def test_an_interim_answer_is_skipped(serve: Serve, pools: Pools, feed: Feed, interim: bytes) -> None:
    server = await serve(answers([interim, ok(b"final", "X-Final: 1")], ok(b"next"), feed=feed))
    pool = pools(server.url)

    response = await get(pool, method="POST", body=b"{}")

    assert (response.status, response.body) == (200, b"final")
    assert response.headers["x-final"] == "1" and "link" not in response.headers
    assert (await get(pool)).body == b"next"


MALFORMED = {
    "HTTP/2 status line": b"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n",
    "not HTTP": b"ICY 200 OK\r\nContent-Length: 0\r\n\r\n",
    "no status code": b"HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n",
    "four-digit status": b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    "non-ASCII digit in the status": b"HTTP/1.1 2\xb20 OK\r\nContent-Length: 0\r\n\r\n",
    "header line without a colon": b"HTTP/1.1 200 OK\r\nContent-Length 0\r\n\r\n",
    "bad Content-Length": b"HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n",
    "non-ASCII digit in Content-Length": b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n",
    "chunk size not hex": CHUNKED_HEAD + b"zz\r\nhello\r\n" + LAST_CHUNK,
    "empty chunk size": CHUNKED_HEAD + b"\r\nhello\r\n" + LAST_CHUNK,
    "negative chunk size": CHUNKED_HEAD + b"-3\r\nabc\r\n" + LAST_CHUNK,
    "chunk size with a 0x prefix": CHUNKED_HEAD + b"0x5\r\nhello\r\n" + LAST_CHUNK,
    "chunk data longer than its size": CHUNKED_HEAD + b"5\r\nhello, world\r\n" + LAST_CHUNK,
}


async def test_a_gzip_answer_is_read_decompressed(serve: Serve, pools: Pools) -> None:
    server = await serve(answers(ok(gzip.compress(b'{"items":[]}'), "Content-Encoding: gzip")))
    assert (await get(pools(server.url))).body == b'{"items":[]}'


@pytest.mark.parametrize(
    ("encoding", "body", "message"),
    [
        ("br", b"x", "Content-Encoding 'br', which was not asked for"),
        ("gzip", b"not gzip", "does not decompress"),
    ],
)
async def test_an_answer_encoded_otherwise_raises_protocol_error(
    serve: Serve, pools: Pools, encoding: str, body: bytes, message: str
) -> None:
    server = await serve(answers(ok(body, f"Content-Encoding: {encoding}")))
    with pytest.raises(ProtocolError, match=re.escape(message)):
        await get(pools(server.url))


@pytest.mark.parametrize("answer", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_a_malformed_answer_raises_protocol_error_and_its_connection_is_dropped(
    serve: Serve, pools: Pools, answer: bytes
) -> None:
    server = await serve(answers(answer, ok(b"next")))
    pool = pools(server.url)

    with pytest.raises(ProtocolError):
        await get(pool)

    await until(server.peers[0].ended.is_set)  # the client closed it
    assert (await get(pool)).body == b"next"
    assert server.connections == 2


@pytest.mark.parametrize("terminated", [False, True], ids=["still coming", "complete in one write"])
async def test_an_oversize_head_raises_protocol_error(
    serve: Serve, pools: Pools, monkeypatch: pytest.MonkeyPatch, terminated: bool
) -> None:
    monkeypatch.setattr(transport, "MAX_HEAD", 1024)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Filler: " + b"f" * 4000
    server = await serve(answers(head + b"\r\n\r\n" if terminated else head))
    pool = pools(server.url)

    with pytest.raises(ProtocolError, match="exceeds 1024 bytes"):
        await get(pool)
    await until(server.peers[0].ended.is_set)


async def test_an_endless_chunk_size_line_raises_protocol_error(
    serve: Serve, pools: Pools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "MAX_HEAD", 1024)
    server = await serve(answers(CHUNKED_HEAD + b"5;" + b"e" * 4000))
    pool = pools(server.url)

    with pytest.raises(ProtocolError, match="chunk size line"):
        await get(pool)


async def test_a_body_cut_short_by_the_server_raises_connection_broke(serve: Serve, pools: Pools) -> None:
    server = await serve(answers([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", HANG_UP]))
    pool = pools(server.url)

    with pytest.raises(ConnectionBroke):
        await get(pool)


@pytest.mark.parametrize("reader", ["request", "watch"])
async def test_a_reset_cuts_a_close_delimited_body_short_with_connection_broke(
    serve: Serve, pools: Pools, feed: Feed, reader: str
) -> None:
    partial = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + b'{"n":1}\n{"n":'

    async def reset_mid_body(peer: Peer) -> None:
        await peer.request()
        await peer.send(partial, feed=feed)  # received by the client, then
        peer.reset()

    server = await serve(reset_mid_body)
    pool = pools(server.url)

    with pytest.raises(ConnectionBroke, match="reset"):
        if reader == "request":
            await get(pool)
        else:
            stream = await pool.stream("GET", "/watch", [], connect_timeout=5)
            async with asyncio.timeout(5):
                assert [line async for line in stream.lines(read_timeout=5)] == [b'{"n":1}']
    assert server.connections == 1


# ---------------------------------------------------------------------------- the pool


async def test_sequential_requests_share_one_connection(serve: Serve, pools: Pools) -> None:
    server = await serve(answers(ok(b"1"), ok(b"2"), ok(b"3")))
    pool = pools(server.url)

    bodies = [(await get(pool, f"/r{i}", "POST", b'{"n":%d}' % i)).body for i in range(3)]

    assert bodies == [b"1", b"2", b"3"]
    assert server.connections == 1
    assert [(seen.target, seen.body) for seen in server.seen] == [
        (f"/r{i}", b'{"n":%d}' % i) for i in range(3)
    ]
    assert server.seen[0].headers["host"] == f"127.0.0.1:{server.port}"
    assert server.seen[0].headers["content-length"] == "7"


class Gated:
    """A server script holding each answer until its gate opens; counts requests in flight."""

    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.everything = asyncio.Event()  # opens every gate
        self.in_flight = 0
        self.most_in_flight = 0

    def gate(self, target: str) -> asyncio.Event:
        return self.gates.setdefault(target, asyncio.Event())

    async def __call__(self, peer: Peer) -> None:
        while (seen := await peer.request()) is not None:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            gate = asyncio.ensure_future(self.gate(seen.target).wait())
            everything = asyncio.ensure_future(self.everything.wait())
            await asyncio.wait([gate, everything], return_when=asyncio.FIRST_COMPLETED)
            gate.cancel()
            everything.cancel()
            self.in_flight -= 1
            await peer.send(ok(seen.target.encode()))


async def test_the_idle_connection_used_last_is_reused_first(serve: Serve, pools: Pools) -> None:
    script = Gated()
    server = await serve(script)
    pool = pools(server.url)
    first = asyncio.create_task(get(pool, "/first"))
    second = asyncio.create_task(get(pool, "/second"))
    await until(lambda: len(server.seen) == 2)
    connection_of = {seen.target: seen.connection for seen in server.seen}

    script.gate("/second").set()
    await second
    script.gate("/first").set()
    await first  # back in the pool after /second's connection
    script.everything.set()
    await get(pool, "/third")

    assert server.seen[-1].connection == connection_of["/first"] != connection_of["/second"]
    assert server.connections == 2


async def test_dropped_connections_close_now_when_idle_or_streaming_and_after_their_answer_when_busy(
    serve: Serve, pools: Pools
) -> None:
    script = Gated()
    server = await serve(script)
    pool = pools(server.url)
    busy = asyncio.create_task(get(pool, "/busy"))  # its answer held back
    idle = asyncio.create_task(get(pool, "/idle"))
    await until(lambda: len(server.seen) == 2)
    connection_of = {seen.target: seen.connection for seen in server.seen}
    script.gate("/idle").set()
    await idle  # its connection back in the pool
    watch_server = await serve(answers([CHUNKED_HEAD + chunk(b'{"n":1}\n')]))
    watches = pools(watch_server.url)
    stream = await watches.stream("GET", "/watch", [], connect_timeout=5)
    lines = stream.lines(read_timeout=5)
    assert await anext(lines) == b'{"n":1}'

    pool.drop_connections()
    watches.drop_connections()
    with pytest.raises(ConnectionBroke):  # the watch ends: its informer would watch anew
        await asyncio.wait_for(anext(lines), 5)
    await until(server.peers[connection_of["/idle"]].ended.is_set)  # the idle one, closed at once
    assert not server.peers[connection_of["/busy"]].ended.is_set()  # the busy one finishes its request
    script.everything.set()
    assert (await busy).body == b"/busy"
    await get(pool, "/after")

    assert server.seen[-1].connection == 2  # neither old one is reused


async def test_no_more_than_max_connections_are_open_and_every_request_completes(
    serve: Serve, pools: Pools
) -> None:
    script = Gated()
    server = await serve(script)
    pool = pools(server.url, max_connections=2)

    requests = [asyncio.create_task(get(pool, f"/{i}")) for i in range(7)]
    await until(lambda: script.in_flight == 2)
    script.everything.set()
    bodies = await asyncio.gather(*requests)

    assert [response.body for response in bodies] == [f"/{i}".encode() for i in range(7)]
    assert server.connections == 2  # the 5 others waited for those two
    assert script.most_in_flight == 2
    assert len(server.seen) == 7


async def test_a_cancelled_waiter_leaves_the_queue_and_the_next_one_proceeds(
    serve: Serve, pools: Pools
) -> None:
    script = Gated()
    server = await serve(script)
    pool = pools(server.url, max_connections=1)
    holder = asyncio.create_task(get(pool, "/holder"))
    await until(lambda: script.in_flight == 1)
    cancelled = asyncio.create_task(get(pool, "/cancelled"))
    waiting = asyncio.create_task(get(pool, "/waiting"))
    await until(lambda: len(pool._waiters) == 2)

    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert len(pool._waiters) == 1  # it left the queue
    script.everything.set()

    assert (await holder).body == b"/holder"
    assert (await asyncio.wait_for(waiting, 2)).body == b"/waiting"
    assert [seen.target for seen in server.seen] == ["/holder", "/waiting"]


async def test_a_waiter_cancelled_after_its_wake_up_passes_the_turn_on(serve: Serve, pools: Pools) -> None:
    script = Gated()
    server = await serve(script)
    pool = pools(server.url, max_connections=1)
    # awaited in this task: nothing runs between the holder's release and the next line here
    holder = pool.request("GET", "/holder", [], None)
    woken = asyncio.create_task(get(pool, "/woken"))
    waiting = asyncio.create_task(get(pool, "/waiting"))

    async def open_when_both_wait() -> None:
        await until(lambda: len(pool._waiters) == 2)
        script.everything.set()

    opener = asyncio.create_task(open_when_both_wait())
    assert (await holder).body == b"/holder"
    # the holder's release woke /woken, which has not run yet: it is cancelled holding the turn
    assert len(pool._waiters) == 1 and not woken.done()
    woken.cancel()

    with pytest.raises(asyncio.CancelledError):
        await woken
    assert (await asyncio.wait_for(waiting, 2)).body == b"/waiting"
    await opener
    assert server.connections == 1


async def test_a_request_cancelled_mid_answer_closes_its_connection_and_frees_its_slot(
    serve: Serve, pools: Pools, feed: Feed
) -> None:
    partial = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"
    server = await serve(answers(partial, ok(b"next")))
    pool = pools(server.url, max_connections=1)

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await pool.request("GET", "/slow", [], None)

    assert feed.total == len(partial)  # it was cancelled inside the body
    await until(server.peers[0].ended.is_set)  # and closed the connection
    assert (await get(pool)).body == b"next"  # the only slot is free again
    assert server.connections == 2


async def break_every_second_request(peer: Peer) -> None:
    """Answer the first request of a connection; close it under the second, unanswered."""
    if await peer.request() is not None:
        await peer.send(ok(b'{"kind":"Status","code":200}', "Content-Type: application/json"))
        await peer.request()


async def test_a_pooled_connection_closed_under_a_request_raises_connection_broke(
    serve: Serve, pools: Pools
) -> None:
    server = await serve(break_every_second_request)
    pool = pools(server.url)
    await get(pool, "/first")

    with pytest.raises(ConnectionBroke):
        await get(pool, "/second")  # sent over the pooled connection, which the server closes

    assert (await get(pool, "/third")).status == 200  # on a new connection
    assert [(seen.target, seen.connection) for seen in server.seen] == [
        ("/first", 0),
        ("/second", 0),
        ("/third", 1),
    ]


async def test_an_idle_connection_the_server_closed_is_not_reused(serve: Serve, pools: Pools) -> None:
    server = await serve(answers([ok(b"first"), HANG_UP], ok(b"second")))  # keep-alive, then closed
    pool = pools(server.url)
    assert (await get(pool)).body == b"first"
    await until(lambda: all(not conn.usable for conn in pool._idle))  # the client has seen the close

    assert (await get(pool)).body == b"second"  # no error: a new connection
    assert server.connections == 2


async def test_kube_client_resends_a_read_broken_under_it_once_on_a_new_connection(
    serve: Serve, client_for: Callable[..., Awaitable[Any]]
) -> None:
    server = await serve(break_every_second_request)
    async with await client_for(server.url, qps=0, timeout=5) as client:
        assert (await client.request("GET", "/api/v1/nodes")).status == 200
        assert (await client.request("GET", "/api/v1/pods")).status == 200
        with pytest.raises(TransportError):  # a write the server received is never sent twice
            await client.request("POST", "/api/v1/pods", {"kind": "Pod"})

    assert [(seen.method, seen.connection) for seen in server.seen] == [
        ("GET", 0),
        ("GET", 0),
        ("GET", 1),
        ("POST", 1),
    ]


async def test_kube_client_gives_up_when_the_new_connection_breaks_too(
    serve: Serve, client_for: Callable[..., Awaitable[Any]]
) -> None:
    async def never_answer(peer: Peer) -> None:
        await peer.request()

    server = await serve(never_answer)
    async with await client_for(server.url, qps=0, timeout=5) as client:
        with pytest.raises(TransportError, match="closed the connection"):
            await client.request("GET", "/api/v1/nodes")

    assert server.connections == 2  # one retry, no more


async def test_a_closed_pool_refuses_requests_and_wakes_its_waiters(serve: Serve, pools: Pools) -> None:
    script = Gated()
    server = await serve(script)
    pool = pools(server.url, max_connections=1)
    holder = asyncio.create_task(get(pool, "/holder"))
    await until(lambda: script.in_flight == 1)
    waiter = asyncio.create_task(get(pool, "/waiter"))
    await until(lambda: len(pool._waiters) == 1)

    await pool.close()

    with pytest.raises(ConnectError, match="closed"):
        await waiter
    script.everything.set()
    assert (await holder).body == b"/holder"  # a request in flight still gets its answer
    await until(server.peers[0].ended.is_set)  # but its connection is not kept
    with pytest.raises(ConnectError, match="closed"):
        await get(pool)


async def test_a_refused_connection_raises_connect_error_naming_the_address(pools: Pools) -> None:
    port = free_port()
    pool = pools(f"http://127.0.0.1:{port}")

    with pytest.raises(ConnectError, match=re.escape(f"127.0.0.1:{port}")):
        await get(pool)


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent(
    serve: Serve, pools: Pools
) -> None:
    server = await serve(answers())
    pool = pools(server.url)

    with pytest.raises(ValueError, match="X-Bad"):
        await pool.request("GET", "/", [("X-Bad", "a\r\nX-Injected: 1")], None)
    assert server.connections == 0


# ---------------------------------------------------------------------------- watches


def watch_pieces(framing: str, chunks: list[bytes]) -> list[Any]:
    if framing == "chunked":
        return [CHUNKED_HEAD, *(chunk(data) for data in chunks), LAST_CHUNK]
    if framing == "content-length":
        length = sum(map(len, chunks))
        return [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % length, *chunks]
    return [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n", *chunks, HANG_UP]


@pytest.mark.parametrize("framing", ["chunked", "content-length", "close-delimited"])
async def test_a_watch_yields_each_line_whatever_the_chunks(
    serve: Serve, pools: Pools, feed: Feed, framing: str
) -> None:
    chunks = [
        b'{"type":"ADDED",',  # a line split across chunks
        b'"n":1}\n{"n":2}\n{"n"',  # the end of one, a whole one, the start of another
        b":3}\r\n\n\n",  # CRLF, and empty lines (skipped)
        b'{"n":4}',  # the last line has no newline
    ]
    server = await serve(answers(watch_pieces(framing, chunks), feed=feed))
    pool = pools(server.url)

    stream = await pool.stream("GET", "/watch", [], connect_timeout=5)
    async with asyncio.timeout(5):
        lines = [line async for line in stream.lines(read_timeout=5)]
    stream.close()

    assert stream.status == 200
    assert lines == [b'{"type":"ADDED","n":1}', b'{"n":2}', b'{"n":3}', b'{"n":4}']
    assert server.seen[0].target == "/watch"


async def test_a_watch_times_out_when_the_server_goes_silent(serve: Serve, pools: Pools) -> None:
    async def one_event_then_silence(peer: Peer) -> None:
        await peer.request()
        await peer.send(CHUNKED_HEAD + chunk(b'{"n":1}\n'))
        await peer.request()  # silent until the client gives up

    server = await serve(one_event_then_silence)
    pool = pools(server.url)
    stream = await pool.stream("GET", "/watch", [], connect_timeout=5)
    lines = stream.lines(read_timeout=0.2)
    assert await anext(lines) == b'{"n":1}'
    loop = asyncio.get_running_loop()
    start = loop.time()

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(lines), 3)  # a bound of the test's own, should read_timeout fail

    assert 0.15 < loop.time() - start < 2
    stream.close()
    await until(server.peers[0].ended.is_set)


async def test_the_read_timeout_bounds_each_silence_not_the_whole_watch(serve: Serve, pools: Pools) -> None:
    async def paced(peer: Peer) -> None:
        await peer.request()
        await peer.send(CHUNKED_HEAD)
        for n in range(6):
            await asyncio.sleep(0.06)  # the pace of the events, well inside the read timeout
            await peer.send(chunk(b'{"n":%d}\n' % n))
        await peer.send(LAST_CHUNK)

    server = await serve(paced)
    pool = pools(server.url)
    loop = asyncio.get_running_loop()
    start = loop.time()
    stream = await pool.stream("GET", "/watch", [], connect_timeout=5)

    lines = [line async for line in stream.lines(read_timeout=0.25)]

    assert lines == [b'{"n":%d}' % n for n in range(6)]
    assert loop.time() - start > 0.3  # longer in all than one read timeout
    stream.close()
    assert server.connections == 1


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
async def test_a_watch_answered_with_an_error_is_read_whole_with_read_all(
    serve: Serve, pools: Pools, framing: str
) -> None:
    body = b'{"kind":"Status","code":410,"reason":"Expired"}'
    head = b"HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\n"
    if framing == "chunked":
        answer = (
            head + b"Transfer-Encoding: chunked\r\n\r\n" + chunk(body[:10]) + chunk(body[10:]) + LAST_CHUNK
        )
    else:
        answer = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    server = await serve(answers(answer))
    pool = pools(server.url)

    stream = await pool.stream("GET", "/watch", [], connect_timeout=5)
    assert (stream.status, stream.headers["content-type"]) == (410, "application/json")
    assert await stream.read_all() == body

    await until(server.peers[0].ended.is_set)  # read_all closed the watch's connection


async def test_a_watch_whose_head_never_comes_times_out_and_is_dropped(serve: Serve, pools: Pools) -> None:
    async def never_answer(peer: Peer) -> None:
        await peer.request()
        await peer.request()

    server = await serve(never_answer)
    pool = pools(server.url)

    with pytest.raises(TimeoutError):
        await pool.stream("GET", "/watch", [], connect_timeout=0.2)
    await until(server.peers[0].ended.is_set)


async def test_a_slow_watch_reader_pauses_the_socket_and_still_gets_every_line_in_order(
    serve: Serve, pools: Pools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "HIGH_WATER", 16 * 1024)
    events = [b'{"n":%d,"pad":"%s"}' % (n, b"p" * 100) for n in range(3000)]  # ~350 kB
    body = b"".join(chunk(b"".join(line + b"\n" for line in events[i : i + 50])) for i in range(0, 3000, 50))
    server = await serve(answers(CHUNKED_HEAD + body + LAST_CHUNK))
    pool = pools(server.url)
    stream = await pool.stream("GET", "/watch", [], connect_timeout=5)
    conn_transport = stream._conn.transport
    assert conn_transport is not None
    lines = stream.lines(read_timeout=5)

    first = await anext(lines)  # then the reader dawdles while the server keeps writing
    await until(lambda: not conn_transport.is_reading())
    assert transport.HIGH_WATER < len(stream._conn.buffer) < len(body)

    async with asyncio.timeout(5):
        rest = [line async for line in lines]
    assert [first, *rest] == events
    stream.close()


# ---------------------------------------------------------------------------- TLS


async def test_https_to_a_trusted_certificate_keeps_the_connection_alive(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext, trusting: ssl.SSLContext
) -> None:
    close_delimited = [b"HTTP/1.1 200 OK\r\n\r\nto the close", HANG_UP]
    server = await serve(answers(ok(b"one"), CHUNKED_ANSWER, close_delimited, ok(b"new")), tls=server_tls)
    pool = pools(server.url, tls=trusting)

    assert (await get(pool)).body == b"one"
    assert (await get(pool)).body == b"hello, world"
    assert server.connections == 1
    assert server.seen[0].headers["host"] == f"127.0.0.1:{server.port}"
    assert (await get(pool)).body == b"to the close"  # TLS's close ends the body
    assert (await get(pool)).body == b"new"
    assert server.connections == 2


async def test_a_watch_over_https_yields_its_lines(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext, trusting: ssl.SSLContext
) -> None:
    server = await serve(answers(watch_pieces("chunked", [b'{"n":1}\n{"n', b'":2}\n'])), tls=server_tls)
    pool = pools(server.url, tls=trusting)

    stream = await pool.stream("GET", "/watch", [], connect_timeout=5)
    assert [line async for line in stream.lines(read_timeout=5)] == [b'{"n":1}', b'{"n":2}']
    stream.close()


@pytest.mark.parametrize(("name", "verified"), [("extender.test", True), ("other.test", False)])
async def test_server_hostname_names_what_tls_verifies(
    serve: Serve,
    pools: Pools,
    server_tls: ssl.SSLContext,
    trusting: ssl.SSLContext,
    name: str,
    verified: bool,
) -> None:
    # the certificate is for 127.0.0.1 and extender.test: other.test fails only if it is the name checked
    server = await serve(answers(ok(b"verified")), tls=server_tls)
    pool = pools(server.url, tls=trusting, server_hostname=name)

    if verified:
        assert (await get(pool)).body == b"verified"
        assert server.seen[0].headers["host"] == f"127.0.0.1:{server.port}"  # Host still names the host
    else:
        with pytest.raises(ConnectError, match=r"SSLCertVerificationError.*other\.test"):
            await get(pool)
        assert server.seen == []


async def test_an_untrusted_certificate_raises_connect_error(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext
) -> None:
    server = await serve(answers(ok()), tls=server_tls)
    pool = pools(server.url)  # the default context: the system's CAs, not the test CA

    with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await get(pool)
    assert server.seen == []


# ---------------------------------------------------------------------------- proxies


async def test_https_through_an_environment_proxy_tunnels_with_connect_and_credentials(
    serve: Serve,
    pools: Pools,
    server_tls: ssl.SSLContext,
    trusting: ssl.SSLContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = await serve(answers(ok(b"through the tunnel"), ok(b"again")), tls=server_tls)
    # extender.test resolves nowhere: only the proxy can reach the API server by that name
    proxy = await serve(TunnelProxy(routes={"extender.test:443": ("127.0.0.1", api.port)}))
    monkeypatch.setenv("HTTPS_PROXY", f"http://scheduler:s%3Acr%40t@127.0.0.1:{proxy.port}")
    monkeypatch.setenv("HTTP_PROXY", "http://not-for-https.invalid:1")
    pool = pools("https://extender.test/prefix", tls=trusting)

    assert (await get(pool, pool.endpoint.target("/api/v1/pods", None))).body == b"through the tunnel"
    assert (await get(pool, "/again")).body == b"again"

    connect = proxy.seen[0]
    assert (connect.method, connect.target) == ("CONNECT", "extender.test:443")
    assert connect.headers["host"] == "extender.test:443"
    assert connect.headers["proxy-authorization"] == basic("scheduler:s:cr@t")
    assert (proxy.connections, api.connections, len(proxy.seen)) == (1, 1, 1)  # one tunnel, reused
    assert api.seen[0].target == "/prefix/api/v1/pods"  # origin form inside the tunnel
    assert api.seen[0].headers["host"] == "extender.test"
    assert "proxy-authorization" not in api.seen[0].headers  # the credentials are the proxy's


async def test_an_untrusted_certificate_behind_a_proxy_raises_connect_error(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext
) -> None:
    api = await serve(answers(ok()), tls=server_tls)
    proxy = await serve(TunnelProxy())
    pool = pools(api.url, proxy_url=f"http://127.0.0.1:{proxy.port}")

    with pytest.raises(ConnectError, match=r"through the proxy.*CERTIFICATE_VERIFY_FAILED"):
        await get(pool)
    assert proxy.seen[0].target == f"127.0.0.1:{api.port}"
    assert api.seen == []


async def test_plain_http_through_a_proxy_sends_the_absolute_form_and_credentials(
    serve: Serve, pools: Pools, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await serve(TunnelProxy())
    monkeypatch.setenv("http_proxy", f"http://user:pw@127.0.0.1:{proxy.port}")
    pool = pools("http://api.test:8080/base")

    target = pool.endpoint.target("/api/v1/pods", {"watch": "1"})
    response = await get(pool, target)
    await get(pool, pool.endpoint.target("/api/v1/nodes", None))

    assert response.body == b"proxied GET http://api.test:8080/base/api/v1/pods?watch=1"
    assert proxy.seen[0].headers["host"] == "api.test:8080"
    assert proxy.seen[0].headers["proxy-authorization"] == basic("user:pw")
    assert proxy.seen[1].target == "http://api.test:8080/base/api/v1/nodes"
    assert proxy.connections == 1


async def test_a_proxy_refusing_connect_raises_connect_error_naming_the_status(
    serve: Serve, pools: Pools, trusting: ssl.SSLContext
) -> None:
    refusal = (
        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
        b"Proxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n"
    )
    proxy = await serve(TunnelProxy(refuse=refusal))
    pool = pools("https://127.0.0.1:6443", tls=trusting, proxy_url=f"http://127.0.0.1:{proxy.port}")

    with pytest.raises(ConnectError, match=re.escape("refused CONNECT 127.0.0.1:6443: 407")):
        await get(pool)
    assert "proxy-authorization" not in proxy.seen[0].headers  # the URL had no credentials
    await until(proxy.peers[0].ended.is_set)


async def test_https_through_a_socks5_proxy_logs_in_and_names_the_host(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext, trusting: ssl.SSLContext
) -> None:
    api = await serve(answers(ok(b"through socks"), ok(b"again")), tls=server_tls)
    socks = SocksProxy(routes={"extender.test:443": ("127.0.0.1", api.port)}, credentials=(b"me", b"pa:ss"))
    proxy = await serve(socks)
    pool = pools(
        "https://extender.test", tls=trusting, proxy_url=f"socks5://me:pa%3Ass@127.0.0.1:{proxy.port}"
    )

    assert (await get(pool, "/api/v1/pods")).body == b"through socks"
    assert (await get(pool, "/again")).body == b"again"

    assert socks.asked == [(3, "extender.test", 443)]  # by name, for the proxy to resolve
    assert socks.logins == [(b"me", b"pa:ss")]
    assert (proxy.connections, api.connections) == (1, 1)  # one tunnel, reused
    assert api.seen[0].target == "/api/v1/pods"
    assert api.seen[0].headers["host"] == "extender.test"


async def test_plain_http_through_an_environment_socks5_proxy_sends_the_origin_form(
    serve: Serve, pools: Pools, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = await serve(answers(ok(b"plain through socks")))
    socks = SocksProxy(routes={"api.test:8080": ("127.0.0.1", api.port)})
    proxy = await serve(socks)
    monkeypatch.setenv("HTTP_PROXY", f"socks5h://127.0.0.1:{proxy.port}")
    pool = pools("http://api.test:8080/base")

    assert (await get(pool, pool.endpoint.target("/api/v1/pods", None))).body == b"plain through socks"
    assert socks.asked == [(3, "api.test", 8080)]
    assert api.seen[0].target == "/base/api/v1/pods"
    assert "proxy-authorization" not in api.seen[0].headers


async def test_a_socks5_proxy_gets_an_address_as_an_address(serve: Serve, pools: Pools) -> None:
    api = await serve(answers(ok()))
    socks = SocksProxy()
    proxy = await serve(socks)
    pool = pools(api.url, proxy_url=f"socks5://127.0.0.1:{proxy.port}")  # proxy-url: even for loopback

    assert (await get(pool)).status == 200
    assert socks.asked == [(1, "127.0.0.1", api.port)]


@pytest.mark.parametrize(
    ("socks", "userinfo", "message"),
    [
        (SocksProxy(reply=5), "", "could not connect to extender.test:443: connection refused"),
        (SocksProxy(reply=2), "", "connection not allowed by ruleset"),
        (SocksProxy(credentials=(b"me", b"right")), "me:wrong@", "refused the username and password"),
        (SocksProxy(credentials=(b"me", b"right")), "", "accepts none of the methods offered"),
    ],
)
async def test_a_socks5_proxy_that_refuses_raises_connect_error_saying_why(
    serve: Serve, pools: Pools, trusting: ssl.SSLContext, socks: SocksProxy, userinfo: str, message: str
) -> None:
    proxy = await serve(socks)
    pool = pools(
        "https://extender.test", tls=trusting, proxy_url=f"socks5://{userinfo}127.0.0.1:{proxy.port}"
    )

    with pytest.raises(ConnectError, match=re.escape(f"socks5 proxy 127.0.0.1:{proxy.port}")) as raised:
        await get(pool)
    assert message in str(raised.value)


async def test_https_through_an_https_proxy_is_tls_inside_tls(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext, trusting: ssl.SSLContext
) -> None:
    api = await serve(answers(ok(b"tls in tls"), ok(b"again")), tls=server_tls)
    # the proxy's certificate is checked as the API server's is: the same CA here
    proxy = await serve(TunnelProxy(routes={"extender.test:443": ("127.0.0.1", api.port)}), tls=server_tls)
    pool = pools("https://extender.test", tls=trusting, proxy_url=f"https://me:pw@127.0.0.1:{proxy.port}")

    assert (await get(pool, "/api/v1/pods")).body == b"tls in tls"
    assert (await get(pool, "/again")).body == b"again"

    connect = proxy.seen[0]
    assert (connect.method, connect.target) == ("CONNECT", "extender.test:443")
    assert connect.headers["proxy-authorization"] == basic("me:pw")
    assert (proxy.connections, api.connections, len(proxy.seen)) == (1, 1, 1)
    assert api.seen[0].target == "/api/v1/pods"


async def test_an_https_proxy_with_an_untrusted_certificate_raises_connect_error(
    serve: Serve, pools: Pools, server_tls: ssl.SSLContext
) -> None:
    proxy = await serve(TunnelProxy(), tls=server_tls)
    # plain http to the API server: the proxy is checked against the system's roots, as in Go
    pool = pools("http://api.test:8080", proxy_url=f"https://127.0.0.1:{proxy.port}")

    with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await get(pool)
    assert proxy.seen == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://proxy.corp:3128", Proxy("http", "proxy.corp", 3128)),
        ("proxy.corp:8080", Proxy("http", "proxy.corp", 8080)),
        ("http://proxy.corp", Proxy("http", "proxy.corp", 80)),
        ("http://user:p%40ss%3Aword@proxy.corp:3128", Proxy("http", "proxy.corp", 3128, "user", "p@ss:word")),
        ("http://user@proxy.corp:3128", Proxy("http", "proxy.corp", 3128, "user", "")),
        ("http://[fd00::1]:3128", Proxy("http", "fd00::1", 3128)),
        ("https://proxy.corp", Proxy("https", "proxy.corp", 443)),
        ("socks5://proxy.corp", Proxy("socks5", "proxy.corp", 1080)),
        ("SOCKS5H://u:p@proxy.corp:1081", Proxy("socks5h", "proxy.corp", 1081, "u", "p")),
    ],
)
def test_proxy_parse_reads_scheme_host_port_and_credentials(url: str, expected: Proxy) -> None:
    assert Proxy.parse(url) == expected


def test_only_an_http_proxy_is_sent_basic_credentials() -> None:
    assert Proxy.parse("https://user:pw@proxy.corp").authorization == basic("user:pw")
    assert Proxy.parse("http://proxy.corp").authorization is None
    assert Proxy.parse("socks5://user:pw@proxy.corp").authorization is None  # SOCKS5 logs in itself


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("socks4://proxy.corp:1080", "must be http, https, socks5 or socks5h"),
        ("ftp://proxy.corp:3128", "must be http, https, socks5 or socks5h"),
        ("http://:3128", "names no host"),
        ("http://proxy.corp:99999", "port is not a number"),
    ],
)
def test_proxy_parse_refuses_what_it_cannot_use(url: str, message: str) -> None:
    with pytest.raises(ProxyError, match=message):
        Proxy.parse(url)


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy"])
def test_an_unusable_environment_proxy_is_refused_naming_the_variable(
    clean_env: None, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "socks4://proxy.corp:1080")
    with pytest.raises(ProxyError, match=re.escape(f"${variable}: proxy 'socks4://proxy.corp:1080'")):
        Endpoint.from_url("https://api.example.com")


def test_the_environment_proxy_is_chosen_by_scheme(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://secure.corp:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://plain.corp:3128")
    assert environment_proxy("https", "api.example.com", 443) == "http://secure.corp:3128"
    assert environment_proxy("http", "api.example.com", 80) == "http://plain.corp:3128"

    monkeypatch.delenv("HTTPS_PROXY")  # like client-go: https does not fall back to HTTP_PROXY
    assert environment_proxy("https", "api.example.com", 443) is None


def test_lower_case_proxy_variables_count_too(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://secure.corp:3128")
    monkeypatch.setenv("no_proxy", "internal.corp")
    assert environment_proxy("https", "api.example.com", 443) == "http://secure.corp:3128"
    assert environment_proxy("https", "api.internal.corp", 443) is None
    assert environment_proxy("http", "api.example.com", 80) is None


@pytest.mark.parametrize(
    ("no_proxy", "bypassed"),
    [
        ("api.example.com", True),  # the exact host
        ("example.com", True),  # a domain suffix
        (".example.com", True),
        ("other.org, example.com", True),  # one of a list
        ("*", True),
        ("API.EXAMPLE.COM", True),
        ("ample.com", False),  # a suffix of the name, not of a domain
        ("api.example.com.evil", False),
        ("other.org", False),
        ("", False),
        (".api.example.com", False),  # a leading dot: subdomains only
        ("*.example.com", True),
        ("api.example.com:443", True),  # the port the request goes to
        ("api.example.com:6443", False),
    ],
)
def test_no_proxy_names_hosts_and_domains_reached_directly(
    clean_env: None, monkeypatch: pytest.MonkeyPatch, no_proxy: str, bypassed: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://secure.corp:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert environment_proxy("https", "api.example.com", 443) == (
        None if bypassed else "http://secure.corp:3128"
    )


@pytest.mark.parametrize(
    ("no_proxy", "bypassed"),
    [
        ("10.0.0.0/8", True),  # a CIDR range, as clusters list their service network
        ("10.96.0.1", True),
        ("10.96.0.2", False),
        ("192.168.0.0/16", False),
        ("not-a-cidr/99", False),
    ],
)
def test_no_proxy_names_addresses_and_ranges(
    clean_env: None, monkeypatch: pytest.MonkeyPatch, no_proxy: str, bypassed: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://secure.corp:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert environment_proxy("https", "10.96.0.1", 443) == (None if bypassed else "http://secure.corp:3128")


def test_the_upper_case_variable_wins_and_an_empty_one_does_not_count(
    clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://upper.corp:3128")
    monkeypatch.setenv("https_proxy", "http://lower.corp:3128")
    assert environment_proxy("https", "api.example.com", 443) == "http://upper.corp:3128"
    monkeypatch.setenv("HTTPS_PROXY", "")
    assert environment_proxy("https", "api.example.com", 443) == "http://lower.corp:3128"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.4.5", "localhost", "kube.localhost", "::1"])
def test_loopback_is_never_proxied(clean_env: None, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, "http://proxy.corp:3128")
    assert environment_proxy("https", host, 443) is None
    assert environment_proxy("http", host, 80) is None
    url_host = f"[{host}]" if ":" in host else host
    assert Endpoint.from_url(f"https://{url_host}:6443").proxy is None


def test_endpoint_takes_the_environment_proxy_unless_one_is_given(
    clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env.corp:3128")
    assert Endpoint.from_url("https://api.example.com").proxy == Proxy("http", "env.corp", 3128)
    given = Endpoint.from_url("https://api.example.com", proxy_url="socks5://given.corp:1080")
    assert given.proxy == Proxy("socks5", "given.corp", 1080)


# ---------------------------------------------------------------------------- Endpoint


@pytest.mark.parametrize(
    ("path", "params", "target"),
    [
        ("/api/v1/pods", None, "/k8s/c-1/api/v1/pods"),
        ("/api/v1/namespaces/my ns/pods", None, "/k8s/c-1/api/v1/namespaces/my%20ns/pods"),
        ("/api/v1/namespaces/d/configmaps/a%2Fb", None, "/k8s/c-1/api/v1/namespaces/d/configmaps/a%2Fb"),
        ("/apis/x/v1/things/ä", None, "/k8s/c-1/apis/x/v1/things/%C3%A4"),
        ("/odd/a?b#c", None, "/k8s/c-1/odd/a%3Fb%23c"),
        ("/api/v1/pods/p:1@x", None, "/k8s/c-1/api/v1/pods/p:1@x"),
        (
            "/api/v1/pods",
            {"labelSelector": "app in (a,b)", "fieldSelector": "spec.nodeName=", "watch": "1"},
            "/k8s/c-1/api/v1/pods?labelSelector=app+in+%28a%2Cb%29&fieldSelector=spec.nodeName%3D&watch=1",
        ),
        ("/api/v1/pods", {}, "/k8s/c-1/api/v1/pods"),
    ],
)
def test_endpoint_target_keeps_the_base_path_and_percent_encodes(
    clean_env: None, path: str, params: dict[str, str] | None, target: str
) -> None:
    endpoint = Endpoint.from_url("https://api.example.com:6443/k8s/c-1/")
    assert endpoint.base_path == "/k8s/c-1"
    assert endpoint.target(path, params) == target


def test_the_target_is_in_absolute_form_only_for_plain_http_through_a_proxy(clean_env: None) -> None:
    proxy = "http://proxy.corp:3128"
    plain = Endpoint.from_url("http://api.example.com:8080/base", proxy_url=proxy)
    assert plain.target("/api", {"a": "b"}) == "http://api.example.com:8080/base/api?a=b"
    assert (
        Endpoint.from_url("https://api.example.com/base", proxy_url=proxy).target("/api", None) == "/base/api"
    )
    assert Endpoint.from_url("http://api.example.com/base").target("/api", None) == "/base/api"
    socks = Endpoint.from_url("http://api.example.com:8080/base", proxy_url="socks5://proxy.corp")
    assert socks.target("/api", None) == "/base/api"  # a SOCKS5 tunnel carries the origin form


@pytest.mark.parametrize(
    ("url", "port", "authority"),
    [
        ("https://api.example.com", 443, "api.example.com"),
        ("https://api.example.com:443", 443, "api.example.com"),
        ("https://api.example.com:6443", 6443, "api.example.com:6443"),
        ("http://api.example.com", 80, "api.example.com"),
        ("http://api.example.com:443", 443, "api.example.com:443"),
        ("https://[fd00::1]", 443, "[fd00::1]"),
        ("https://[fd00::1]:6443", 6443, "[fd00::1]:6443"),
        ("https://10.0.0.1:6443", 6443, "10.0.0.1:6443"),
    ],
)
def test_endpoint_authority_omits_the_default_port_and_brackets_ipv6(
    clean_env: None, url: str, port: int, authority: str
) -> None:
    endpoint = Endpoint.from_url(url)
    assert (endpoint.port, endpoint.authority) == (port, authority)


@pytest.mark.parametrize("url", ["ftp://api.example.com", "https://", "api.example.com:6443"])
def test_endpoint_refuses_a_url_that_is_not_http(clean_env: None, url: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        Endpoint.from_url(url)


async def test_a_request_to_an_ipv6_address_sends_a_bracketed_host(serve: Serve, pools: Pools) -> None:
    try:
        server = await serve(answers(ok(b"v6")), host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    pool = pools(server.url)

    assert (await get(pool)).body == b"v6"
    assert server.seen[0].headers["host"] == f"[::1]:{server.port}"


# ---------------------------------------------------------------------------- encode_request


def test_encode_request_puts_the_whole_request_in_one_buffer() -> None:
    data = encode_request(
        "POST", "/api/v1/pods", "api:6443", [("Content-Type", "application/json")], b'{"a":1}'
    )
    assert data == (
        b"POST /api/v1/pods HTTP/1.1\r\nHost: api:6443\r\nContent-Type: application/json\r\n"
        b'Content-Length: 7\r\n\r\n{"a":1}'
    )


def test_encode_request_sends_a_length_for_an_empty_body_and_none_without_one() -> None:
    assert (
        encode_request("POST", "/x", "h", [], b"")
        == b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
    )
    assert (
        encode_request("GET", "/x", "h", [("A", "b")], None) == b"GET /x HTTP/1.1\r\nHost: h\r\nA: b\r\n\r\n"
    )


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "\r\n"])
def test_encode_request_refuses_a_header_value_with_a_line_break(value: str) -> None:
    with pytest.raises(ValueError, match="Authorization holds a line break"):
        encode_request("GET", "/", "h", [("Authorization", value)], None)
