"""Versioned object storage with a bounded event history, the simulator's etcd.

Objects are dicts that are never mutated once stored (writers build a new dict), each kept
with its orjson encoding, so GET, LIST and watch fan-out reuse bytes instead of re-encoding
or deep-copying. One global revision orders every write, like etcd's.

A view (`add_view`) is a second name for a resource whose objects are converted on the way
in and out, the way the real server serves one stored kind in two groups (Events): reads,
writes and watches through the view see its form, and share objects, versions and history.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from simcluster.errors import expired

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


@dataclass(slots=True)
class View:
    base: str
    to_view: Callable[[Obj], Obj]
    to_base: Callable[[Obj], Obj]
    cache: dict[str, tuple[Entry, Entry]] = field(default_factory=dict)  # key -> (base, converted)

    def entry(self, key: str, base: Entry) -> Entry:
        cached = self.cache.get(key)
        if cached is not None and cached[0] is base:
            return cached[1]
        obj = self.to_view(base.obj)
        converted = Entry(obj, orjson.dumps(obj))
        self.cache[key] = (base, converted)
        return converted

    def event(self, event: Event) -> Event:
        obj = self.to_view(event.obj)
        raw = orjson.dumps(obj)
        prev = self.to_view(event.prev) if event.prev is not None else None
        return Event(event.rv, event.type, obj, raw, prev, frame(event.type, raw))


class Store:
    """Objects per resource, keyed "namespace/name" (or "name" when cluster-scoped)."""

    def __init__(self, history_size: int = 20_000) -> None:
        self.revision = 1
        self.history_size = history_size
        self._objects: dict[str, dict[str, Entry]] = {}
        self._sorted: dict[str, list[str]] = {}
        self._history: dict[str, deque[Event]] = {}
        self._floor: dict[str, int] = {}  # watches from a version below this get 410
        self._compacted_at = 0  # the same, for kinds with neither objects nor history
        self._watchers: dict[str, set[Watcher]] = {}
        self.listeners: list[Callable[[str, Event], None]] = []
        self._views: dict[str, View] = {}
        self._views_of: dict[str, list[tuple[str, View]]] = {}

    def add_view(
        self, name: str, base: str, to_view: Callable[[Obj], Obj], to_base: Callable[[Obj], Obj]
    ) -> None:
        """Serve resource `base` also as `name`, converting objects with the two functions."""
        view = View(base, to_view, to_base)
        self._views[name] = view
        self._views_of.setdefault(base, []).append((name, view))

    # ---- reads -------------------------------------------------------------------------

    @staticmethod
    def key(namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if namespace else name

    def entry(self, resource: str, namespace: str | None, name: str) -> Entry | None:
        view = self._views.get(resource)
        key = self.key(namespace, name)
        found = self._objects.get(view.base if view else resource, {}).get(key)
        return view.entry(key, found) if view and found else found

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
        view = self._views.get(resource)
        if view is not None:
            for entry in self.entries(view.base, namespace, after):
                meta = entry.obj["metadata"]
                yield view.entry(self.key(meta.get("namespace"), meta["name"]), entry)
            return
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
        view = self._views.get(resource)
        return len(self._objects.get(view.base if view else resource, {}))

    # ---- writes ------------------------------------------------------------------------

    def next_revision(self) -> int:
        self.revision += 1
        return self.revision

    def put(self, resource: str, key: str, obj: Obj, event_type: str, raw: bytes | None = None) -> Entry:
        """Store `obj` (already stamped with its resourceVersion) and publish the event.

        `raw`: what clients are served instead of `obj`'s encoding (the fault injector's
        malformed objects; `obj` is then the part the simulator itself reads)."""
        view = self._views.get(resource)
        if view is not None:
            if raw is not None:
                raise ValueError(f"{resource} is a view of {view.base}: store the object there")
            return view.entry(key, self.put(view.base, key, view.to_base(obj), event_type))
        objects = self._objects.setdefault(resource, {})
        prev = objects.get(key)
        raw = orjson.dumps(obj) if raw is None else raw
        entry = Entry(obj, raw)
        if prev is None:
            self._sorted.pop(resource, None)
        objects[key] = entry
        self._publish(resource, event_type, obj, raw, prev.obj if prev else None)
        return entry

    def load(self, resource: str, items: Iterable[tuple[str, Obj]]) -> int:
        """Store many (key, object) pairs at once, as a restored snapshot: each object gets a
        revision of its own but no watch event, history entry or listener call. Open watches of
        the resource are closed and a watch from a version before the load answers 410, so
        clients relist and miss nothing. Replaces an object of the same key. Returns how many
        were stored."""
        if resource in self._views:
            raise ValueError(f"{resource} is a view of {self._views[resource].base}: load the base")
        objects = self._objects.setdefault(resource, {})
        count = 0
        for key, obj in items:
            obj["metadata"]["resourceVersion"] = str(self.next_revision())
            objects[key] = Entry(obj, orjson.dumps(obj))
            count += 1
        self._sorted.pop(resource, None)
        self._history.pop(resource, None)
        self._floor[resource] = self.revision
        for name in (resource, *(view_name for view_name, _ in self._views_of.get(resource, ()))):
            for watcher in self._watchers.get(name, ()):
                watcher.close()
        return count

    def remove(self, resource: str, key: str, final: Obj) -> Entry:
        """Drop the object; `final` is its last state stamped with the deletion revision."""
        view = self._views.get(resource)
        if view is not None:
            view.cache.pop(key, None)
            gone = self.remove(view.base, key, view.to_base(final))
            obj = view.to_view(gone.obj)
            return Entry(obj, orjson.dumps(obj))
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
        for name, view in self._views_of.get(resource, ()):
            if event_type == "DELETED":
                key = self.key(obj["metadata"].get("namespace"), obj["metadata"]["name"])
                view.cache.pop(key, None)
            watchers = self._watchers.get(name)
            if watchers:
                converted = view.event(event)
                for watcher in watchers:
                    watcher.deliver(converted)
        for listener in self.listeners:
            listener(resource, event)

    # ---- watch -------------------------------------------------------------------------

    def watch(
        self, resource: str, predicate: Predicate | None, since: int | None, namespace: str | None = None
    ) -> Watcher:
        """Open a watcher; with `since`, first replay the retained events after it (410 if too old)."""
        watcher = Watcher(resource, predicate, namespace)
        view = self._views.get(resource)
        base = view.base if view else resource
        if since is not None:
            floor = self._floor.get(base, self._compacted_at)
            if since < floor:
                raise expired(since, floor + 1)
            for event in self._history.get(base, ()):
                if event.rv > since:
                    watcher.deliver(view.event(event) if view else event)
        else:
            for entry in self.entries(resource, namespace):
                if predicate is None or predicate(entry.obj):
                    watcher.push(frame("ADDED", entry.raw))
        self._watchers.setdefault(resource, set()).add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.resource, set()).discard(watcher)

    def watchers(self, resource: str | None = None) -> builtins.list[Watcher]:
        if resource is not None:
            return list(self._watchers.get(resource, ()))
        return [w for ws in self._watchers.values() for w in ws]

    def compact(self) -> None:
        """Forget all history: every watch from an older version now answers 410."""
        for resource in set(self._history) | set(self._objects):
            self._history.pop(resource, None)
            self._floor[resource] = self.revision
        self._compacted_at = self.revision
