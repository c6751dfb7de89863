"""Kubernetes Events (events.k8s.io/v1), written in the background.

Like client-go's events broadcaster: ``record`` never blocks the scheduling loop (a bounded
queue; when it is full the event is dropped and counted), and a repeated event about the same
object is not written again as a new object but folded into the first one's ``series`` (count,
lastObservedTime) with a PATCH, so a pod that fails scheduling a hundred times produces one
Event "(x100)" instead of a hundred. Unlike client-go, the note is part of what makes two events
"the same": a FailedScheduling whose message changed is worth its own Event.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.api import Node, Pod
from scheduler.client.rest import ApiError, TransportError
from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
QUEUE_SIZE = 1000  # client-go's maxQueuedEvents
SERIES_WINDOW = timedelta(minutes=6)  # client-go's finishTime
NOTE_LIMIT = 1024  # the API server rejects longer notes
STRATEGIC_MERGE = "application/strategic-merge-patch+json"


def micro_time(t: datetime) -> str:
    """RFC 3339 with microseconds in UTC, the wire form of metav1.MicroTime."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(obj: Pod | Node | Mapping[str, Any]) -> dict[str, str]:
    if isinstance(obj, Pod):
        ref = {"kind": "Pod", "apiVersion": "v1", "namespace": obj.namespace, "name": obj.name}
        ref["uid"] = obj.uid
        rv = obj.resource_version
    elif isinstance(obj, Node):
        ref = {"kind": "Node", "apiVersion": "v1", "name": obj.name, "uid": obj.uid}
        rv = obj.resource_version
    else:
        meta = obj.get("metadata") or {}
        ref = {"kind": str(obj.get("kind", "")), "apiVersion": str(obj.get("apiVersion", ""))}
        ref.update({k: str(meta[k]) for k in ("namespace", "name", "uid") if meta.get(k)})
        rv = str(meta.get("resourceVersion", ""))
    if rv:
        ref["resourceVersion"] = rv
    return ref


@dataclass(slots=True)
class _Series:
    """One Event object on the server and how many times it has been observed."""

    body: dict[str, Any]
    count: int
    last_observed: datetime
    created: bool = False
    written_count: int = 0

    @property
    def namespace(self) -> str:
        return self.body["metadata"]["namespace"]

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    def series(self) -> dict[str, Any]:
        return {"count": self.count, "lastObservedTime": micro_time(self.last_observed)}


@dataclass(slots=True)
class _Pending:
    key: tuple[str, ...]
    ref: dict[str, str]
    event_type: str
    reason: str
    action: str
    note: str
    observed: datetime


def truncate_note(note: str) -> str:
    """Cut a note to the API's limit, which counts bytes (UTF-8), on a character boundary."""
    encoded = note.encode()
    if len(encoded) <= NOTE_LIMIT:
        return note
    return encoded[: NOTE_LIMIT - 4].decode(errors="ignore") + " ..."


@dataclass(slots=True)
class EventRecorder:
    """Writes Events as ``scheduler_name`` (reportingController) / ``identity`` (instance).

    Start ``run()`` as a task; ``close()`` flushes what is queued and stops it.
    """

    client: ApiClient
    scheduler_name: str
    identity: str
    queue_size: int = QUEUE_SIZE
    window: timedelta = SERIES_WINDOW
    retries: int = 3
    retry_delay: float = 1.0
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    dropped: int = field(default=0, init=False)
    _queue: asyncio.Queue[_Pending] = field(init=False)
    _cache: dict[tuple[str, ...], _Series] = field(default_factory=dict, init=False)
    _last_name_ns: int = field(default=0, init=False)
    _last_purge: datetime | None = field(default=None, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._queue = asyncio.Queue(self.queue_size)

    def record(
        self, obj: Pod | Node | Mapping[str, Any], event_type: str, reason: str, action: str, note: str
    ) -> None:
        """Queue an event; never blocks, drops (and counts) when the queue is full."""
        ref = object_reference(obj)
        note = truncate_note(note)
        key = (event_type, reason, action, note, ref["kind"], ref.get("namespace", ""), ref["name"])
        key += (ref.get("uid", ""),)
        log.debug("event %s %s %s/%s: %s", event_type, reason, ref.get("namespace", ""), ref["name"], note)
        try:
            self._queue.put_nowait(_Pending(key, ref, event_type, reason, action, note, self.now()))
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning("event queue full, dropped %d event(s) so far (latest: %s)", self.dropped, reason)

    async def run(self) -> None:
        """Write queued events until cancelled; events queued together are coalesced."""
        self._task = asyncio.current_task()
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                touched: dict[tuple[str, ...], _Series] = {}
                for pending in batch:
                    touched[pending.key] = self._absorb(pending)
                for series in touched.values():
                    try:
                        await self._write(series)
                    except Exception:  # one bad write must not stop every later event
                        log.exception("could not write event %s", series.body.get("reason"))
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def flush(self, timeout: float) -> bool:
        """Wait until everything queued so far has been written (or given up on)."""
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self, timeout: float = 5.0) -> None:
        await self.flush(timeout)
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    # ---------------------------------------------------------------------------- internals

    def _absorb(self, pending: _Pending) -> _Series:
        self._purge(pending.observed)
        series = self._cache.get(pending.key)
        if series is not None and pending.observed - series.last_observed <= self.window:
            series.count += 1
            series.last_observed = max(series.last_observed, pending.observed)
            return series
        namespace = pending.ref.get("namespace") or "default"
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": self._event_name(pending.ref["name"], pending.observed)},
            "eventTime": micro_time(pending.observed),
            "reportingController": self.scheduler_name,
            "reportingInstance": self.identity,
            "action": pending.action,
            "reason": pending.reason,
            "note": pending.note,
            "type": pending.event_type,
            "regarding": pending.ref,
        }
        body["metadata"]["namespace"] = namespace
        series = _Series(body, 1, pending.observed)
        self._cache[pending.key] = series
        return series

    def _event_name(self, regarding_name: str, t: datetime) -> str:
        # Upstream names events <object>.<unix nanoseconds in hex>; keep them unique per process.
        ns = max(int(t.timestamp() * 1e9), self._last_name_ns + 1)
        self._last_name_ns = ns
        return f"{regarding_name}.{ns:x}"

    def _purge(self, now: datetime) -> None:
        if self._last_purge is not None and now - self._last_purge < self.window:
            return
        self._last_purge = now
        stale = [k for k, s in self._cache.items() if now - s.last_observed > self.window]
        for key in stale:
            del self._cache[key]

    async def _write(self, series: _Series) -> None:
        if series.created and series.written_count == series.count:
            return
        base = f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events"
        for attempt in range(self.retries + 1):
            try:
                if series.created:
                    patch = {"series": series.series()}
                    path = f"{base}/{series.name}"
                    resp = await self.client.request("PATCH", path, patch, content_type=STRATEGIC_MERGE)
                    if resp.status == 404:  # deleted meanwhile (TTL): create it again
                        series.created = False
                if not series.created:
                    body = series.body if series.count < 2 else {**series.body, "series": series.series()}
                    resp = await self.client.request("POST", base, body)
                    if resp.status == 409:  # already there: a retried create that had landed
                        series.created = True
                        if series.count < 2:
                            series.written_count = series.count
                            return
                        continue
                if 200 <= resp.status < 300:
                    series.created = True
                    series.written_count = series.count
                    return
                error = ApiError.from_response(resp)
            except TransportError as exc:
                error = exc
            if not error.is_retriable:
                log.warning("event %s/%s rejected, not retrying: %s", series.namespace, series.name, error)
                return
            if attempt < self.retries:
                await asyncio.sleep(self.retry_delay * (0.75 + random.random() / 2))
        log.warning("event %s/%s not written after %d tries", series.namespace, series.name, self.retries + 1)
