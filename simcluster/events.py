"""core/v1 Events and events.k8s.io/v1 Events: one stored resource, seen two ways.

The real API server keeps one Event per object and converts it for each group, so an event
the scheduler writes through events.k8s.io shows in `kubectl describe`, `kubectl get events`
and `kubectl events`, which read core/v1. The store keeps the core/v1 form under "events";
"events.events.k8s.io" is a store view converting both ways with upstream's field mapping:

    events.k8s.io/v1           core/v1
    regarding                  involvedObject
    note                       message
    reportingController        reportingComponent
    reportingInstance          reportingInstance
    deprecatedSource           source
    deprecatedFirstTimestamp   firstTimestamp
    deprecatedLastTimestamp    lastTimestamp
    deprecatedCount            count
    (same name)                reason, type, action, related, series, eventTime

Fields Go always writes (no `omitempty`, or a struct) appear even when empty, as on a real
server. Field selectors accept upstream's field labels per group and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simcluster.errors import bad_request
from simcluster.selectors import field_value, parse_field_selector

if TYPE_CHECKING:
    from simcluster.store import Store

Obj = dict[str, Any]
CORE, EVENTS_V1 = "events", "events.events.k8s.io"
Getter = Callable[[Obj], str]

# (events.k8s.io/v1 name, core/v1 name); `None` for a field read the same in both
_RENAMED = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_SHARED = ("reason", "type", "action", "related", "series", "eventTime", "reportingInstance")
# what Go's JSON encoder writes for an empty field of each form
_CORE_ALWAYS: Obj = {
    "involvedObject": {},
    "source": {},
    "firstTimestamp": None,
    "lastTimestamp": None,
    "eventTime": None,
    "reportingComponent": "",
    "reportingInstance": "",
}
_V1_ALWAYS: Obj = {
    "eventTime": None,
    "regarding": {},
    "deprecatedSource": {},
    "deprecatedFirstTimestamp": None,
    "deprecatedLastTimestamp": None,
}


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == 0 or value == {} or value == []


def _convert(obj: Obj, api_version: str, pairs: list[tuple[str, str]], always: Obj) -> Obj:
    out: Obj = {"kind": "Event", "apiVersion": api_version, "metadata": obj.get("metadata") or {}}
    for source, target in pairs:
        value = obj.get(source)
        if not _empty(value):
            out[target] = value
        elif target in always:
            out[target] = always[target]
    return out


def to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event as core/v1."""
    pairs = [*((n, n) for n in _SHARED), *_RENAMED]
    return _convert(obj, "v1", pairs, _CORE_ALWAYS)


def to_events_v1(obj: Obj) -> Obj:
    """A core/v1 Event as events.k8s.io/v1."""
    pairs = [*((n, n) for n in _SHARED), *((core, v1) for v1, core in _RENAMED)]
    return _convert(obj, "events.k8s.io/v1", pairs, _V1_ALWAYS)


def normalize_core(obj: Obj) -> Obj:
    """A core/v1 Event as the server stores and answers it (empty fields spelled out)."""
    pairs = [(n, n) for n in (*_SHARED, *(core for _, core in _RENAMED), "involvedObject")]
    return _convert(obj, "v1", pairs, _CORE_ALWAYS)


def _path(path: str) -> Getter:
    return lambda obj: field_value(obj, path)


def _source(event: Obj) -> str:
    """`source` selects the source component, or the reporting controller when there is none."""
    return (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""


_OBJECT_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_META = {"metadata.name": _path("metadata.name"), "metadata.namespace": _path("metadata.namespace")}
SELECTABLE: dict[str, dict[str, Getter]] = {
    CORE: {
        **{f"involvedObject.{f}": _path(f"involvedObject.{f}") for f in _OBJECT_FIELDS},
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _source,
        "type": _path("type"),
        **_META,
    },
    EVENTS_V1: {
        **{f"regarding.{f}": _path(f"regarding.{f}") for f in _OBJECT_FIELDS},
        "reason": _path("reason"),
        "reportingController": _path("reportingController"),
        "type": _path("type"),
        **_META,
    },
}


def field_getters(resource: str, field_selector: str | None) -> dict[str, Getter] | None:
    """How to read each selectable field of an Event form; 400 for a label the group lacks."""
    fields = SELECTABLE.get(resource)
    if fields is None or not field_selector:
        return None
    for path, _, _ in parse_field_selector(field_selector):
        if path not in fields:
            raise bad_request(f"field label not supported: {path}")
    return fields


def add_views(store: Store) -> None:
    """Serve the stored core/v1 Events also as events.k8s.io/v1."""
    store.add_view(EVENTS_V1, CORE, to_events_v1, to_core)
