"""HTTP front of the simulator: Kubernetes REST paths onto the API verbs, plus `/_sim/faults`
and `/_sim/access`.

Each request is authenticated and authorized against the access table first; bodies are read
as JSON or client-go's protobuf; `as=Table` answers (lists, gets and watches) are rendered by
`tables.py`; POST-only review kinds go to `reviews.py`, `pods/eviction` to `eviction.py`.

Answers over 128 KiB are gzipped for a client that accepts it, as the API server does.

One catch-all handler parses the path itself: the URL space is small and regular, and a
single dispatcher keeps per-request overhead low under benchmark load.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import time
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from simcluster import discovery, errors, protobuf, reviews
from simcluster.access import AccessTable, Attributes, UserInfo, caller, forbidden
from simcluster.api import Api, ListResult
from simcluster.crds import check_field_selector
from simcluster.errors import ApiError
from simcluster.events import field_getters
from simcluster.eviction import evict
from simcluster.faults import FaultInjector
from simcluster.fieldvalidation import Validation
from simcluster.openapi import OpenAPI
from simcluster.resources import ResourceType, store_name
from simcluster.selectors import make_filter
from simcluster.store import Entry, frame
from simcluster.tables import table_for

JSON = "application/json"
# the protobuf OpenAPI v2 media type, and the deprecated name client-go still sends
OPENAPI_V2_PROTOBUF = (
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
)
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
GZIP_THRESHOLD = 128 * 1024  # bytes: the API server compresses answers larger than this
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

    @property
    def object_name(self) -> str:
        """The name of a request that addresses one object (every verb but list, watch, create
        and deletecollection)."""
        assert self.name is not None, "the request names no object"
        return self.name


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type=JSON)


def _raw(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON)


def _error(err: ApiError) -> web.Response:
    response = _json(err.status(), err.code)
    if err.retry_after is not None:
        response.headers["Retry-After"] = str(err.retry_after)
    return response


async def _body(request: web.Request) -> Any:
    """The request's object, from JSON or from client-go's protobuf envelope."""
    raw = await request.read()
    if request.content_type == protobuf.PROTOBUF:
        return protobuf.decode(raw)
    return orjson.loads(raw) if raw else None


async def _validation(request: web.Request, options_kind: str, body: Any) -> Validation:
    """The request's fieldValidation; duplicate keys are looked for in JSON bodies."""
    raw = await request.read() if request.content_type != protobuf.PROTOBUF else None
    return Validation.from_request(request.query.get("fieldValidation"), options_kind, raw, body)


def _written(rt: ResourceType, raw: bytes, validation: Validation, status: int = 200) -> web.Response:
    """A write's answer, with the field-validation warnings as `Warning` headers."""
    response = _raw(_convert(rt, raw), status)
    for text in validation.warnings:
        response.headers.add("Warning", "299 - " + orjson.dumps(text).decode())
    return response


def _convert(rt: ResourceType, raw: bytes) -> bytes:
    """Objects of a CRD read through another version than the stored one (`None` conversion:
    only apiVersion changes). Stored objects start with kind and apiVersion, so it is a prefix."""
    if not rt.crd or rt.version == rt.storage_version:
        return raw
    head = b'{"kind":' + orjson.dumps(rt.kind) + b',"apiVersion":'
    return raw.replace(head + orjson.dumps(rt.stored_api_version), head + orjson.dumps(rt.group_version))


def _compressed(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """A large answer gzipped for a client that accepts it, as the API server's response writer
    does (over 128 KiB, level 1, ``Vary: Accept-Encoding``); watches stream as they are."""
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return response
    body = response.body
    if len(body) <= GZIP_THRESHOLD or not _accepts_gzip(request.headers.get("Accept-Encoding", "")):
        return response
    response.body = gzip.compress(body, compresslevel=1)
    response.headers["Content-Encoding"] = "gzip"
    response.headers.add("Vary", "Accept-Encoding")
    return response


def _accepts_gzip(accept_encoding: str) -> bool:
    return any(token.strip() == "gzip" for token in accept_encoding.split(","))


def _list_body(rt: ResourceType, result: ListResult) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    head = orjson.dumps({"kind": f"{rt.kind}List", "apiVersion": rt.group_version, "metadata": meta})
    return head[:-1] + b',"items":[' + _convert(rt, b",".join(e.raw for e in result.entries)) + b"]}"


class SimServer:
    """The aiohttp application; `SimCluster` owns its lifecycle."""

    def __init__(
        self,
        api: Api,
        faults: FaultInjector,
        bookmark_interval: float = 5.0,
        access: AccessTable | None = None,
    ) -> None:
        self.api = api
        self.faults = faults
        self.access = access if access is not None else AccessTable()
        self.openapi = OpenAPI(api.kinds)
        self.bookmark_interval = bookmark_interval
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_route("*", "/{tail:.*}", self.handle)
        self._streams: set[web.StreamResponse] = set()

    # ---- routing -----------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            response = await self._dispatch(request)
        except ApiError as err:
            return _error(err)
        except orjson.JSONDecodeError as err:
            return _error(errors.bad_request(f"error decoding body: {err}"))
        return _compressed(request, response)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts[:1] == ["_sim"]:
            return await self._admin(request, parts[1:])
        user = caller(self.access, request.headers)
        resource_request = len(parts) >= {"api": 3, "apis": 4}.get(parts[0] if parts else "", 99)
        if not resource_request:
            self._authorize(user, Attributes(request.method.lower(), path=request.path))
        if not parts:
            return _json({"paths": ["/api", "/api/v1", "/apis", "/version", "/healthz", "/_sim/faults"]})
        head = parts[0]
        if head == "api":
            if len(parts) == 1:
                return _json(discovery.api_versions())
            if len(parts) == 2:
                found = discovery.resource_list("", parts[1], self.api.kinds.all())
                if found is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(found)
            return await self._resource(request, user, "", parts[1], parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return _json(discovery.api_group_list(self.api.kinds.all()))
            if len(parts) == 2:
                group = discovery.api_group(parts[1], self.api.kinds.all())
                if group is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(group)
            if len(parts) == 3:
                found = discovery.resource_list(parts[1], parts[2], self.api.kinds.all())
                if found is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(found)
            return await self._resource(request, user, parts[1], parts[2], parts[3:])
        if head == "openapi":
            return self._openapi(request, parts[1:])
        if head == "version":
            return _json(discovery.version())
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _authorize(self, user: UserInfo, attributes: Attributes) -> None:
        if not self.access.authorize(user.username, user.groups, attributes).allowed:
            raise forbidden(user.username, attributes)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        by_path = self.api.kinds.by_path
        legacy_watch = bool(rest) and rest[0] == "watch"
        if legacy_watch:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and (group, version, rest[2]) in by_path:
            candidate = by_path[(group, version, rest[2])]
            if candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3 or (group, version, rest[0]) not in by_path:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rt = by_path[(group, version, rest[0])]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return Target(rt, namespace, name, sub, legacy_watch)

    async def _resource(
        self, request: web.Request, user: UserInfo, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        t = self._target(group, version, rest)
        method = request.method
        query = request.query
        verb = self._verb(method, t, query)
        if not self.access.allow_all:
            rbac_verb = {"bind": "create", "evict": "create"}.get(verb, verb)
            self._authorize(
                user,
                Attributes(
                    rbac_verb, t.rt.group, t.rt.plural, t.subresource or "", t.name or "", t.namespace or ""
                ),
            )
        resource = store_name(t.rt)
        delay = self.faults.latency(verb, resource)
        if delay:
            await asyncio.sleep(delay)
        self.faults.check(verb, resource)
        api = self.api
        dry_run = _dry_run(query, verb)
        if not t.rt.stored:
            if verb != "create":
                raise errors.method_not_allowed()
            answer = reviews.review(self.access, user, t.rt, t.namespace, await _body(request))
            return _json(answer, 201)
        if verb == "evict":
            answer = evict(api, t.namespace or "default", t.name or "", await _body(request), dry_run)
            return _json(answer, answer.get("code", 201))
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
            entry = api.get(t.rt, t.namespace, t.object_name)
            if _wants_table(request):
                return _json(table_for(t.rt, [entry], None, query.get("includeObject")))
            return _raw(_convert(t.rt, entry.raw))
        if verb == "bind":
            body = await _body(request)
            namespace = t.namespace or "default"
            if not self.faults.bind_raw(namespace, t.name or "", body):
                api.bind(namespace, t.object_name, body, self.faults.take_binding_conflict)
            return _raw(SUCCESS_CREATED, 201)
        if verb == "create":
            if t.name is not None:
                raise errors.method_not_allowed()
            body = await _body(request)
            validation = await _validation(request, "CreateOptions", body)
            entry = api.create(t.rt, t.namespace, body, validation=validation, dry_run=bool(dry_run))
            return _written(t.rt, entry.raw, validation, 201)
        if verb == "update":
            body = await _body(request)
            validation = await _validation(request, "UpdateOptions", body)
            entry = api.update(
                t.rt,
                t.namespace,
                t.object_name,
                body,
                t.subresource,
                validation=validation,
                dry_run=bool(dry_run),
            )
            return _written(t.rt, entry.raw, validation)
        if verb == "patch":
            injected = self.faults.patch_raw(
                resource, t.namespace, t.name or "", request.content_type, await request.read(), t.subresource
            )
            if injected is not None:
                return _raw(injected.raw)
            validation = await _validation(request, "PatchOptions", None)
            entry, created = api.patch(
                t.rt,
                t.namespace,
                t.object_name,
                request.content_type,
                await request.read(),
                t.subresource,
                validation=validation,
                dry_run=bool(dry_run),
            )
            return _written(t.rt, entry.raw, validation, 201 if created else 200)
        if verb == "delete":
            options = await _body(request) or {}
            if "gracePeriodSeconds" in query:
                options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            if "propagationPolicy" in query:
                options["propagationPolicy"] = query["propagationPolicy"]
            if dry_run:
                options["dryRun"] = dry_run
            entry, gone = api.delete(t.rt, t.namespace, t.object_name, options)
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
        entries = api.delete_collection(
            t.rt,
            t.namespace,
            query.get("labelSelector"),
            query.get("fieldSelector"),
            await _body(request),
        )
        return _raw(_list_body(t.rt, ListResult(entries, api.store.revision, None, None)))

    async def _scale(self, request: web.Request, t: Target, verb: str) -> web.Response:
        name = t.name or ""
        if verb == "get":
            return _json(self.api.scale(t.rt, t.namespace, name))
        if verb == "update":
            return _json(self.api.update_scale(t.rt, t.namespace, name, await _body(request)))
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
            if t.subresource == "eviction" and t.name is not None:
                return "evict"
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
        if t.rt.crd:
            check_field_selector(t.rt, field_selector)
        if t.name is not None:  # legacy /watch/.../name
            field_selector = ",".join(filter(None, [field_selector, f"metadata.name={t.name}"]))
        getters = field_getters(resource, query.get("fieldSelector"))
        if getters is not None and t.name is not None:
            getters = {**getters, "metadata.name": lambda obj: obj["metadata"]["name"]}
        predicate = make_filter(query.get("labelSelector"), field_selector, None, getters)
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
        table = TableWatch(t.rt, query.get("includeObject")) if _wants_table(request) else None
        self._streams.add(response)
        try:
            await response.prepare(request)
            next_bookmark = time.monotonic() + self.bookmark_interval
            while True:
                if watcher.frames:
                    chunk = _convert(t.rt, b"".join(watcher.frames))
                    watcher.frames.clear()
                    if table is not None:
                        chunk = table.rows(chunk)
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

    # ---- OpenAPI -----------------------------------------------------------------------

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        """`/openapi/v2`, `/openapi/v3` (the index kubectl reads first) and `/openapi/v3/<gv>`."""
        if parts == ["v2"]:
            accept = request.headers.get("Accept", "")
            if any(t in accept for t in OPENAPI_V2_PROTOBUF):  # client-go asks for the older name
                response = web.Response(body=self.openapi.v2_protobuf())
                response.headers["Content-Type"] = OPENAPI_V2_PROTOBUF[0]
                return response
            return _raw(self.openapi.v2())
        if parts == ["v3"]:
            return _raw(self.openapi.v3_index())
        if len(parts) > 1 and parts[0] == "v3":
            path = "/".join(parts[1:])
            doc = self.openapi.v3(path)
            if doc is not None:
                response = _raw(doc)
                response.headers["Etag"] = f'"{self.openapi.etag(path)}"'
                return response
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # ---- admin -------------------------------------------------------------------------

    async def _admin(self, request: web.Request, parts: list[str]) -> web.Response:
        """`/_sim/faults` and `/_sim/access`: the test harness's controls, outside authorization."""
        if parts == ["faults"]:
            return await self._faults(request)
        if parts == ["access"]:
            return await self._access(request)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    async def _access(self, request: web.Request) -> web.Response:
        """GET shows the access table, PUT/POST replace it (YAML or JSON), DELETE allows all again."""
        if request.method == "DELETE":
            self.access.reset()
        elif request.method in ("POST", "PUT"):
            try:
                self.access.load(yaml.safe_load(await request.read()))
            except (ValueError, yaml.YAMLError) as err:
                raise errors.bad_request(f"bad access configuration: {err}") from err
        elif request.method != "GET":
            raise errors.method_not_allowed()
        return _json(self.access.describe())

    async def _faults(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return _json(self.faults.describe())
        if request.method == "DELETE":
            self.faults.clear()
            return _json(self.faults.describe())
        if request.method in ("POST", "PUT"):
            return _json(self.faults.apply(orjson.loads(await request.read())))
        raise errors.method_not_allowed()


def _dry_run(query: Any, verb: str) -> list[str]:
    """The `dryRun` query values; only "All" exists (422 otherwise, as upstream's options validation)."""
    values = query.getall("dryRun", [])
    if any(v != "All" for v in values):
        kind = {"update": "Update", "patch": "Patch", "delete": "Delete"}.get(verb, "Create")
        shown = ", ".join(orjson.dumps(v).decode() for v in values)
        raise ApiError(
            422,
            "Invalid",
            f'{kind}Options.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{{{shown}}}: '
            'supported values: "All"',
        )
    return values


class TableWatch:
    """Turns a watch stream's frames into Table rows, headers on the first event only (upstream)."""

    def __init__(self, rt: ResourceType, include: str | None) -> None:
        self.rt = rt
        self.include = include
        self.headers = True

    def rows(self, chunk: bytes) -> bytes:
        out = []
        for line in chunk.splitlines():
            event = orjson.loads(line)
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                entry = Entry(event["object"], b"")
                event["object"] = table_for(self.rt, [entry], None, self.include, headers=self.headers)
                self.headers = False
            out.append(orjson.dumps(event) + b"\n")
        return b"".join(out)


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")
