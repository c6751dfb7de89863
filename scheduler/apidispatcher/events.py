"""Kubernetes Events (events.k8s.io/v1), written in the background until they land.

Like client-go's events broadcaster: ``record`` never blocks the scheduling loop, and a repeated
event about the same object is not written again as a new object but folded into the first one's
``series`` (count, lastObservedTime) with a PATCH, so a pod that fails scheduling a hundred times
produces one Event "(x100)" instead of a hundred. Unlike client-go, the note is part of what makes
two events "the same": a FailedScheduling whose message changed is worth its own Event.

Events are not API calls of kube-scheduler's dispatcher (they go through client-go's broadcaster
there), so they have an APIDispatcher of their own, with no call metrics: what they share with
the pod status patches is the queue and its retries. Unlike client-go, nothing is dropped while
the API server is unreachable: each object has at most one event waiting to be written (a newer
event about it takes the older one's place, so memory stays bounded by the number of objects),
and a write that fails is retried with backoff until it lands or the server refuses it for good
(4xx other than 429).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.api import Node, Pod
from scheduler.apidispatcher.dispatcher import APICall, APIDispatcher
from scheduler.client.backoff import Backoff
from scheduler.client.outage import OutageLog
from scheduler.client.pods import STRATEGIC_MERGE
from scheduler.client.rest import ApiError
from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
SERIES_WINDOW = timedelta(minutes=6)  # client-go's finishTime
NOTE_LIMIT = 1024  # the API server rejects longer notes
EVENT = "event"  # the call type of an event write
COMPONENT = "event writer"  # in the outage log


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


def truncate_note(note: str) -> str:
    """Cut a note to the API's limit, which counts bytes (UTF-8), on a character boundary."""
    encoded = note.encode()
    if len(encoded) <= NOTE_LIMIT:
        return note
    return encoded[: NOTE_LIMIT - 4].decode(errors="ignore") + " ..."


@dataclass(slots=True)
class EventRecorder:
    """Writes Events as ``scheduler_name`` (reportingController) / ``identity`` (instance).

    Start ``run()`` as a task; ``close()`` flushes what is waiting and stops it.
    """

    client: ApiClient
    scheduler_name: str
    identity: str
    window: timedelta = SERIES_WINDOW
    retry_delay: float = 0.5  # the first retry of a failed write; doubles up to retry_cap
    retry_cap: float = 10.0
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    outage: OutageLog = field(default_factory=OutageLog)
    _writes: APIDispatcher = field(init=False)
    _cache: dict[tuple[str, ...], _Series] = field(default_factory=dict, init=False)
    _last_name_ns: int = field(default=0, init=False)
    _last_purge: datetime | None = field(default=None, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._writes = APIDispatcher(
            self.client,
            {EVENT: 1},
            COMPONENT,
            max_in_flight=1,  # one object at a time, as client-go's broadcaster
            backoff=Backoff(initial=self.retry_delay, cap=self.retry_cap, jitter=0.5),
            outage=self.outage,
        )

    @property
    def waiting(self) -> int:
        """Events not written yet (at most one per object)."""
        return self._writes.pending

    def record(
        self, obj: Pod | Node | Mapping[str, Any], event_type: str, reason: str, action: str, note: str
    ) -> None:
        """Note an event for writing; never blocks. An unwritten older event about the same object
        gives way to this one."""
        ref = object_reference(obj)
        note = truncate_note(note)
        obj_key = (ref["kind"], ref.get("namespace", ""), ref["name"], ref.get("uid", ""))
        key = (event_type, reason, action, note, *obj_key)
        log.debug("event %s %s %s/%s: %s", event_type, reason, ref.get("namespace", ""), ref["name"], note)
        series = self._absorb(key, ref, event_type, reason, action, note, self.now())
        self._writes.add(EventWrite("/".join(obj_key), series))

    async def run(self) -> None:
        """Write waiting events until cancelled, oldest first; failed writes are retried."""
        self._task = asyncio.current_task()
        await self._writes.run()

    async def flush(self, timeout: float) -> bool:
        """Wait until every event recorded so far has been written (or refused for good)."""
        return await self._writes.flush(timeout)

    async def close(self, timeout: float = 5.0) -> None:
        """Flush (bounded by ``timeout``), then stop the task running ``run()``."""
        await self._writes.close(timeout)
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    # ---------------------------------------------------------------------------- internals

    def _absorb(
        self,
        key: tuple[str, ...],
        ref: dict[str, str],
        event_type: str,
        reason: str,
        action: str,
        note: str,
        observed: datetime,
    ) -> _Series:
        """The series this observation belongs to: an earlier identical one, or a new one."""
        self._purge(observed)
        series = self._cache.get(key)
        if series is not None and observed - series.last_observed <= self.window:
            series.count += 1
            series.last_observed = max(series.last_observed, observed)
            return series
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": self._event_name(ref["name"], observed),
                "namespace": ref.get("namespace") or "default",
            },
            "eventTime": micro_time(observed),
            "reportingController": self.scheduler_name,
            "reportingInstance": self.identity,
            "action": action,
            "reason": reason,
            "note": note,
            "type": event_type,
            "regarding": ref,
        }
        series = _Series(body, 1, observed)
        self._cache[key] = series
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


class EventWrite:
    """The call that brings the server's Event of a series up to date (created, then its
    ``series`` patched), about the object ``key`` names."""

    __slots__ = ("key", "series")

    call_type = EVENT

    def __init__(self, key: str, series: _Series) -> None:
        self.key = key
        self.series = series

    def merge(self, older: APICall) -> None:
        """Nothing to take over: a series is written whole, and the newest event of an object
        is the one worth writing."""

    def is_noop(self) -> bool:
        return self.series.created and self.series.written_count == self.series.count

    async def execute(self, client: ApiClient) -> bool:
        series = self.series
        if self.is_noop():
            return True
        count = series.count
        base = f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events"
        patch_path = f"{base}/{series.name}"
        if series.created:
            resp = await client.request(
                "PATCH", patch_path, {"series": series.series()}, content_type=STRATEGIC_MERGE
            )
            if resp.status == 404:  # deleted meanwhile (TTL): create it again
                series.created = False
        if not series.created:
            body = series.body if count < 2 else {**series.body, "series": series.series()}
            resp = await client.request("POST", base, body)
            if resp.status == 409:  # already there: a create that landed before its answer was lost
                series.created = True
                if count < 2:
                    series.written_count = count
                    return True
                resp = await client.request(
                    "PATCH", patch_path, {"series": series.series()}, content_type=STRATEGIC_MERGE
                )
        if 200 <= resp.status < 300:
            series.created = True
            series.written_count = count
            return True
        error = ApiError.from_response(resp)
        if error.is_retriable:
            raise error
        log.warning("event %s/%s rejected, not retrying: %s", series.namespace, series.name, error)
        series.written_count = count  # given up on: nothing of it is waiting any more
        return False
