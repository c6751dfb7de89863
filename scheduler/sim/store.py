"""Versioned object storage with a bounded event history, the simulator's etcd.

Objects are dicts that are never mutated once stored (writers build a new dict), each kept
with its orjson encoding, so GET, LIST and watch fan-out reuse bytes instead of re-encoding
or deep-copying. One global revision orders every write, like etcd's.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from scheduler.sim.errors import expired

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]


@dataclass(slots=True)
class Entry:
    obj: Obj
    raw: bytes


@dataclass(slots=True)
class Event:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    raw: bytes
    prev: Obj | None
    line: bytes  # the complete watch frame for unfiltered watchers


def frame(event_type: str, raw: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"


@dataclass(slots=True, eq=False)
class Watcher:
    """One open watch stream: frames pile up here and the HTTP handler drains them."""

    resource: str
    predicate: Predicate | None
    namespace: str | None = None
    frames: list[bytes] = field(default_factory=list)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False
    max_backlog: int = 200_000

    def push(self, data: bytes) -> None:
        if self.closed:
            return
        self.frames.append(data)
        if len(self.frames) > self.max_backlog:
            self.close()  # a stuck client is cut off; it resumes or relists like with a real server
        self.wakeup.set()

    def deliver(self, event: Event) -> None:
        if self.namespace is not None and event.obj["metadata"].get("namespace") != self.namespace:
            return  # an object never changes namespace, so one check covers before and after
        pred = self.predicate
        if pred is None:
            self.push(event.line)
            return
        now = pred(event.obj)
        before = event.prev is not None and pred(event.prev)
        if event.type == "MODIFIED":
            if now and before:
                self.push(event.line)
            elif now:
                self.push(frame("ADDED", event.raw))
            elif before:
                self.push(frame("DELETED", event.raw))
        elif now:
            self.push(event.line)

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()


class Store:
    """Objects per resource, keyed "namespace/name" (or "name" when cluster-scoped)."""

    def __init__(self, history_size: int = 20_000) -> None:
        self.revision = 1
        self.history_size = history_size
        self._objects: dict[str, dict[str, Entry]] = {}
        self._sorted: dict[str, list[str]] = {}
        self._history: dict[str, deque[Event]] = {}
        self._floor: dict[str, int] = {}  # watches from a version below this get 410
        self._watchers: dict[str, set[Watcher]] = {}
        self.listeners: list[Callable[[str, Event], None]] = []

    # ---- reads -------------------------------------------------------------------------

    @staticmethod
    def key(namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if namespace else name

    def entry(self, resource: str, namespace: str | None, name: str) -> Entry | None:
        return self._objects.get(resource, {}).get(self.key(namespace, name))

    def get(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        """A private copy of the stored object (callers may mutate it)."""
        found = self.entry(resource, namespace, name)
        return orjson.loads(found.raw) if found else None

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """Private copies of all objects, in key order, optionally of one namespace."""
        return [orjson.loads(e.raw) for e in self.entries(resource, namespace)]

    def entries(
        self, resource: str, namespace: str | None = None, after: str | None = None
    ) -> Iterator[Entry]:
        """Stored entries in key order (shared, never mutate), starting after key `after`."""
        objects = self._objects.get(resource, {})
        keys = self._sorted.get(resource)
        if keys is None:
            keys = self._sorted[resource] = sorted(objects)
        start = 0
        if after is not None:
            start = bisect.bisect_right(keys, after)
        prefix = f"{namespace}/" if namespace else None
        for k in keys[start:]:
            if prefix is not None and not k.startswith(prefix):
                continue
            yield objects[k]

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, {}))

    # ---- writes ------------------------------------------------------------------------

    def next_revision(self) -> int:
        self.revision += 1
        return self.revision

    def put(self, resource: str, key: str, obj: Obj, event_type: str) -> Entry:
        """Store `obj` (already stamped with its resourceVersion) and publish the event."""
        objects = self._objects.setdefault(resource, {})
        prev = objects.get(key)
        raw = orjson.dumps(obj)
        entry = Entry(obj, raw)
        if prev is None:
            self._sorted.pop(resource, None)
        objects[key] = entry
        self._publish(resource, event_type, obj, raw, prev.obj if prev else None)
        return entry

    def remove(self, resource: str, key: str, final: Obj) -> Entry:
        """Drop the object; `final` is its last state stamped with the deletion revision."""
        objects = self._objects.get(resource, {})
        prev = objects.pop(key)
        self._sorted.pop(resource, None)
        raw = orjson.dumps(final)
        self._publish(resource, "DELETED", final, raw, prev.obj)
        return Entry(final, raw)

    def _publish(self, resource: str, event_type: str, obj: Obj, raw: bytes, prev: Obj | None) -> None:
        event = Event(
            int(obj["metadata"]["resourceVersion"]), event_type, obj, raw, prev, frame(event_type, raw)
        )
        history = self._history.get(resource)
        if history is None:
            history = self._history[resource] = deque()
        if len(history) >= self.history_size:
            self._floor[resource] = history.popleft().rv
        history.append(event)
        for watcher in self._watchers.get(resource, ()):
            watcher.deliver(event)
        for listener in self.listeners:
            listener(resource, event)

    # ---- watch -------------------------------------------------------------------------

    def watch(
        self, resource: str, predicate: Predicate | None, since: int | None, namespace: str | None = None
    ) -> Watcher:
        """Open a watcher; with `since`, first replay the retained events after it (410 if too old)."""
        watcher = Watcher(resource, predicate, namespace)
        if since is not None:
            floor = self._floor.get(resource, 0)
            if since < floor:
                raise expired(since, floor + 1)
            for event in self._history.get(resource, ()):
                if event.rv > since:
                    watcher.deliver(event)
        else:
            for entry in self.entries(resource, namespace):
                if predicate is None or predicate(entry.obj):
                    watcher.push(frame("ADDED", entry.raw))
        self._watchers.setdefault(resource, set()).add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.resource, set()).discard(watcher)

    def watchers(self, resource: str | None = None) -> list[Watcher]:
        if resource is not None:
            return list(self._watchers.get(resource, ()))
        return [w for ws in self._watchers.values() for w in ws]

    def compact(self) -> None:
        """Forget all history: every watch from an older version now answers 410."""
        for resource in set(self._history) | set(self._objects):
            self._history.pop(resource, None)
            self._floor[resource] = self.revision
