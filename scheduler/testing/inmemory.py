"""An API server and the scheduler's informers in memory, for benchmarks and tests in process.

``InMemoryCluster`` keeps the server's objects (Pods and Nodes as API views, other kinds as plain
dicts), answers what the scheduler sends (Bindings, status patches, deletes, events), and tells
the informer side of every change in order: the listers' stores first, then the handlers. Changes
reach the informers on the next turn of the event loop, as watch events do, or, with
``hold=True``, only when the test calls ``deliver``: the test then decides what the scheduler has
seen when (two nodes in one watch read, a delete while a pod is in flight, ...).
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from scheduler.api import Node, Pod
from scheduler.client.informer import EventHandler
from scheduler.client.pods import rfc3339_now
from scheduler.framework import ApiResponse

Obj = dict[str, Any]
T = TypeVar("T")


class InMemoryLister(Generic[T]):
    """``framework.ObjectLister`` over one of the informer side's dicts (a scan per label query:
    fine for the small clusters of tests)."""

    def __init__(self, entries: Mapping[str, T]) -> None:
        self._entries = entries

    def get(self, key: str) -> T | None:
        return self._entries.get(key)

    def list(self) -> builtins.list[T]:
        return builtins.list(self._entries.values())

    def with_label(self, namespace: str, key: str, value: str) -> builtins.list[T]:
        return [
            obj
            for name, obj in self._entries.items()
            if name.rpartition("/")[0] == namespace and _labels(obj).get(key) == value
        ]


def _labels(obj: object) -> Mapping[str, Any]:
    if isinstance(obj, Pod | Node):
        return obj.labels
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def not_found(what: str) -> ApiResponse:
    return ApiResponse(
        404, {"kind": "Status", "reason": "NotFound", "code": 404, "message": f"{what} not found"}
    )


def conflict(message: str) -> ApiResponse:
    return ApiResponse(409, {"kind": "Status", "reason": "Conflict", "code": 409, "message": message})


class InMemoryCluster:
    """The server's objects (``pods``, ``nodes``, ``objects[plural]``), the informers' stores
    (``seen_pods``, ``seen_nodes``, ``seen_objects[plural]``, behind ``listers``) and the
    undelivered changes between them."""

    def __init__(self, plurals: Mapping[str, str] | None = None, *, hold: bool = False) -> None:
        """``plurals``: the other kinds, lister name -> the API path of their collection, which
        the scheduler's writes address (e.g. ``{"resourceclaims":
        "/apis/resource.k8s.io/v1/resourceclaims"}``)."""
        self.pods: dict[str, Pod] = {}
        self.nodes: dict[str, Node] = {}
        self.objects: dict[str, dict[str, Obj]] = {plural: {} for plural in plurals or {}}
        self.seen_pods: dict[str, Pod] = {}
        self.seen_nodes: dict[str, Node] = {}
        self.seen_objects: dict[str, dict[str, Obj]] = {plural: {} for plural in plurals or {}}
        self.listers: dict[str, InMemoryLister[Any]] = {
            "pods": InMemoryLister(self.seen_pods),
            "nodes": InMemoryLister(self.seen_nodes),
            **{plural: InMemoryLister(store) for plural, store in self.seen_objects.items()},
        }
        self._collections = {path.strip("/"): plural for plural, path in (plurals or {}).items()}
        self.hold = hold
        self.undelivered: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self.refused_bindings = 0  # refuse this many of the next bindings (500, a server error)
        self.deleted_by_request = 0  # pods the scheduler deleted (preemption victims)
        # told of every pod the informers see change (old None for a new pod); e.g. a throughput count
        self.on_pod_seen: Callable[[Pod | None, Pod], None] | None = None
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)
        self._pod_events: EventHandler[Pod] | None = None
        self._node_events: EventHandler[Node] | None = None
        self._object_events: dict[str, EventHandler[Obj]] = {}

    def connect(
        self,
        pod_events: EventHandler[Pod],
        node_events: EventHandler[Node],
        object_events: Mapping[str, EventHandler[Obj]] | None = None,
    ) -> None:
        """The informers' handlers (``object_events`` by plural; kinds without one only fill
        their lister, as the app's ``_Ignore`` handler does)."""
        self._pod_events, self._node_events = pod_events, node_events
        self._object_events = dict(object_events or {})

    def current(self, pod: Pod) -> Pod | None:
        """The informer's copy of ``pod`` (None once it is gone)."""
        return self.seen_pods.get(pod.key)

    # ------------------------------------------------------------------ delivery

    def deliver(self, count: int | None = None) -> int:
        """Hand the next ``count`` changes (all by default) to the informers, in order, without
        letting the event loop run in between; how many were delivered."""
        delivered = 0
        while self.undelivered and (count is None or delivered < count):
            handler, args = self.undelivered.popleft()
            handler(*args)
            delivered += 1
        return delivered

    def _change(self, handler: Callable[..., None], *args: Any) -> None:
        if self.hold:
            self.undelivered.append((handler, args))
        else:
            asyncio.get_running_loop().call_soon(handler, *args)

    # ------------------------------------------------------------------ the test's operations

    def create_pod(self, body: Obj, node: str = "") -> Pod:
        meta = body["metadata"]
        obj = {
            **body,
            "metadata": {
                **meta,
                "uid": meta.get("uid") or f"uid-{next(self._uids)}",
                "resourceVersion": str(next(self._versions)),
                "creationTimestamp": rfc3339_now(),
            },
        }
        if node:
            obj["spec"] = {**obj["spec"], "nodeName": node}
        pod = Pod.from_dict(obj)
        self.pods[pod.key] = pod
        self._change(self._pod_changed, pod)
        return pod

    def delete_pod(self, key: str) -> Pod | None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self._change(self._pod_deleted, pod)
        return pod

    def create_node(self, body: Obj) -> Node:
        node = Node.from_dict(body)
        node.resource_version = str(next(self._versions))
        self.nodes[node.name] = node
        self._change(self._node_changed, node)
        return node

    update_node = create_node

    def delete_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is not None:
            self._change(self._node_deleted, node)

    def create_object(self, plural: str, body: Obj) -> Obj:
        """Create or replace an object of one of the other kinds."""
        meta = body.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._versions))
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta.setdefault("creationTimestamp", rfc3339_now())
        meta.setdefault("generation", 1)
        self.objects[plural][_key(body)] = body
        self._change(self._object_changed, plural, body)
        return body

    update_object = create_object

    def delete_object(self, plural: str, key: str) -> None:
        obj = self.objects[plural].pop(key, None)
        if obj is not None:
            self._change(self._object_deleted, plural, key, obj)

    def create_namespace(self, name: str) -> None:
        labels = {"kubernetes.io/metadata.name": name}
        self.create_object(
            "namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
        )

    # ------------------------------------------------------------------ the scheduler's requests

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> ApiResponse:
        parts = path.strip("/").split("/")
        if len(parts) >= 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
            key, sub = f"{parts[3]}/{parts[5]}", "/".join(parts[6:])
            if method == "POST" and sub == "binding":
                return self._bind(key, body)
            if method == "PATCH" and sub == "status":
                return self._patch_pod_status(key, body)
            if method == "DELETE" and not sub:
                return self._delete(key, body)
        if method == "POST" and parts[-1] == "events":
            return ApiResponse(201, {})
        address = self._address(parts)
        if address is not None:
            plural, key, sub = address
            if method == "PATCH" and sub == "status":
                return self._patch_object_status(plural, key, body)
            if method == "PUT" and sub in ("", "status"):
                return self._replace_object(plural, key, body, status_only=sub == "status")
        return not_found(f"{method} {path}")

    def _address(self, parts: list[str]) -> tuple[str, str, str] | None:
        """(plural, key, subresource) of a path naming one object of the other kinds."""
        group = parts[:2] if parts[:1] == ["api"] else parts[:3]
        rest = parts[len(group) :]
        namespace = ""
        if rest[:1] == ["namespaces"] and len(rest) >= 4:
            namespace, rest = rest[1], rest[2:]
        if len(rest) < 2:
            return None
        plural = self._collections.get("/".join([*group, rest[0]]))
        if plural is None:
            return None
        key = f"{namespace}/{rest[1]}" if namespace else rest[1]
        return plural, key, "/".join(rest[2:])

    def _bind(self, key: str, binding: Obj) -> ApiResponse:
        pod = self.pods.get(key)
        if pod is None:
            return not_found(f"pod {key}")
        if self.refused_bindings:
            self.refused_bindings -= 1
            return ApiResponse(500, {"kind": "Status", "reason": "InternalError", "code": 500})
        uid = (binding.get("metadata") or {}).get("uid")
        if uid and uid != pod.uid:
            return conflict(f"pod {key}: uid {uid} is not {pod.uid}")
        if pod.node_name:
            return conflict(f"pod {key} is already assigned to node {pod.node_name}")
        bound = pod.on_node(binding["target"]["name"])
        bound.resource_version = str(next(self._versions))
        self.pods[key] = bound
        self._change(self._pod_changed, bound)
        return ApiResponse(201, {"kind": "Status", "status": "Success"})

    def _patch_pod_status(self, key: str, patch: Obj) -> ApiResponse:
        """A strategic-merge patch of ``status`` (conditions merged by type, nominatedNodeName)."""
        pod = self.pods.get(key)
        if pod is None:
            return not_found(f"pod {key}")
        status = patch.get("status") or {}
        new = pod.on_node(pod.node_name)
        if "conditions" in status:
            conditions = {c.get("type"): dict(c) for c in pod.conditions}
            for change in status["conditions"]:
                conditions[change.get("type")] = {**conditions.get(change.get("type"), {}), **change}
            new.conditions = tuple(conditions.values())
        if "nominatedNodeName" in status:
            new.nominated_node_name = status["nominatedNodeName"] or ""
        new.resource_version = str(next(self._versions))
        self.pods[key] = new
        self._change(self._pod_changed, new)
        return ApiResponse(200, {})

    def _patch_object_status(self, plural: str, key: str, patch: Obj) -> ApiResponse:
        """A merge patch of another kind's ``status``."""
        obj = self.objects[plural].get(key)
        if obj is None:
            return not_found(f"{plural} {key}")
        updated = {**obj, "status": {**(obj.get("status") or {}), **(patch.get("status") or {})}}
        updated["metadata"] = {**obj["metadata"], "resourceVersion": str(next(self._versions))}
        self.objects[plural][key] = updated
        self._change(self._object_changed, plural, updated)
        return ApiResponse(200, updated)

    def _replace_object(self, plural: str, key: str, body: Obj, *, status_only: bool) -> ApiResponse:
        """An update with optimistic concurrency (the body's resourceVersion must be current);
        ``status_only`` keeps the stored spec, as the status subresource does."""
        obj = self.objects[plural].get(key)
        if obj is None:
            return not_found(f"{plural} {key}")
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent and sent != obj["metadata"]["resourceVersion"]:
            return conflict("the object has been modified; please apply your changes to the latest version")
        updated = {**obj, "status": body.get("status")} if status_only else {**body}
        updated["metadata"] = {**obj["metadata"], "resourceVersion": str(next(self._versions))}
        if not status_only:
            updated["metadata"] = {**(body.get("metadata") or {}), **updated["metadata"]}
        self.objects[plural][key] = updated
        self._change(self._object_changed, plural, updated)
        return ApiResponse(200, updated)

    def _delete(self, key: str, options: Obj | None) -> ApiResponse:
        """Deleted at once, as a pod without a grace period on a node no kubelet runs."""
        pod = self.pods.get(key)
        if pod is None:
            return not_found(f"pod {key}")
        uid = ((options or {}).get("preconditions") or {}).get("uid")
        if uid and uid != pod.uid:
            return conflict(f"pod {key}: precondition uid {uid} does not match")
        self.delete_pod(key)
        self.deleted_by_request += 1
        return ApiResponse(200, {"kind": "Status", "status": "Success"})

    # ------------------------------------------------------------------ the informers' side

    def _pod_changed(self, pod: Pod) -> None:
        assert self._pod_events is not None, "connect() first"
        old = self.seen_pods.get(pod.key)
        self.seen_pods[pod.key] = pod
        if self.on_pod_seen is not None:
            self.on_pod_seen(old, pod)
        if old is None:
            self._pod_events.on_add(pod)
        else:
            self._pod_events.on_update(old, pod)

    def _pod_deleted(self, pod: Pod) -> None:
        assert self._pod_events is not None, "connect() first"
        seen = self.seen_pods.pop(pod.key, None)
        if seen is not None:
            self._pod_events.on_delete(seen)

    def _node_changed(self, node: Node) -> None:
        assert self._node_events is not None, "connect() first"
        old = self.seen_nodes.get(node.name)
        self.seen_nodes[node.name] = node
        if old is None:
            self._node_events.on_add(node)
        else:
            self._node_events.on_update(old, node)

    def _node_deleted(self, node: Node) -> None:
        assert self._node_events is not None, "connect() first"
        seen = self.seen_nodes.pop(node.name, None)
        if seen is not None:
            self._node_events.on_delete(seen)

    def _object_changed(self, plural: str, obj: Obj) -> None:
        key = _key(obj)
        old = self.seen_objects[plural].get(key)
        self.seen_objects[plural][key] = obj
        handler = self._object_events.get(plural)
        if handler is None:
            return
        if old is None:
            handler.on_add(obj)
        else:
            handler.on_update(old, obj)

    def _object_deleted(self, plural: str, key: str, obj: Obj) -> None:
        seen = self.seen_objects[plural].pop(key, None)
        handler = self._object_events.get(plural)
        if handler is not None and seen is not None:
            handler.on_delete(seen)
