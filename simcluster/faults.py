"""Run-time fault injection: error rates, latency, dropped watches, forced 410s, binding conflicts,
and malformed objects.

The request path asks the injector before doing any work, so an injected error leaves the
store untouched exactly like a request rejected by a real server's front door.

`inject_raw` stores an object exactly as given, past validation and defaulting (a null, a
string where an object belongs, quantities no server would accept), so clients' LISTs and
WATCHes serve it like any other object: what a hostile proxy or a buggy server could send.
Only its resourceVersion is stamped when it has a metadata object. The simulator itself (list
filters, controllers, the kubelet) reads a harmless stand-in: the object's name, namespace and
uid with an empty spec and status; run `SimCluster(controllers=False)` when their reactions to
that stand-in would get in the way. A PATCH of an injected object applies to the object as
given and leaves it unvalidated (so a client can still write a status condition on it); a PUT
replaces it through the usual validation, a DELETE removes it.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from simcluster.errors import STALE, ApiError, bad_request, conflict, injected, unsupported_media_type
from simcluster.patch import json_patch, merge_patch, strategic_merge_patch
from simcluster.resources import BY_STORE_NAME

if TYPE_CHECKING:
    from simcluster.store import Entry, Store

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind")


@dataclass(slots=True)
class ErrorRule:
    verb: str | None  # None: every verb
    resource: str | None  # None: every resource
    rate: float
    code: int = 500
    retry_after: int | None = None

    def applies(self, verb: str, resource: str) -> bool:
        return (self.verb in (None, "*", verb)) and (self.resource in (None, "*", resource))


@dataclass(slots=True)
class LatencyRule:
    seconds: float
    verb: str | None = None
    resource: str | None = None

    def applies(self, verb: str, resource: str) -> bool:
        return (self.verb in (None, "*", verb)) and (self.resource in (None, "*", resource))


@dataclass(slots=True)
class FaultInjector:
    """Switchable faults; `clear()` restores a healthy server."""

    store: Store
    errors: list[ErrorRule] = field(default_factory=list)
    latencies: list[LatencyRule] = field(default_factory=list)
    gone_next_watch: list[str | None] = field(default_factory=list)
    binding_conflicts: int = 0
    rng: random.Random = field(default_factory=random.Random)
    # injected objects by (resource, store key); one counts while the store still holds that entry
    raw: dict[tuple[str, str], Entry] = field(default_factory=dict)

    def set_error(
        self,
        verb: str | None,
        resource: str | None,
        rate: float,
        code: int = 500,
        retry_after: int | None = None,
    ) -> None:
        """Fail `rate` (0..1) of matching requests with `code` (429 answers carry Retry-After)."""
        if code == 429 and retry_after is None:
            retry_after = 1
        self.errors = [e for e in self.errors if (e.verb, e.resource) != (verb, resource)]
        if rate > 0:
            self.errors.append(ErrorRule(verb, resource, rate, code, retry_after))

    def set_latency(self, seconds: float, verb: str | None = None, resource: str | None = None) -> None:
        self.latencies = [lat for lat in self.latencies if (lat.verb, lat.resource) != (verb, resource)]
        if seconds > 0:
            self.latencies.append(LatencyRule(seconds, verb, resource))

    def drop_watches(self, resource: str | None = None) -> int:
        """End open watch streams (as a restarting apiserver would); returns how many."""
        dropped = self.store.watchers(resource)
        for watcher in dropped:
            watcher.close()
        return len(dropped)

    def force_gone_next_watch(self, resource: str | None = None) -> None:
        self.gone_next_watch.append(resource)

    def compact(self) -> None:
        self.store.compact()

    def conflict_next_bindings(self, n: int) -> None:
        self.binding_conflicts = n

    def inject_raw(
        self, resource: str, obj: Any, *, name: str | None = None, namespace: str | None = None
    ) -> int:
        """Store `obj` as given (added, or replacing what is stored under that name); returns its
        resourceVersion. `name` and `namespace` place an object whose metadata does not say
        (no name, or no metadata object at all); a namespaced kind defaults to "default"."""
        rt = BY_STORE_NAME.get(resource)
        if rt is None:
            raise bad_request(f"cannot inject into unknown resource {resource!r}")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        name = name or _text(meta.get("name"))
        if not name:
            raise bad_request("an object without a string metadata.name needs an explicit name")
        ns = (namespace or _text(meta.get("namespace")) or "default") if rt.namespaced else None
        key = self.store.key(ns, name)
        event = "ADDED" if self.store.entry(resource, ns, name) is None else "MODIFIED"
        rv = str(self.store.next_revision())
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}
        stand_in: dict[str, Any] = {
            "kind": rt.kind,
            "apiVersion": rt.stored_api_version,
            "metadata": {"name": name, "uid": _text(meta.get("uid")), "resourceVersion": rv},
            "spec": {},
            "status": {},
        }
        if ns is not None:
            stand_in["metadata"]["namespace"] = ns
        entry = self.store.put(resource, key, stand_in, event, raw=_encode(obj))
        self.raw[(resource, key)] = entry
        return int(rv)

    def is_raw(self, resource: str, namespace: str | None, name: str) -> bool:
        """Whether the store still holds an injected object under that name."""
        key = self.store.key(namespace, name)
        entry = self.raw.get((resource, key))
        return entry is not None and self.store.entry(resource, namespace, name) is entry

    def patch_raw(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        content_type: str,
        body: bytes,
        subresource: str | None,
    ) -> Entry | None:
        """Apply a PATCH to an injected object as given (None: not an injected object); the
        status subresource changes only the status."""
        if subresource not in (None, "status") or not self.is_raw(resource, namespace, name):
            return None
        key = self.store.key(namespace, name)
        current = orjson.loads(self.raw[(resource, key)].raw)
        content_type = content_type.split(";")[0].strip()
        merge = {
            "application/merge-patch+json": merge_patch,
            "application/strategic-merge-patch+json": strategic_merge_patch,
            "application/json-patch+json": json_patch,
        }.get(content_type)
        if merge is None:
            raise unsupported_media_type(content_type)
        try:
            patched = merge(current, orjson.loads(body))
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as err:
            raise ApiError(
                422, "Invalid", f"cannot apply the patch to the injected object {resource} {key}: {err}"
            ) from err
        if subresource == "status":
            if not isinstance(current, dict) or not isinstance(patched, dict):
                raise ApiError(422, "Invalid", f"the injected object {resource} {key} has no status")
            patched = {**current, "status": patched.get("status")}
        self.inject_raw(resource, patched, name=name, namespace=namespace)
        return self.raw[(resource, key)]

    def bind_raw(self, namespace: str, name: str, binding: Any) -> bool:
        """Bind an injected pod as given (False: not an injected pod); like any binding it
        happens once, and a conflict injected for the next bindings applies to it too."""
        if not self.is_raw("pods", namespace, name):
            return False
        pod = orjson.loads(self.raw[("pods", self.store.key(namespace, name))].raw)
        target = (binding.get("target") if isinstance(binding, dict) else None) or {}
        node = target.get("name") if isinstance(target, dict) else None
        spec = pod.get("spec") if isinstance(pod, dict) else None
        if not node or not isinstance(spec, dict):
            raise ApiError(422, "Invalid", f"cannot bind the injected pod {namespace}/{name}")
        if self.take_binding_conflict():
            raise conflict("pods/binding", name, STALE)
        if spec.get("nodeName"):
            raise conflict(
                "pods/binding", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
            )
        pod = {**pod, "spec": {**spec, "nodeName": node}}
        status = pod.get("status")
        if isinstance(status, dict) and isinstance(status.get("conditions", []), list):
            kept = [
                c
                for c in status.get("conditions", [])
                if not (isinstance(c, dict) and c.get("type") == "PodScheduled")
            ]
            scheduled = {"type": "PodScheduled", "status": "True"}
            pod["status"] = {**status, "conditions": [*kept, scheduled]}
            pod["status"].pop("nominatedNodeName", None)
        self.inject_raw("pods", pod, name=name, namespace=namespace)
        return True

    def clear(self) -> None:
        self.errors.clear()
        self.latencies.clear()
        self.gone_next_watch.clear()
        self.binding_conflicts = 0

    # ---- consulted by the request path ---------------------------------------------------

    def latency(self, verb: str, resource: str) -> float:
        return sum(lat.seconds for lat in self.latencies if lat.applies(verb, resource))

    def check(self, verb: str, resource: str) -> None:
        for rule in self.errors:
            if rule.applies(verb, resource) and self.rng.random() < rule.rate:
                raise injected(rule.code, rule.retry_after)

    def take_gone(self, resource: str) -> bool:
        for i, wanted in enumerate(self.gone_next_watch):
            if wanted in (None, resource):
                del self.gone_next_watch[i]
                return True
        return False

    def take_binding_conflict(self) -> bool:
        if self.binding_conflicts > 0:
            self.binding_conflicts -= 1
            return True
        return False

    # ---- admin API (JSON in/out) -----------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "errors": [asdict(e) for e in self.errors],
            "latencies": [asdict(lat) for lat in self.latencies],
            "goneNextWatch": list(self.gone_next_watch),
            "bindingConflicts": self.binding_conflicts,
            "watchers": len(self.store.watchers()),
            "revision": self.store.revision,
            "rawObjects": sum(1 for (resource, key) in self.raw if self._still_raw(resource, key)),
        }

    def _still_raw(self, resource: str, key: str) -> bool:
        namespace, _, name = key.rpartition("/")
        return self.is_raw(resource, namespace or None, name)

    def apply(self, command: dict[str, Any]) -> dict[str, Any]:
        """Execute one admin command, e.g. {"action": "setError", "verb": "create", "rate": 1}."""
        action = command.get("action")
        try:
            if action == "setError":
                self.set_error(
                    command.get("verb"),
                    command.get("resource"),
                    float(command["rate"]),
                    int(command.get("code", 500)),
                    command.get("retryAfter"),
                )
            elif action == "setLatency":
                self.set_latency(float(command["seconds"]), command.get("verb"), command.get("resource"))
            elif action == "dropWatches":
                return {**self.describe(), "dropped": self.drop_watches(command.get("resource"))}
            elif action == "forceGoneNextWatch":
                self.force_gone_next_watch(command.get("resource"))
            elif action == "compact":
                self.compact()
            elif action == "conflictNextBindings":
                self.conflict_next_bindings(int(command["n"]))
            elif action == "injectRaw":
                rv = self.inject_raw(
                    command["resource"],
                    command["object"],
                    name=command.get("name"),
                    namespace=command.get("namespace"),
                )
                return {**self.describe(), "resourceVersion": str(rv)}
            elif action == "clear":
                self.clear()
            else:
                raise ApiError(400, "BadRequest", f"unknown fault action {action!r}")
        except (KeyError, TypeError, ValueError) as err:
            raise ApiError(400, "BadRequest", f"bad fault command {command!r}: {err}") from err
        return self.describe()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _encode(obj: Any) -> bytes:
    """JSON of an injected object; integers beyond 64 bits too, which orjson refuses."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except (TypeError, ValueError, RecursionError) as err:
            raise bad_request(f"the object cannot be served as JSON: {err}") from err
