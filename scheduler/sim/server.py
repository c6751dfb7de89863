"""HTTP front of the simulator: Kubernetes REST paths onto the API verbs, plus `/_sim/faults`.

One catch-all handler parses the path itself: the URL space is small and regular, and a
single dispatcher keeps per-request overhead low under benchmark load.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from scheduler.sim import discovery, errors
from scheduler.sim.api import Api, ListResult
from scheduler.sim.errors import ApiError
from scheduler.sim.faults import FaultInjector
from scheduler.sim.resources import BY_PATH, ResourceType, store_name
from scheduler.sim.selectors import make_filter
from scheduler.sim.store import frame
from scheduler.sim.tables import table_for

JSON = "application/json"
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
SUCCESS_CREATED = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'


def parse_bool(value: str | None, name: str) -> bool:
    """Booleans as Go's strconv.ParseBool reads them (kubernetes_asyncio sends "True")."""
    if value is None or value == "":
        return False
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax ({name})')


@dataclass(slots=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    legacy_watch: bool


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type=JSON)


def _raw(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON)


def _error(err: ApiError) -> web.Response:
    response = _json(err.status(), err.code)
    if err.retry_after is not None:
        response.headers["Retry-After"] = str(err.retry_after)
    return response


def _list_body(rt: ResourceType, result: ListResult) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    head = orjson.dumps({"kind": f"{rt.kind}List", "apiVersion": rt.group_version, "metadata": meta})
    return head[:-1] + b',"items":[' + b",".join(e.raw for e in result.entries) + b"]}"


class SimServer:
    """The aiohttp application; `SimCluster` owns its lifecycle."""

    def __init__(self, api: Api, faults: FaultInjector, bookmark_interval: float = 5.0) -> None:
        self.api = api
        self.faults = faults
        self.bookmark_interval = bookmark_interval
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_route("*", "/{tail:.*}", self.handle)
        self._streams: set[web.StreamResponse] = set()

    # ---- routing -----------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._dispatch(request)
        except ApiError as err:
            return _error(err)
        except orjson.JSONDecodeError as err:
            return _error(errors.bad_request(f"error decoding body: {err}"))

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if not parts:
            return _json({"paths": ["/api", "/api/v1", "/apis", "/version", "/healthz", "/_sim/faults"]})
        head = parts[0]
        if head == "api":
            if len(parts) == 1:
                return _json(discovery.api_versions())
            if len(parts) == 2:
                found = discovery.resource_list("", parts[1])
                if found is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(found)
            return await self._resource(request, "", parts[1], parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return _json(discovery.api_group_list())
            if len(parts) == 2:
                group = discovery.api_group(parts[1])
                if group is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(group)
            if len(parts) == 3:
                found = discovery.resource_list(parts[1], parts[2])
                if found is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(found)
            return await self._resource(request, parts[1], parts[2], parts[3:])
        if head == "version":
            return _json(discovery.version())
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if parts[:2] == ["_sim", "faults"]:
            return await self._faults(request)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        legacy_watch = bool(rest) and rest[0] == "watch"
        if legacy_watch:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and (group, version, rest[2]) in BY_PATH:
            candidate = BY_PATH[(group, version, rest[2])]
            if candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3 or (group, version, rest[0]) not in BY_PATH:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rt = BY_PATH[(group, version, rest[0])]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return Target(rt, namespace, name, sub, legacy_watch)

    async def _resource(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        t = self._target(group, version, rest)
        method = request.method
        query = request.query
        verb = self._verb(method, t, query)
        resource = store_name(t.rt)
        delay = self.faults.latency(verb, resource)
        if delay:
            await asyncio.sleep(delay)
        self.faults.check(verb, resource)
        api = self.api
        if verb == "watch":
            return await self._watch(request, t)
        if verb == "list":
            result = api.list(
                t.rt,
                t.namespace,
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"),
                limit=int(query.get("limit") or 0),
                continue_token=query.get("continue"),
                resource_version=query.get("resourceVersion"),
            )
            if _wants_table(request):
                return _json(table_for(t.rt, result.entries, result, query.get("includeObject")))
            return _raw(_list_body(t.rt, result))
        assert t.name is not None or verb in ("create", "deletecollection")
        if t.subresource == "scale":
            return await self._scale(request, t, verb)
        if verb == "get":
            entry = api.get(t.rt, t.namespace, t.name)  # type: ignore[arg-type]
            if _wants_table(request):
                return _json(table_for(t.rt, [entry], None, query.get("includeObject")))
            return _raw(entry.raw)
        if verb == "bind":
            body = orjson.loads(await request.read())
            api.bind(t.namespace or "default", t.name, body, self.faults.take_binding_conflict)  # type: ignore[arg-type]
            return _raw(SUCCESS_CREATED, 201)
        if verb == "create":
            if t.name is not None:
                raise errors.method_not_allowed()
            entry = api.create(t.rt, t.namespace, orjson.loads(await request.read()))
            return _raw(entry.raw, 201)
        if verb == "update":
            entry = api.update(t.rt, t.namespace, t.name, orjson.loads(await request.read()), t.subresource)  # type: ignore[arg-type]
            return _raw(entry.raw)
        if verb == "patch":
            entry, created = api.patch(
                t.rt,
                t.namespace,
                t.name,
                request.content_type,
                await request.read(),
                t.subresource,  # type: ignore[arg-type]
            )
            return _raw(entry.raw, 201 if created else 200)
        if verb == "delete":
            raw = await request.read()
            options = orjson.loads(raw) if raw else {}
            if "gracePeriodSeconds" in query:
                options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            if "propagationPolicy" in query:
                options["propagationPolicy"] = query["propagationPolicy"]
            entry, gone = api.delete(t.rt, t.namespace, t.name, options)  # type: ignore[arg-type]
            if t.rt.return_deleted_object or not gone:
                return _raw(entry.raw)
            meta = entry.obj["metadata"]
            details = {"name": meta["name"], "kind": t.rt.plural, "uid": meta["uid"]}
            if t.rt.group:
                details["group"] = t.rt.group
            return _json(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        # deletecollection
        raw = await request.read()
        entries = api.delete_collection(
            t.rt,
            t.namespace,
            query.get("labelSelector"),
            query.get("fieldSelector"),
            orjson.loads(raw) if raw else None,
        )
        return _raw(_list_body(t.rt, ListResult(entries, api.store.revision, None, None)))

    async def _scale(self, request: web.Request, t: Target, verb: str) -> web.Response:
        name = t.name or ""
        if verb == "get":
            return _json(self.api.scale(t.rt, t.namespace, name))
        if verb == "update":
            return _json(self.api.update_scale(t.rt, t.namespace, name, orjson.loads(await request.read())))
        if verb == "patch":
            raw = await request.read()
            return _json(self.api.patch_scale(t.rt, t.namespace, name, request.content_type, raw))
        raise errors.method_not_allowed()

    @staticmethod
    def _verb(method: str, t: Target, query: Any) -> str:
        if method == "GET":
            if t.name is None:
                return "watch" if t.legacy_watch or parse_bool(query.get("watch"), "watch") else "list"
            return "watch" if t.legacy_watch else "get"
        if method == "POST":
            if t.subresource == "binding":
                return "bind"
            if t.subresource is not None:
                raise errors.method_not_allowed()
            return "create"
        if t.name is None:
            if method == "DELETE":
                return "deletecollection"
            raise errors.method_not_allowed()
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE" and t.subresource is None:
            return "delete"
        raise errors.method_not_allowed()

    # ---- watch -------------------------------------------------------------------------

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        query = request.query
        store = self.api.store
        resource = store_name(t.rt)
        namespace = t.namespace if t.rt.namespaced else None
        field_selector = query.get("fieldSelector")
        if t.name is not None:  # legacy /watch/.../name
            field_selector = ",".join(filter(None, [field_selector, f"metadata.name={t.name}"]))
        predicate = make_filter(query.get("labelSelector"), field_selector, None)
        bookmarks = parse_bool(query.get("allowWatchBookmarks"), "allowWatchBookmarks")
        initial = parse_bool(query.get("sendInitialEvents"), "sendInitialEvents")
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        rv = query.get("resourceVersion")
        since = None if initial or rv in (None, "", "0") else int(rv)
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        try:
            if since is not None and self.faults.take_gone(resource):
                raise errors.expired(since, store.revision)
            watcher = store.watch(resource, predicate, since, namespace)
        except ApiError as err:
            await response.prepare(request)
            await response.write(frame("ERROR", orjson.dumps(err.status())))
            await response.write_eof()
            return response
        if initial:
            watcher.push(self._bookmark(t.rt, store.revision, initial_end=True))
        deadline = time.monotonic() + timeout if timeout else None
        self._streams.add(response)
        try:
            await response.prepare(request)
            next_bookmark = time.monotonic() + self.bookmark_interval
            while True:
                if watcher.frames:
                    chunk = b"".join(watcher.frames)
                    watcher.frames.clear()
                    await response.write(chunk)
                watcher.wakeup.clear()
                if watcher.closed:
                    break
                clock = time.monotonic()
                if deadline is not None and clock >= deadline:
                    break
                if bookmarks and clock >= next_bookmark:
                    watcher.push(self._bookmark(t.rt, store.revision))
                    next_bookmark = clock + self.bookmark_interval
                    continue
                wait = next_bookmark - clock if bookmarks else 3600.0
                if deadline is not None:
                    wait = min(wait, deadline - clock)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watcher.wakeup.wait(), timeout=max(wait, 0.0))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            store.unwatch(watcher)
            self._streams.discard(response)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()
        return response

    @staticmethod
    def _bookmark(rt: ResourceType, revision: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(revision), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return frame(
            "BOOKMARK", orjson.dumps({"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta})
        )

    # ---- admin -------------------------------------------------------------------------

    async def _faults(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return _json(self.faults.describe())
        if request.method == "DELETE":
            self.faults.clear()
            return _json(self.faults.describe())
        if request.method in ("POST", "PUT"):
            return _json(self.faults.apply(orjson.loads(await request.read())))
        raise errors.method_not_allowed()


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")
