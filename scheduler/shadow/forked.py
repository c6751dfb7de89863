"""Shadow decisions in a child process forked from the scheduler, off the scheduling loop.

``fork()`` hands the child the scheduler's memory as it is at that instant, copy-on-write:
nothing is copied up front, and the cache, the listers and the framework are all there and
consistent (the loop forks between two of its steps, never inside a cycle). The child decides a
batch of pods one after the other and streams each outcome back over a pipe; the event loop only
forks (a couple of milliseconds for a few hundred MiB: the page tables are copied), reads the
frames and reaps the child. The decisions of a batch see the cluster as it was when it began.

The child leaves the parent's signals to the parent (asyncio's wakeup fd and handlers), turns off
the cycle collector (which would walk, and so copy, every object), lowers its priority (on a
shared CPU the scheduling loop wins) and ends with ``os._exit``: no atexit handler, finalizer or
buffer of the parent's runs in it. The pages it writes are copied: while it runs, memory grows by
what its decisions touch.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import logging
import os
import signal
import struct
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import BinaryIO, NoReturn

from scheduler.api import Pod
from scheduler.shadow.decision import Decision, Detail, Outcome

log = logging.getLogger(__name__)

# The loop pays per batch: the fork (its page tables) and, while the child lives, a copy of each
# page it writes (a busy loop writes much of its working set: tens of milliseconds at 5,000 nodes),
# so a batch is as large as a burst of pods: they are gathered a moment, and forked together.
MAX_BATCH = 64  # pods per child (the last one's decision sees the cluster as the first's did)
GATHER = 0.05  # seconds the pods of a burst are gathered before a fork
MAX_DEFER = 1.0  # seconds a fork waits at most for the scheduling loop to have no pod ready
BUSY_POLL = 0.01  # seconds between looks at a busy scheduling loop
NICENESS = 10  # added to the child's nice value
REAP_POLL = 0.005  # seconds between looks at a child that has closed its pipe but not yet exited
PIPE_SIZE = 2**20  # bytes the pipe holds (the default most systems allow at most)
READ_LIMIT = 2**24  # bytes buffered before reading pauses: a frame is read without pausing
FRAME = struct.Struct("!III")  # uid, decision and detail lengths, then the three byte strings


class ForkedDecider:
    """``evaluate_now`` decides one pod without suspending (no extenders): run in the child.
    ``busy``: the scheduling loop has pods ready; the fork waits for a moment it has none (its
    writes are then few, and so the pages copied), ``MAX_DEFER`` at most."""

    batch_size = MAX_BATCH

    def __init__(self, evaluate_now: Callable[[Pod], Outcome], busy: Callable[[], bool]) -> None:
        self._evaluate_now = evaluate_now
        self._busy = busy

    async def ready(self) -> None:
        await asyncio.sleep(GATHER)
        deadline = time.monotonic() + MAX_DEFER
        while self._busy() and time.monotonic() < deadline:
            await asyncio.sleep(BUSY_POLL)

    async def decide(self, pods: Sequence[Pod]) -> AsyncIterator[tuple[str, Outcome]]:
        read_fd, write_fd = os.pipe()
        with contextlib.suppress(AttributeError, OSError):  # Linux: a frame in one read, not many
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        if pid == 0:
            os.close(read_fd)
            _child(os.fdopen(write_fd, "wb"), pods, self._evaluate_now)
        os.close(write_fd)
        reaped = False
        try:
            async for decided in _frames(read_fd):
                yield decided
            code = await _exit_code(pid)
            reaped = True
            if code != 0:
                log.warning("the shadow decision process for %d pod(s) exited with code %d", len(pods), code)
        finally:
            if not reaped:  # cancelled (shutting down), or the reader failed
                _kill(pid)


def _child(out: BinaryIO, pods: Sequence[Pod], evaluate_now: Callable[[Pod], Outcome]) -> NoReturn:
    code = 1
    try:
        _leave_signals_to_the_parent()
        gc.disable()
        os.nice(NICENESS)
        with out:
            for pod in pods:
                try:
                    outcome = evaluate_now(pod)
                except Exception:
                    log.exception("shadow decision failed for pod %s", pod.key)
                    continue
                out.write(_frame(pod.uid, outcome))
                out.flush()  # each decision as soon as it is made
        code = 0
    finally:
        os._exit(code)


def _leave_signals_to_the_parent() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    # the parent loop's self-pipe (none when forked from another thread than the main one)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)


def _frame(uid: str, outcome: Outcome) -> bytes:
    parts = uid.encode(), outcome.decision.encode(), outcome.detail.encoded
    return FRAME.pack(*(len(part) for part in parts)) + b"".join(parts)


async def _frames(read_fd: int) -> AsyncIterator[tuple[str, Outcome]]:
    """The (uid, outcome) frames the child writes, until it closes the pipe."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    try:
        while True:
            try:
                head = await reader.readexactly(FRAME.size)
            except asyncio.IncompleteReadError as end:
                if end.partial:
                    log.warning("the shadow decision process sent a truncated frame")
                return  # closed: the child is done
            uid_size, decision_size, detail_size = FRAME.unpack(head)
            try:
                body = await reader.readexactly(uid_size + decision_size + detail_size)
            except asyncio.IncompleteReadError:
                log.warning("the shadow decision process sent a truncated frame")
                return
            uid = body[:uid_size].decode()
            decision = Decision.decode(body[uid_size : uid_size + decision_size])
            yield uid, Outcome(decision, Detail(body[uid_size + decision_size :]))
    finally:
        transport.close()


async def _exit_code(pid: int) -> int:
    """The child's exit code, waited for without blocking the loop (tearing down a large
    copy-on-write address space takes milliseconds)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        await asyncio.sleep(REAP_POLL)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
