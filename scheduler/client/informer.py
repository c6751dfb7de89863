"""Informers: a local, always-current copy of one resource, with change notifications.

Reflector semantics as in client-go: LIST (paginated) then WATCH from the list's
resourceVersion with bookmarks; a stream that ends normally is resumed from the last seen
resourceVersion, so nothing is missed or repeated; when the server no longer has that history
(410 Gone) the informer relists and reconciles the store against the fresh list, turning the
difference into add/update/delete notifications, so no deleted object lingers as a ghost.
A watch that ran fine and then broke (a proxy cut the connection) is resumed at once; failures
that repeat are retried with jittered exponential backoff, reset by the next healthy watch; the
informer never gives up. Failures go to the shared OutageLog, which logs one line per round.

Objects are decoded once into the scheduler's compact views (``decode``); an object that does not
decode (whatever it is: a null, a string, a wrong type deep inside) is reported and skipped, and
the informer carries on (docs/architecture.md, Principles: "Never crash the loop on bad input"). It
is reported once, as one log line naming the object and the field, and to the ``malformed``
handler: not again at the next relist, again only when a later version is bad in another way. An
object that decoded before and no longer does keeps its last good version in the store, as
client-go's would keep it.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import logging
import random
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import orjson

from scheduler.api import MalformedObject
from scheduler.api.kinds import display_key
from scheduler.client.backoff import Backoff
from scheduler.client.outage import OutageLog
from scheduler.client.rest import ApiError, raise_for_status
from scheduler.framework.changes import ChangeLog
from scheduler.framework.interface import ApiClient, ApiResponse

log = logging.getLogger(__name__)

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300.0  # seconds; each watch asks for a random timeout in [min, 2*min)
SHORT_WATCH = 1.0  # a watch that ends this fast without a single event counts as a failure


class EventHandler(Protocol[T_contra]):
    """Receives the informer's notifications; exceptions are logged and do not stop it."""

    def on_add(self, obj: T_contra) -> None: ...

    def on_update(self, old: T_contra, new: T_contra) -> None: ...

    def on_delete(self, obj: T_contra) -> None: ...


class MalformedHandler(Protocol):
    """Told about objects that do not decode: once per distinct problem, and when it is over."""

    def malformed(self, key: str, obj: Any, error: MalformedObject) -> None: ...

    def gone(self, key: str) -> None:
        """The object reported under ``key`` was deleted or decodes now."""


class ListWatchClient(ApiClient, Protocol):
    def stream_lines(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        read_timeout: float | None = None,
        on_connected: Callable[[], None] | None = None,
    ) -> AsyncGenerator[bytes, None]: ...


@dataclass(slots=True)
class _Entry(Generic[T]):
    resource_version: str
    uid: str
    obj: T


class Store(Generic[T]):
    """The decoded objects the handler has been told about, keyed by ``namespace/name``
    (plain ``name`` for cluster-scoped kinds).

    ``with_label`` answers from an index per label key, built on its first call for that key
    and kept up to date by every change from then on; a store nobody asks keeps none.
    ``revision`` and ``changed_since`` say what changed (``scheduler.framework.RevisionedLister``).
    """

    # weak references: state derived from a store (scheduler.dra.shared) lives as long as it
    __slots__ = ("__weakref__", "_by_label", "_changes", "_entries")

    def __init__(self) -> None:
        self._changes = ChangeLog()
        self._entries: dict[str, _Entry[T]] = {}
        # label key -> (namespace, value) -> store key -> object
        self._by_label: dict[str, dict[tuple[str, str], dict[str, T]]] = {}

    def get(self, key: str) -> T | None:
        entry = self._entries.get(key)
        return entry.obj if entry else None

    def with_label(self, namespace: str, key: str, value: str) -> builtins.list[T]:
        """The objects of ``namespace`` ("" for cluster-scoped kinds) labelled ``key=value``."""
        index = self._by_label.get(key)
        if index is None:
            index = self._by_label[key] = {}
            for name, entry in self._entries.items():
                _index(index, key, name, entry.obj)
        return builtins.list(index.get((namespace, value), {}).values())

    def _set(self, name: str, entry: _Entry[T]) -> None:
        if self._by_label:
            old = self._entries.get(name)
            for key, index in self._by_label.items():
                if old is not None:
                    _unindex(index, key, name, old.obj)
                _index(index, key, name, entry.obj)
        self._entries[name] = entry
        self._changes.changed(name)

    def _pop(self, name: str) -> _Entry[T] | None:
        entry = self._entries.pop(name, None)
        if entry is not None:
            self._changes.changed(name)
            for key, index in self._by_label.items():
                _unindex(index, key, name, entry.obj)
        return entry

    def list(self) -> list[T]:
        return [e.obj for e in self._entries.values()]

    @property
    def revision(self) -> int:
        return self._changes.revision

    def changed_since(self, revision: int) -> builtins.list[str] | None:
        return self._changes.since(revision)

    def keys(self) -> builtins.list[str]:
        return builtins.list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(self.list())


def _labels(obj: object) -> Mapping[str, Any]:
    """An API view's labels, or a plain API dict's ``metadata.labels``."""
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
    else:
        labels = getattr(obj, "labels", None)
    return labels if isinstance(labels, Mapping) else {}


def _index(index: dict[tuple[str, str], dict[str, T]], key: str, name: str, obj: T) -> None:
    value = _labels(obj).get(key)
    if isinstance(value, str):
        index.setdefault((name.rpartition("/")[0], value), {})[name] = obj


def _unindex(index: dict[tuple[str, str], dict[str, T]], key: str, name: str, obj: T) -> None:
    value = _labels(obj).get(key)
    if not isinstance(value, str):
        return
    slot = (name.rpartition("/")[0], value)
    members = index.get(slot)
    if members is not None:
        members.pop(name, None)
        if not members:
            del index[slot]


class _Expired(Exception):
    """The resourceVersion we would resume from is older than the server's history."""


def _metadata(raw: Any) -> Mapping[str, Any]:
    """An object's metadata, or {} when the object or its metadata is not a JSON object."""
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    return meta if isinstance(meta, dict) else {}


def _text(meta: Mapping[str, Any], name: str) -> str:
    value = meta.get(name)
    return value if isinstance(value, str) else ""


def _key(meta: Mapping[str, Any]) -> str:
    """The store key of an object, however broken its metadata ("" for no usable name)."""
    name = _text(meta, "name")
    namespace = _text(meta, "namespace")
    return f"{namespace}/{name}" if namespace and name else name


def _digest(raw: Any) -> str:
    """Tells nameless malformed objects apart (only ever computed for those)."""
    return hashlib.blake2b(orjson.dumps(raw, option=orjson.OPT_SORT_KEYS), digest_size=8).hexdigest()


class Informer(Generic[T]):
    """List+watch one collection (``path`` like ``/api/v1/pods``) into ``store``.

    ``synced`` is set once the first list's objects have all been passed to the handler. With
    ``deliver_after``, a list's objects are passed on only once those events are set (listed
    meanwhile): the pods wait so for the objects their PreEnqueue plugins look up.
    """

    def __init__(
        self,
        client: ListWatchClient,
        path: str,
        *,
        decode: Callable[[dict[str, Any]], T],
        handler: EventHandler[T],
        params: Mapping[str, str] | None = None,
        name: str = "",
        page_size: int = PAGE_SIZE,
        backoff: Backoff | None = None,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        outage: OutageLog | None = None,
        malformed: MalformedHandler | None = None,
        deliver_after: Sequence[asyncio.Event] = (),
    ) -> None:
        self.name = name or path.rsplit("/", 1)[-1]
        self._deliver_after = tuple(deliver_after)
        self.store: Store[T] = Store()
        self.synced = asyncio.Event()
        self._client = client
        self._path = path
        self._decode = decode
        self._handler = handler
        self._params = dict(params or {})
        self._page_size = page_size
        self._backoff = backoff or Backoff()
        self._min_watch_timeout = min_watch_timeout
        self._outage = outage or OutageLog()
        self._malformed = malformed
        # objects reported as malformed: identity (the key, or key#digest for nameless ones) ->
        # what was reported (uid and reason); a relist rebuilds it from what is still bad
        self._reported: dict[str, str] = {}
        self._rv: str | None = None
        self._watch_events = 0

    @property
    def resource_version(self) -> str | None:
        """Where the next watch resumes; None until listed (and after a 410)."""
        return self._rv

    async def run(self) -> None:
        """List and watch until cancelled."""
        loop = asyncio.get_running_loop()
        component = f"informer {self.name}"
        while True:
            fresh = self._rv is None
            self._watch_events = 0
            started: float | None = None
            try:
                if fresh:
                    await self._list()
                    self._outage.recovered(component)
                started = loop.time()
                await self._watch()
                if self._watch_events == 0 and loop.time() - started < SHORT_WATCH:
                    raise ApiError(0, "ShortWatch", "watch closed within a second without events")
                self._backoff.reset()
                self._outage.recovered(component)
                continue
            except _Expired:
                self._rv = None
                log.info("informer %s: resourceVersion too old, relisting", self.name)
                if not fresh or self._watch_events:
                    continue  # history moved on while we were away or watching: relist at once
                error: BaseException | str = "410 Gone right after a fresh list"
            except ApiError as exc:
                error = exc
            except Exception as exc:  # e.g. a line that is not JSON; never give up on the resource
                log.warning("informer %s: unexpected error", self.name, exc_info=True)
                error = exc
            healthy = started is not None and (self._watch_events > 0 or loop.time() - started >= SHORT_WATCH)
            if healthy:
                # It ran fine until now (e.g. a proxy cut the connection): resume at once.
                self._backoff.reset()
                self._outage.recovered(component)
                log.debug("informer %s: watch broke (%s); resuming at once", self.name, error)
                continue
            self._outage.failed(component, error)
            await asyncio.sleep(self._backoff.next())

    # ------------------------------------------------------------------------------- list

    async def _list(self) -> None:
        entries: dict[str, _Entry[T]] = {}
        undecodable: dict[str, str] = {}  # key -> the bad version's uid ("" when unreadable)
        reported: dict[str, str] = {}
        params = dict(self._params)
        if self._page_size > 0:
            params["limit"] = str(self._page_size)
        token = ""
        # Each next page is asked for as soon as its token is known, so the server prepares it
        # while this one is decoded (at 100,000 pods, the two take about as long).
        following = self._page(params)
        try:
            while True:
                resp = await following
                if resp.status == 410 and token:
                    # The continue token expired mid-list: start over in one unpaginated request.
                    log.info("informer %s: list continuation expired, listing in one request", self.name)
                    entries.clear()
                    undecodable.clear()  # what was reported stays reported
                    params, token = dict(self._params), ""
                    following = self._page(params)
                    continue
                body = raise_for_status(resp)
                list_meta = body.get("metadata") or {}
                token = list_meta.get("continue") or ""
                if token:
                    following = self._page({**params, "continue": token})
                    await asyncio.sleep(0)  # let it go out before decoding starts
                for raw in body.get("items") or ():
                    meta = _metadata(raw)
                    key = _key(meta)
                    obj = self._decode_or_report(raw, key, reported)
                    if obj is None:
                        undecodable[key] = _text(meta, "uid")
                    else:
                        version, uid = str(meta.get("resourceVersion", "")), str(meta.get("uid", ""))
                        entries[key] = _Entry(version, uid, obj)
                if not token:
                    break
        finally:
            following.cancel()  # a failure mid-list: the page asked for ahead is not wanted
        for ready in self._deliver_after:
            await ready.wait()
        self._replace(entries, undecodable)
        for identity in self._reported.keys() - reported.keys():
            self._forget(identity)  # deleted, or good again
        self._reported = reported
        self._rv = str(list_meta.get("resourceVersion", ""))
        self.synced.set()

    def _page(self, params: Mapping[str, str]) -> asyncio.Task[ApiResponse]:
        return asyncio.ensure_future(self._client.request("GET", self._path, params=params))

    def _replace(self, fresh: dict[str, _Entry[T]], undecodable: Mapping[str, str]) -> None:
        """Make the store equal to a fresh list, notifying only real differences.

        An object recreated under the same name (new uid) is a delete plus an add, not an
        update; an object that exists but no longer decodes keeps its last good version
        (unless its uid says it is another object now).
        """
        store, current = self.store, self.store._entries
        gone = [k for k, e in current.items() if k not in fresh and not self._kept(e, undecodable.get(k))]
        for key in gone:
            removed = current[key].obj
            store._pop(key)
            self._notify(self._handler.on_delete, removed)
        for key, entry in fresh.items():
            old = current.get(key)
            store._set(key, entry)
            if old is None:
                self._notify(self._handler.on_add, entry.obj)
            elif old.uid != entry.uid:
                self._notify(self._handler.on_delete, old.obj)
                self._notify(self._handler.on_add, entry.obj)
            elif old.resource_version != entry.resource_version:
                self._notify(self._handler.on_update, old.obj, entry.obj)

    # ------------------------------------------------------------------------------ watch

    async def _watch(self) -> None:
        timeout = self._min_watch_timeout * (1.0 + random.random())
        params = {
            **self._params,
            "watch": "true",
            "resourceVersion": self._rv or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(timeout)),
        }
        try:
            # The read timeout catches a connection that died silently (bookmarks arrive
            # about once a minute, so a healthy stream is never quiet for this long).
            stream = self._client.stream_lines(
                self._path, params, read_timeout=timeout + 30.0, on_connected=self._connected
            )
            async with aclosing(stream) as lines:
                async for line in lines:
                    self._apply(orjson.loads(line))
                    self._watch_events += 1  # after _apply: an ERROR event is not progress
        except ApiError as exc:
            if exc.status == 410:
                raise _Expired from exc
            raise

    def _connected(self) -> None:
        self._outage.recovered(f"informer {self.name}")

    def _apply(self, event: Mapping[str, Any]) -> None:
        if not isinstance(event, dict):
            raise ApiError(0, "BadWatchEvent", f"watch event is not a JSON object: {str(event)[:80]}")
        kind = event.get("type")
        raw = event.get("object")
        if kind == "ERROR":
            status = raw if isinstance(raw, dict) else {}
            code = status.get("code")
            code = code if isinstance(code, int) else 0
            if code == 410:
                raise _Expired
            reason, message = str(status.get("reason") or "WatchError"), str(status.get("message") or "")
            raise ApiError(code, reason, message, status)
        meta = _metadata(raw)
        rv = _text(meta, "resourceVersion")
        if kind == "BOOKMARK":
            self._rv = rv or self._rv
            return
        key = _key(meta)
        store, current = self.store, self.store._entries
        if kind in ("ADDED", "MODIFIED"):
            obj = self._decode_or_report(raw, key, self._reported)
            old = current.get(key)
            if obj is not None:
                self._forget(key)
                store._set(key, _Entry(rv, _text(meta, "uid"), obj))
                if old is None:
                    self._notify(self._handler.on_add, obj)
                elif old.uid != current[key].uid:
                    self._notify(self._handler.on_delete, old.obj)
                    self._notify(self._handler.on_add, obj)
                else:
                    self._notify(self._handler.on_update, old.obj, obj)
            elif old is not None and not self._kept(old, _text(meta, "uid")):
                store._pop(key)  # replaced by another object under that name, a malformed one
                self._notify(self._handler.on_delete, old.obj)
        elif kind == "DELETED":
            self._forget(key)
            gone = store._pop(key)
            if gone is not None:
                self._notify(self._handler.on_delete, gone.obj)
        else:
            log.warning("informer %s: ignoring watch event of unknown type %r", self.name, kind)
        self._rv = rv or self._rv

    # ---------------------------------------------------------------------------- helpers

    def _decode_or_report(self, raw: Any, key: str, reported: dict[str, str]) -> T | None:
        """The decoded object, or None after reporting it (once: see the module docstring)."""
        bug: Exception | None = None
        try:
            return self._decode(raw)
        except MalformedObject as exc:
            error = exc
        except Exception as exc:  # a decoder's own bug must not stop the informer either
            error = MalformedObject(self.name, display_key(raw), f"cannot be decoded: {exc!r}")
            bug = exc
        meta = _metadata(raw)
        identity = key if _text(meta, "name") else f"{key}#{_digest(raw)}"
        signature = f"{_text(meta, 'uid')}\0{error.reason}"
        if signature not in (self._reported.get(identity), reported.get(identity)):
            kept = key in self.store and self._kept(self.store._entries[key], _text(meta, "uid"))
            log.warning(
                "informer %s: skipping malformed %s %s: %s%s",
                self.name,
                error.kind,
                error.key,
                error.reason,
                "; keeping its last good version" if kept else "",
                exc_info=bug,
            )
            if self._malformed is not None:
                self._notify(self._malformed.malformed, key, raw, error)
        reported[identity] = signature
        return None

    @staticmethod
    def _kept(entry: _Entry[T], bad_uid: str | None) -> bool:
        """Whether a stored object survives a malformed version: the same object turned bad
        (same uid, or one that cannot be read), not another one under its name."""
        return bad_uid is not None and (not bad_uid or bad_uid == entry.uid)

    def _forget(self, identity: str) -> None:
        """A reported object is gone or good again."""
        if self._reported.pop(identity, None) is not None and self._malformed is not None:
            self._notify(self._malformed.gone, identity)

    def _notify(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("informer %s: event handler %s failed", self.name, getattr(fn, "__name__", fn))


class InformerGroup:
    """Runs several informers as tasks and answers "has everything synced?" for /readyz."""

    def __init__(self, informers: Iterable[Informer[Any]] = ()) -> None:
        self._informers: dict[str, Informer[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        for informer in informers:
            self.add(informer)

    def add(self, informer: Informer[T]) -> Informer[T]:
        if informer.name in self._informers:
            raise ValueError(f"duplicate informer name {informer.name!r}")
        if self._tasks:
            raise RuntimeError("informers must be added before start()")
        self._informers[informer.name] = informer
        return informer

    def __getitem__(self, name: str) -> Informer[Any]:
        return self._informers[name]

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(inf.run(), name=f"informer-{name}") for name, inf in self._informers.items()
        ]

    def synced(self) -> dict[str, bool]:
        return {name: inf.synced.is_set() for name, inf in self._informers.items()}

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait until every informer synced; False on timeout. An informer task that died
        (which only a bug can cause) re-raises here instead of hanging the caller."""
        waiters = [asyncio.ensure_future(inf.synced.wait()) for inf in self._informers.values()]
        try:
            pending: set[asyncio.Future[Any]] = {*waiters, *self._tasks}
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            while any(not w.done() for w in waiters):
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                done, pending = await asyncio.wait(
                    pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    return False
                for task in self._tasks:
                    if task in done:
                        task.result()  # raises the informer's exception
                        raise RuntimeError(f"{task.get_name()} stopped before syncing")
            return True
        finally:
            for w in waiters:
                w.cancel()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
