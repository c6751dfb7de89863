"""The verbs of the API (create, get, list, update, patch, delete, bind) over the store.

Transport-free, raising ApiError with the real server's wording, so the HTTP layer, the
in-process `SimCluster.create` and the simulated controllers all share one code path.
"""

from __future__ import annotations

import base64
import builtins
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import yaml

from simcluster import crds, errors
from simcluster.defaults import prepare_create, prepare_status_update, prepare_update
from simcluster.errors import ApiError
from simcluster.events import add_views as add_event_views
from simcluster.events import field_getters
from simcluster.fieldvalidation import Validation, decode, go_map, node_for
from simcluster.patch import json_patch, merge_patch, strategic_merge_patch
from simcluster.resources import BY_STORE_NAME, Kinds, ResourceType, store_name
from simcluster.selectors import make_filter
from simcluster.store import Entry, Event, Obj, Store
from simcluster.structural import invalid as invalid_fields
from simcluster.structural import validate as validate_custom

WITH_GENERATION = frozenset(
    {
        "Pod",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "PodDisruptionBudget",
        "ResourceClaim",
        "DeviceClass",
        "ResourceSlice",
        "PodGroup",  # its PodGroupScheduled condition observes the generation
        "Workload",
        "CustomResourceDefinition",
    }
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


def _unstored(obj: Obj) -> Entry:
    """The answer to a dry run: the object as it would be written, in no store and no watch."""
    return Entry(obj, orjson.dumps(obj))


def _generation_fields(rt: ResourceType, obj: Obj) -> Any:
    """What a change must touch to bump metadata.generation: the spec, or for custom resources
    everything but metadata (and status, when the status subresource owns it)."""
    if not rt.crd:
        return obj.get("spec")
    skip = ("metadata", "status") if rt.has_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}


def _at(obj: Obj, path: str) -> Any:
    """The value at a CRD scale path such as `.spec.replicas` (None when absent)."""
    node: Any = obj
    for part in path.strip(".").split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _with(obj: Obj, path: str, value: Any) -> Obj:
    """A copy of `obj` with `value` at a scale path, sharing everything it does not touch."""
    head, _, rest = path.strip(".").partition(".")
    if not rest:
        return {**obj, head: value}
    child = obj.get(head)
    return {**obj, head: _with(child if isinstance(child, dict) else {}, rest, value)}


def _shallow(obj: Obj) -> Obj:
    """A new top-level dict with its own metadata dict; nested values stay shared and read-only."""
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    return new


class Api:
    def __init__(self, store: Store, kinds: Kinds | None = None) -> None:
        self.store = store
        self.kinds = kinds or Kinds()
        # Bound pods go through graceful deletion only when a kubelet exists to finish it.
        self.graceful_pod_deletion = False
        self._dependents: dict[str, set[tuple[str, str]]] = {}
        store.listeners.append(self._index_owners)
        add_event_views(store)
        self.custom_resources = crds.CustomResources(self)

    # ---- helpers -----------------------------------------------------------------------

    def resource(self, name: str) -> ResourceType:
        try:
            return self.kinds.by_store_name[name]
        except KeyError:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({name})"
            ) from None

    def _storage(self, rt: ResourceType) -> ResourceType | None:
        """The storage version of a custom resource (None for built-ins)."""
        return self.kinds.by_store_name.get(store_name(rt)) if rt.crd else None

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

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Obj,
        *,
        dry_run: bool = False,
        validation: Validation | None = None,
        apply: bool = False,
    ) -> Entry:
        """Create; with `dry_run` (dryRun=All) validate and default, answer as if created, store nothing.

        `validation` carries a request's fieldValidation (None: a trusted in-process write)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        decode(rt, body, validation, apply=apply, storage=self._storage(rt))
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
        obj: Obj = {"kind": rt.kind, "apiVersion": rt.stored_api_version}
        obj.update((k, v) for k, v in body.items() if k not in ("kind", "apiVersion"))
        obj["metadata"] = meta
        if rt.crd:
            meta["generation"] = 1
            if rt.has_status:
                obj.pop("status", None)  # the status subresource owns it
            self._check_custom(rt, obj)
        else:
            if rt is crds.CRD:
                crds.prepare(obj)
            obj = prepare_create(rt, obj, self._priorities() if rt.kind == "Pod" else {})
        if dry_run:
            return _unstored(obj)
        meta["resourceVersion"] = str(self.store.next_revision())
        return self.store.put(resource, key, obj, "ADDED")

    def load(self, rt: ResourceType, objects: Iterable[Any]) -> list[str]:
        """Restore objects as they were read from a cluster, in bulk (``Store.load``): no
        validation, defaulting or create strategy, so status (a pod's phase, a claim's Bound),
        uid and creationTimestamp are kept; managedFields are dropped, resourceVersions new.
        An object without a name, or in a namespace that does not exist, is skipped: the
        returned list says which and why, one line each."""
        problems: list[str] = []
        items: list[tuple[str, Obj]] = []
        namespaces = {e.obj["metadata"]["name"] for e in self.store.entries("namespaces")}
        for index, raw in enumerate(objects):
            meta = raw.get("metadata") if isinstance(raw, dict) else None
            name = meta.get("name") if isinstance(meta, dict) else None
            if not isinstance(name, str) or not name:
                problems.append(f"{rt.plural}[{index}]: skipped, no metadata.name")
                continue
            assert isinstance(meta, dict)  # for mypy: name came from it
            meta = {k: v for k, v in meta.items() if k != "managedFields"}
            ns = None
            if rt.namespaced:
                ns = meta.get("namespace") or "default"
                if ns not in namespaces:
                    problems.append(f"{rt.plural} {ns}/{name}: skipped, namespace {ns} does not exist")
                    continue
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now())
            obj: Obj = {**raw, "kind": rt.kind, "apiVersion": rt.stored_api_version, "metadata": meta}
            if rt is crds.CRD:  # served at once: one that cannot be served is left out
                try:
                    crds.prepare(obj)
                except ApiError as exc:
                    problems.append(f"{rt.plural} {name}: skipped, {exc}")
                    continue
            items.append((self.store.key(ns, name), obj))
            refs = meta.get("ownerReferences")
            for ref in refs if isinstance(refs, list) else ():
                if isinstance(ref, dict):  # the garbage collector's index, as _index_owners keeps it
                    self._dependents.setdefault(ref.get("uid", ""), set()).add((store_name(rt), items[-1][0]))
        self.store.load(store_name(rt), items)
        if rt is crds.CRD:
            self.custom_resources.restored([obj for _, obj in items])
        return problems

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
        if rt.crd:
            crds.check_field_selector(rt, field_selector)
        getters = field_getters(store_name(rt), field_selector)
        predicate = make_filter(label_selector, field_selector, None, getters)
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
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Obj,
        subresource: str | None = None,
        *,
        dry_run: bool = False,
        validation: Validation | None = None,
    ) -> Entry:
        current = self._require(rt, namespace, name)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        decode(rt, body, validation, storage=self._storage(rt))
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object does not match the name on the URL")
        wanted = meta.get("resourceVersion")
        if wanted and wanted != current.obj["metadata"]["resourceVersion"]:
            raise errors.stale(rt.plural, name, rt.group)
        return self._write(rt, current, body, subresource, dry_run)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        raw: bytes,
        subresource: str | None = None,
        *,
        dry_run: bool = False,
        validation: Validation | None = None,
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
                return self.create(
                    rt, namespace, patch, dry_run=dry_run, validation=validation, apply=True
                ), True
            raise errors.not_found(rt.plural, name, rt.group)
        base = found.obj
        if rt.crd and content_type == "application/strategic-merge-patch+json":
            raise errors.unsupported_media_type(content_type)  # custom resources have no patch strategies
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
        if content_type == "application/apply-patch+yaml":
            decode(rt, merged, validation, apply=True, storage=self._storage(rt))
        elif validation is not None or rt.crd:
            smp = content_type == "application/strategic-merge-patch+json"
            quoted = go_map(patch) if smp else orjson.dumps(merged).decode()
            decode(rt, merged, validation, patched=quoted, storage=self._storage(rt))
        meta = merged.get("metadata") or {}
        if meta.get("resourceVersion") != base["metadata"]["resourceVersion"]:
            raise errors.stale(rt.plural, name, rt.group)
        return self._write(rt, found, merged, subresource, dry_run), False

    def _write(
        self, rt: ResourceType, current: Entry, body: Obj, subresource: str | None, dry_run: bool = False
    ) -> Entry:
        old = current.obj
        if subresource == "status":
            new = _shallow(old)
            new["status"] = body.get("status")
            if new["status"] is None:
                new.pop("status")
            prepare_status_update(rt, old, new)
        else:
            new = {"kind": rt.kind, "apiVersion": rt.stored_api_version}
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
            if "generation" in meta and _generation_fields(rt, new) != _generation_fields(rt, old):
                meta["generation"] = meta["generation"] + 1
            if rt is crds.CRD:
                crds.prepare(new)
            prepare_update(rt, old, new)
        if rt.crd:
            self._check_custom(rt, new)
        return self._commit(rt, current, new, dry_run)

    def _check_custom(self, rt: ResourceType, obj: Obj) -> None:
        """A custom resource must satisfy its version's schema (after pruning and defaulting)."""
        errs = validate_custom(node_for(rt), obj)
        if errs:
            raise invalid_fields(rt.kind, rt.group, obj["metadata"].get("name", ""), errs)

    def _commit(self, rt: ResourceType, current: Entry, new: Obj, dry_run: bool = False) -> Entry:
        old = current.obj
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return current  # a no-op write keeps the version and emits no event, like the real server
        if dry_run:
            return _unstored(new)
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
        """Delete or start deleting; returns the final or terminating state and whether it is gone.

        With `dryRun: ["All"]` in the options the answer is the same and nothing changes."""
        options = options or {}
        dry_run = "All" in (options.get("dryRun") or ())
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
            if dry_run:
                return _unstored(new), False
            new["metadata"]["resourceVersion"] = str(self.store.next_revision())
            return self.store.put(store_name(rt), key, new, "MODIFIED"), False
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return current, False
            new = _shallow(old)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if dry_run:
                return _unstored(new), False
            new["metadata"]["resourceVersion"] = str(self.store.next_revision())
            return self.store.put(store_name(rt), key, new, "MODIFIED"), False
        if dry_run:
            return current, True
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
            dependent = self.kinds.by_store_name.get(dep_resource)
            if dependent is not None:
                self._collect(dependent, dep_key, uid, orphan)
        if rt.kind == "Namespace":
            ns = final["metadata"]["name"]
            for other in self.kinds.all():
                if other.namespaced:
                    for member in list(self.store.entries(store_name(other), ns)):
                        dm = member.obj["metadata"]
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
    ) -> builtins.list[Entry]:
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
        if rt.scale_paths is not None:  # a custom resource's scale subresource reads its paths
            spec_path, status_path, selector_path = rt.scale_paths
            replicas = _at(obj, spec_path)
            current = _at(obj, status_path)
            selector_text = _at(obj, selector_path) if selector_path else None
        else:
            replicas = obj["spec"].get("replicas", 1)
            current = (obj.get("status") or {}).get("replicas", 0)
            labels = (obj["spec"].get("selector") or {}).get("matchLabels") or {}
            selector_text = ",".join(f"{k}={v}" for k, v in labels.items())
        status: Obj = {"replicas": current or 0}
        if selector_text:
            status["selector"] = selector_text
        keep = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in keep if k in meta},
            "spec": {"replicas": replicas or 0} if rt.scale_paths else {"replicas": replicas},
            "status": status,
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
        if rt.scale_paths is not None:
            self._write(rt, current, _with(obj, rt.scale_paths[0], replicas), None)
        else:
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
