"""The API JSON of the pods and nodes sent to extenders.

Upstream sends whole ``v1.Pod`` and ``v1.Node`` objects; the scheduler's views (``scheduler.api``)
keep only what scheduling reads. So, when extenders are configured, the pod and node informers
also keep the JSON they decoded (``ApiObjects.pods``/``.nodes`` wrap their decoder and handler),
as trimmed as upstream's informer objects (no ``managedFields`` for pods, no kind/apiVersion),
and only what some extender will be sent: the pending pods always (the pod being scheduled, its
resources for ``managedResources``), the bound ones only for an extender that preempts without
``nodeCacheCapable`` (it gets the victims whole), the nodes only for an extender without
``nodeCacheCapable`` that filters or prioritizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from scheduler.api import Node, Pod
from scheduler.client.informer import EventHandler
from scheduler.config import Extender as ExtenderConfig

T = TypeVar("T")
Json = dict[str, Any]

_TYPE_META = ("kind", "apiVersion")


class KeptJson(Generic[T]):
    """The latest API JSON of the objects ``wanted`` says to keep, by ``key``, with the uid of the
    object it belongs to (a node deleted and created again under its name keeps the new one's)."""

    def __init__(
        self,
        key: Callable[[T], str],
        uid: Callable[[T], str],
        wanted: Callable[[T], bool],
        trim: Callable[[Json], Json],
    ) -> None:
        self._key = key
        self._uid = uid
        self._wanted = wanted
        self._trim = trim
        self._json: dict[str, tuple[str, Json]] = {}

    def __len__(self) -> int:
        return len(self._json)

    def get(self, obj: T) -> Json | None:
        kept = self._json.get(self._key(obj))
        return kept[1] if kept is not None else None

    def decoder(self, decode: Callable[[Json], T]) -> Callable[[Json], T]:
        """``decode``, keeping (or dropping) the object's JSON as it goes."""

        def decode_and_keep(raw: Json) -> T:
            obj = decode(raw)
            if self._wanted(obj):
                self._json[self._key(obj)] = (self._uid(obj), self._trim(raw))
            else:
                self._json.pop(self._key(obj), None)
            return obj

        return decode_and_keep

    def handler(self, inner: EventHandler[T]) -> _Forgetting[T]:
        """The informer's ``inner`` handler, dropping the JSON of deleted objects."""
        return _Forgetting(inner, self)

    def forget(self, obj: T) -> None:
        """A deleted object: its JSON goes, unless it is already its successor's."""
        key = self._key(obj)
        kept = self._json.get(key)
        if kept is not None and kept[0] == self._uid(obj):
            del self._json[key]


class _Forgetting(Generic[T]):
    def __init__(self, inner: EventHandler[T], kept: KeptJson[T]) -> None:
        self._inner = inner
        self._kept = kept

    def on_add(self, obj: T) -> None:
        self._inner.on_add(obj)

    def on_update(self, old: T, new: T) -> None:
        self._inner.on_update(old, new)

    def on_delete(self, obj: T) -> None:
        self._kept.forget(obj)
        self._inner.on_delete(obj)


def _uid(obj: Pod | Node) -> str:
    return obj.uid


def _trim_pod(raw: Json) -> Json:
    """As upstream's pod informer keeps it: no managedFields (and no type meta, as decoded)."""
    pod = {k: v for k, v in raw.items() if k not in _TYPE_META}
    meta = raw.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        pod["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return pod


def _trim_node(raw: Json) -> Json:
    return {k: v for k, v in raw.items() if k not in _TYPE_META}


class ApiObjects:
    """What the informers keep for the extenders, and the JSON sent for a pod or a node."""

    def __init__(self, *, bound_pods: bool = False, nodes: bool = False) -> None:
        self.pods: KeptJson[Pod] = KeptJson(
            _uid, _uid, lambda pod: bound_pods or not pod.node_name, _trim_pod
        )
        self.nodes: KeptJson[Node] = KeptJson(lambda node: node.name, _uid, lambda _node: nodes, _trim_node)

    @classmethod
    def for_extenders(cls, configs: list[ExtenderConfig]) -> ApiObjects:
        """Keep what these extenders will be sent (see the module docstring)."""
        whole = [c for c in configs if not c.node_cache_capable]
        return cls(
            bound_pods=any(c.preempt_verb for c in whole),
            nodes=any(c.filter_verb or c.prioritize_verb for c in whole),
        )

    def pod_json(self, pod: Pod) -> Json:
        return self.pods.get(pod) or _pod_stand_in(pod)

    def node_json(self, node: Node) -> Json:
        return self.nodes.get(node) or _node_stand_in(node)


def _pod_stand_in(pod: Pod) -> Json:
    """What the view knows, when the JSON was not kept (tools and tests without informers)."""
    spec: Json = {"schedulerName": pod.scheduler_name, "priority": pod.priority}
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    return {
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "labels": dict(pod.labels),
            "annotations": dict(pod.annotations),
        },
        "spec": spec,
        "status": {"phase": pod.phase},
    }


def _node_stand_in(node: Node) -> Json:
    return {"metadata": {"name": node.name, "uid": node.uid, "labels": dict(node.labels)}}
