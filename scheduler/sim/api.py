"""The verbs of the API (create, get, list, update, patch, delete, bind) over the store.

Transport-free, raising ApiError with the real server's wording, so the HTTP layer, the
in-process `SimCluster.create` and the simulated controllers all share one code path.
"""

from __future__ import annotations

import base64
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import yaml

from scheduler.sim import errors
from scheduler.sim.defaults import prepare_create
from scheduler.sim.errors import ApiError
from scheduler.sim.patch import json_patch, merge_patch, strategic_merge_patch
from scheduler.sim.resources import BY_STORE_NAME, RESOURCES, ResourceType, store_name
from scheduler.sim.selectors import make_filter
from scheduler.sim.store import Entry, Event, Obj, Store

WITH_GENERATION = frozenset(
    {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "PodDisruptionBudget", "ResourceClaim"}
)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of generateName suffixes


def _now_second() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_clock_cache: list[Any] = [0, ""]


def now() -> str:
    """RFC 3339 timestamp with second precision, cached per second (hot on every create)."""
    second = int(time.time())
    if _clock_cache[0] != second:
        _clock_cache[0], _clock_cache[1] = second, _now_second()
    return _clock_cache[1]


def later(seconds: int) -> str:
    return datetime.fromtimestamp(time.time() + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class ListResult:
    entries: list[Entry]
    resource_version: int
    continue_token: str | None
    remaining: int | None


def _shallow(obj: Obj) -> Obj:
    """A new top-level dict with its own metadata dict; nested values stay shared and read-only."""
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    return new


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store
        # Bound pods go through graceful deletion only when a kubelet exists to finish it.
        self.graceful_pod_deletion = False
        self._dependents: dict[str, set[tuple[str, str]]] = {}
        store.listeners.append(self._index_owners)

    # ---- helpers -----------------------------------------------------------------------

    @staticmethod
    def resource(name: str) -> ResourceType:
        try:
            return BY_STORE_NAME[name]
        except KeyError:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({name})"
            ) from None

    def _require(self, rt: ResourceType, namespace: str | None, name: str) -> Entry:
        found = self.store.entry(store_name(rt), namespace if rt.namespaced else None, name)
        if found is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return found

    def _priorities(self) -> dict[str, int]:
        return {
            e.obj["metadata"]["name"]: int(e.obj.get("value", 0))
            for e in self.store.entries("priorityclasses")
        }

    def _index_owners(self, resource: str, event: Event) -> None:
        refs = event.obj["metadata"].get("ownerReferences")
        old_refs = event.prev["metadata"].get("ownerReferences") if event.prev else None
        if not refs and not old_refs:
            return
        meta = event.obj["metadata"]
        item = (resource, self.store.key(meta.get("namespace"), meta["name"]))
        for ref in old_refs or ():
            self._dependents.get(ref.get("uid", ""), set()).discard(item)
        if event.type != "DELETED":
            for ref in refs or ():
                self._dependents.setdefault(ref.get("uid", ""), set()).add(item)

    # ---- create / read -----------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str | None, body: Obj) -> Entry:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        meta = dict(body.get("metadata") or {})
        name = meta.get("name")
        if not name:
            prefix = meta.get("generateName")
            if not prefix:
                raise errors.invalid(
                    rt.kind, "", "metadata.name", "Required value: name or generateName is required", rt.group
                )
            name = prefix + "".join(random.choices(_NAME_CHARS, k=5))
        ns: str | None = None
        if rt.namespaced:
            ns = namespace or meta.get("namespace") or "default"
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            ns_entry = self.store.entry("namespaces", None, ns)
            if ns_entry is None:
                raise errors.not_found("namespaces", ns)
            if ns_entry.obj["metadata"].get("deletionTimestamp"):
                raise ApiError(
                    403,
                    "Forbidden",
                    f'{rt.plural} "{name}" is forbidden: unable to create new content in namespace {ns} '
                    "because it is being terminated",
                )
        resource = store_name(rt)
        key = self.store.key(ns, name)
        if self.store.entry(resource, ns, name) is not None:
            raise errors.already_exists(rt.plural, name, rt.group)
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"):
            meta.pop(transient, None)
        meta["name"] = name
        if ns is not None:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rt.kind in WITH_GENERATION:
            meta["generation"] = 1
        obj: Obj = {"kind": rt.kind, "apiVersion": rt.group_version}
        obj.update((k, v) for k, v in body.items() if k not in ("kind", "apiVersion"))
        obj["metadata"] = meta
        obj = prepare_create(rt, obj, self._priorities() if rt.kind == "Pod" else {})
        meta["resourceVersion"] = str(self.store.next_revision())
        return self.store.put(resource, key, obj, "ADDED")

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Entry:
        return self._require(rt, namespace, name)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ListResult:
        predicate = make_filter(label_selector, field_selector, None)
        current = self.store.revision
        if resource_version not in (None, "", "0"):
            try:
                wanted = int(resource_version)
            except ValueError:
                raise errors.bad_request(f"invalid resource version: {resource_version}") from None
            if wanted > current:
                raise ApiError(
                    504,
                    "Timeout",
                    f"Too large resource version: {wanted}, current: {current}",
                    details={
                        "causes": [
                            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
        after = None
        list_rv = current
        if continue_token:
            try:
                state = orjson.loads(base64.urlsafe_b64decode(continue_token.encode()))
                after, list_rv = state["start"], int(state["rv"])
            except (ValueError, KeyError, TypeError):
                raise errors.bad_request("continue key is not valid: illegal base64 data") from None
        ns = namespace if rt.namespaced else None
        items: list[Entry] = []
        token = None
        remaining = None
        source = self.store.entries(store_name(rt), ns, after)
        for entry in source:
            if predicate is not None and not predicate(entry.obj):
                continue
            if limit and len(items) >= limit:
                last = items[-1].obj["metadata"]
                start = self.store.key(last.get("namespace"), last["name"])
                token = base64.urlsafe_b64encode(orjson.dumps({"rv": list_rv, "start": start})).decode()
                if predicate is None:
                    remaining = 1 + sum(1 for _ in source)
                break
            items.append(entry)
        return ListResult(items, list_rv, token, remaining)

    # ---- update / patch ----------------------------------------------------------------

    def update(
        self, rt: ResourceType, namespace: str | None, name: str, body: Obj, subresource: str | None = None
    ) -> Entry:
        current = self._require(rt, namespace, name)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object does not match the name on the URL")
        wanted = meta.get("resourceVersion")
        if wanted and wanted != current.obj["metadata"]["resourceVersion"]:
            raise errors.stale(rt.plural, name, rt.group)
        return self._write(rt, current, body, subresource)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        raw: bytes,
        subresource: str | None = None,
    ) -> tuple[Entry, bool]:
        """Apply a patch; returns the entry and whether it was created (server-side apply only)."""
        content_type = content_type.split(";")[0].strip()
        try:
            if content_type == "application/apply-patch+yaml":
                patch = yaml.safe_load(raw)
            else:
                patch = orjson.loads(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError) as err:
            raise errors.bad_request(f"error decoding patch: {err}") from err
        found = self.store.entry(store_name(rt), namespace if rt.namespaced else None, name)
        if found is None:
            if content_type == "application/apply-patch+yaml" and subresource is None:
                return self.create(rt, namespace, patch), True
            raise errors.not_found(rt.plural, name, rt.group)
        base = found.obj
        if content_type == "application/merge-patch+json":
            merged = merge_patch(base, patch)
        elif content_type in ("application/strategic-merge-patch+json", "application/apply-patch+yaml"):
            merged = strategic_merge_patch(base, patch)
        elif content_type == "application/json-patch+json":
            merged = json_patch(base, patch)
        else:
            raise errors.unsupported_media_type(content_type)
        if not isinstance(merged, dict):
            raise errors.bad_request("the patch must leave an object")
        merged = orjson.loads(orjson.dumps(merged))  # private copy: the stored dict stays untouched
        meta = merged.get("metadata") or {}
        if meta.get("resourceVersion") != base["metadata"]["resourceVersion"]:
            raise errors.stale(rt.plural, name, rt.group)
        return self._write(rt, found, merged, subresource), False

    def _write(self, rt: ResourceType, current: Entry, body: Obj, subresource: str | None) -> Entry:
        old = current.obj
        if subresource == "status":
            new = _shallow(old)
            new["status"] = body.get("status")
            if new["status"] is None:
                new.pop("status")
        else:
            new = {"kind": rt.kind, "apiVersion": rt.group_version}
            new.update((k, v) for k, v in body.items() if k not in ("kind", "apiVersion"))
            meta = dict(body.get("metadata") or {})
            old_meta = old["metadata"]
            for fixed in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if fixed in old_meta:
                    meta[fixed] = old_meta[fixed]
                else:
                    meta.pop(fixed, None)
            meta.pop("managedFields", None)
            new["metadata"] = meta
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if "generation" in meta and new.get("spec") != old.get("spec"):
                meta["generation"] = meta["generation"] + 1
        return self._commit(rt, current, new)

    def _commit(self, rt: ResourceType, current: Entry, new: Obj) -> Entry:
        old = current.obj
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return current  # a no-op write keeps the version and emits no event, like the real server
        meta = new["metadata"]
        key = self.store.key(meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and old["metadata"].get("finalizers") and not meta.get("finalizers"):
            meta["resourceVersion"] = str(self.store.next_revision())
            return self._remove(rt, key, new, orphan=False)
        meta["resourceVersion"] = str(self.store.next_revision())
        return self.store.put(store_name(rt), key, new, "MODIFIED")

    # ---- delete ------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str | None, name: str, options: Obj | None = None
    ) -> tuple[Entry, bool]:
        """Delete or start deleting; returns the final or terminating state and whether it is gone."""
        options = options or {}
        current = self._require(rt, namespace, name)
        old = current.obj
        meta = old["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise errors.conflict(
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta['uid']}",
                rt.group,
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise errors.conflict(
                rt.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta['resourceVersion']}",
                rt.group,
            )
        orphan = options.get("propagationPolicy") == "Orphan" or options.get("orphanDependents") is True
        key = self.store.key(meta.get("namespace"), name)
        grace = options.get("gracePeriodSeconds")
        if rt.kind == "Pod" and self._graceful(old, grace):
            if meta.get("deletionTimestamp"):
                return current, False
            seconds = int(
                grace if grace is not None else old["spec"].get("terminationGracePeriodSeconds", 30)
            )
            new = _shallow(old)
            new["metadata"]["deletionTimestamp"] = later(seconds)
            new["metadata"]["deletionGracePeriodSeconds"] = seconds
            new["metadata"]["resourceVersion"] = str(self.store.next_revision())
            return self.store.put(store_name(rt), key, new, "MODIFIED"), False
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return current, False
            new = _shallow(old)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["metadata"]["resourceVersion"] = str(self.store.next_revision())
            return self.store.put(store_name(rt), key, new, "MODIFIED"), False
        final = _shallow(old)
        final["metadata"]["resourceVersion"] = str(self.store.next_revision())
        return self._remove(rt, key, final, orphan), True

    def _graceful(self, pod: Obj, grace: Any) -> bool:
        if not self.graceful_pod_deletion or grace == 0:
            return False
        if not pod.get("spec", {}).get("nodeName"):
            return False
        return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")

    def _remove(self, rt: ResourceType, key: str, final: Obj, orphan: bool) -> Entry:
        resource = store_name(rt)
        entry = self.store.remove(resource, key, final)
        uid = final["metadata"]["uid"]
        for dep_resource, dep_key in sorted(self._dependents.pop(uid, ())):
            self._collect(BY_STORE_NAME[dep_resource], dep_key, uid, orphan)
        if rt.kind == "Namespace":
            ns = final["metadata"]["name"]
            for other in RESOURCES:
                if other.namespaced:
                    for dependent in list(self.store.entries(store_name(other), ns)):
                        dm = dependent.obj["metadata"]
                        if self.store.entry(store_name(other), ns, dm["name"]) is not None:
                            self.delete(other, ns, dm["name"], {"gracePeriodSeconds": 0})
        return entry

    def _collect(self, rt: ResourceType, key: str, owner_uid: str, orphan: bool) -> None:
        """The garbage collector's share: delete a dependent of a deleted owner, or orphan it."""
        namespace, _, name = key.rpartition("/")
        current = self.store.entry(store_name(rt), namespace or None, name)
        if current is None:
            return
        if orphan:
            new = _shallow(current.obj)
            refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self._commit(rt, current, new)
        else:
            self.delete(rt, namespace or None, name, {"propagationPolicy": "Background"})

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        options: Obj | None,
    ) -> list[Entry]:
        listed = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)
        gone = []
        for entry in listed.entries:
            meta = entry.obj["metadata"]
            if self.store.entry(store_name(rt), meta.get("namespace"), meta["name"]) is not None:
                gone.append(self.delete(rt, meta.get("namespace"), meta["name"], options)[0])
        return gone

    # ---- scale subresource -------------------------------------------------------------

    def scale(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        """The autoscaling/v1 Scale view of a workload."""
        obj = self._require(rt, namespace, name).obj
        meta = obj["metadata"]
        selector = (obj["spec"].get("selector") or {}).get("matchLabels") or {}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            },
            "spec": {"replicas": obj["spec"].get("replicas", 1)},
            "status": {
                "replicas": (obj.get("status") or {}).get("replicas", 0),
                "selector": ",".join(f"{k}={v}" for k, v in selector.items()),
            },
        }

    def update_scale(self, rt: ResourceType, namespace: str | None, name: str, scale: Obj) -> Obj:
        current = self._require(rt, namespace, name)
        wanted = (scale.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current.obj["metadata"]["resourceVersion"]:
            raise errors.stale(rt.plural, name, rt.group)
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(
                "Scale", name, "spec.replicas", "Invalid value: must be greater than or equal to 0"
            )
        obj = current.obj
        self._write(rt, current, {**obj, "spec": {**obj["spec"], "replicas": replicas}}, None)
        return self.scale(rt, namespace, name)

    def patch_scale(
        self, rt: ResourceType, namespace: str | None, name: str, content_type: str, raw: bytes
    ) -> Obj:
        content_type = content_type.split(";")[0].strip()
        base = self.scale(rt, namespace, name)
        patch = orjson.loads(raw)
        if content_type == "application/json-patch+json":
            merged = json_patch(base, patch)
        elif content_type == "application/merge-patch+json":
            merged = merge_patch(base, patch)
        else:
            merged = strategic_merge_patch(base, patch)
        return self.update_scale(rt, namespace, name, merged)

    # ---- pods/binding ------------------------------------------------------------------

    def bind(
        self, namespace: str, name: str, binding: Obj, conflict: Callable[[], bool] = lambda: False
    ) -> Entry:
        """Assign a pod to a node the way BindingREST does: once, and never while it is being deleted."""
        rt = BY_STORE_NAME["pods"]
        bmeta = binding.get("metadata") or {}
        if bmeta.get("name") and bmeta["name"] != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        target = binding.get("target") or {}
        node = target.get("name")
        if not node:
            raise errors.invalid("Binding", name, "target.name", "Required value")
        if target.get("kind") not in (None, "", "Node"):
            raise errors.invalid(
                "Binding", name, "to.kind", f"Invalid value: \"{target['kind']}\": must be empty or 'Node'"
            )
        current = self._require(rt, namespace, name)
        pod = current.obj
        pmeta = pod["metadata"]
        if conflict():
            raise errors.conflict("pods/binding", name, errors.STALE)
        if bmeta.get("uid") and bmeta["uid"] != pmeta["uid"]:
            raise errors.conflict(
                "pods/binding",
                name,
                f"Precondition failed: UID in precondition: {bmeta['uid']}, "
                f"UID in object meta: {pmeta['uid']}",
            )
        if pmeta.get("deletionTimestamp"):
            raise errors.conflict(
                "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        assigned = pod["spec"].get("nodeName")
        if assigned:
            raise errors.conflict(
                "pods/binding", name, f'pod {name} is already assigned to node "{assigned}"'
            )
        if pod["spec"].get("schedulingGates"):
            raise errors.conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
        new = _shallow(pod)
        new["spec"] = dict(pod["spec"])
        new["spec"]["nodeName"] = node
        if bmeta.get("annotations"):
            new["metadata"]["annotations"] = {**(pmeta.get("annotations") or {}), **bmeta["annotations"]}
        status = dict(pod.get("status") or {})
        status.pop("nominatedNodeName", None)  # ClearingNominatedNodeNameAfterBinding (beta, on)
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
        )
        status["conditions"] = conditions
        new["status"] = status
        new["metadata"]["resourceVersion"] = str(self.store.next_revision())
        return self.store.put("pods", self.store.key(namespace, name), new, "MODIFIED")
