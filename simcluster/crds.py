"""CustomResourceDefinitions: a CRD written to the store starts serving its kind.

`prepare` defaults and validates a CRD on create and update (names, scope, one storage version,
structural schemas), as apiextensions-apiserver does. `CustomResources` watches the CRD store:
it registers each served version as a `ResourceType` (schema, subresources, printer columns),
sets the `NamesAccepted`/`Established` conditions the real controllers set, and when a CRD goes
away deletes its objects, ends their watches and stops serving the kind. Versions share one
store; conversion is `None` (only `apiVersion` changes between versions).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simcluster import errors
from simcluster.resources import BY_STORE_NAME, ResourceType, store_name
from simcluster.store import Event
from simcluster.structural import FieldError, invalid

if TYPE_CHECKING:
    from simcluster.api import Api

Obj = dict[str, Any]
CRD = BY_STORE_NAME["customresourcedefinitions"]
CRDS = store_name(CRD)


def prepare(crd: Obj) -> None:
    """Fill in the defaults of a CRD (singular, listKind, conversion) and reject invalid ones."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        spec = crd["spec"] = {}
    names = spec.get("names")
    if not isinstance(names, dict):
        names = spec["names"] = {}
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})
    errs = _validate(crd, spec, names)
    if errs:
        raise invalid(
            "CustomResourceDefinition", "apiextensions.k8s.io", crd["metadata"].get("name", ""), errs
        )


def _validate(crd: Obj, spec: Obj, names: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    name = crd["metadata"].get("name", "")
    group, plural = spec.get("group") or "", names.get("plural") or ""
    if name != f"{plural}.{group}":
        errs.append(
            FieldError("metadata.name", "Invalid value", name, 'must be spec.names.plural+"."+spec.group')
        )
    if not group:
        errs.append(FieldError("spec.group", "Required value", show_value=False))
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(FieldError(f"spec.names.{key}", "Required value", show_value=False))
    scope = spec.get("scope")
    if not scope:
        errs.append(FieldError("spec.scope", "Required value", show_value=False))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(
            FieldError("spec.scope", "Unsupported value", scope, 'supported values: "Cluster", "Namespaced"')
        )
    versions = spec.get("versions") or []
    if sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(
            FieldError(
                "spec.versions",
                "Invalid value",
                versions,
                "must have exactly one version marked as storage version",
            )
        )
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not version.get("name"):
            errs.append(FieldError(f"{path}.name", "Required value", show_value=False))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errs.append(FieldError(f"{path}.schema.openAPIV3Schema", "Required value", show_value=False))
            continue
        _structural(schema, f"{path}.schema.openAPIV3Schema", "root", errs)
    return errs


def _structural(schema: Obj, path: str, where: str, errs: list[FieldError]) -> None:
    """The one structural rule clients trip over: every node states its type."""
    free = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    kind = schema.get("type")
    if where == "root" and kind and kind != "object":
        errs.append(FieldError(f"{path}.type", "Invalid value", kind, "must be object at the root"))
    elif not kind and not free:
        detail = {
            "root": "must not be empty at the root",
            "items": "must not be empty for specified array items",
        }.get(where, "must not be empty for specified object fields")
        errs.append(FieldError(f"{path}.type", "Required value", detail=detail, show_value=False))
    for key, child in (schema.get("properties") or {}).items():
        if isinstance(child, dict):
            _structural(child, f"{path}.properties[{key}]", "field", errs)
    if isinstance(schema.get("items"), dict):
        _structural(schema["items"], f"{path}.items", "items", errs)
    if isinstance(schema.get("additionalProperties"), dict):
        _structural(schema["additionalProperties"], f"{path}.additionalProperties", "field", errs)


def check_field_selector(rt: ResourceType, selector: str | None) -> None:
    """Custom resources answer field selectors on metadata.name, metadata.namespace and the
    version's selectableFields only, as the real server does."""
    if not selector:
        return
    allowed = {"metadata.name", "metadata.namespace", *rt.selectable_fields}
    for term in selector.split(","):
        key = re.split(r"!=|==|=", term, maxsplit=1)[0].strip()
        if key and key not in allowed:
            raise errors.bad_request(f"field label not supported: {key}")


def served_versions(crd: Obj) -> list[ResourceType]:
    """The `ResourceType`s a CRD serves, one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
    served = []
    for version in spec["versions"]:
        if not version.get("served"):
            continue
        subresources = version.get("subresources") or {}
        subs: tuple[str, ...] = ()
        scale_paths = None
        if "status" in subresources:
            subs += ("status",)
        if "scale" in subresources:
            scale = subresources["scale"] or {}
            subs += ("scale",)
            scale_paths = (
                scale.get("specReplicasPath", ".spec.replicas"),
                scale.get("statusReplicasPath", ".status.replicas"),
                scale.get("labelSelectorPath") or "",
            )
        served.append(
            ResourceType(
                spec["group"],
                version["name"],
                names["plural"],
                names["kind"],
                spec["scope"] == "Namespaced",
                subresources=subs,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                crd=crd["metadata"]["name"],
                storage_version=storage,
                schema=(version.get("schema") or {}).get("openAPIV3Schema") or {},
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                scale_paths=scale_paths,
                selectable_fields=tuple(
                    f["jsonPath"].lstrip(".") for f in version.get("selectableFields") or ()
                ),
            )
        )
    return served


class CustomResources:
    """Keeps the served kinds in step with the CRDs in the store."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._specs: dict[str, Any] = {}
        api.store.listeners.append(self._on_event)

    def _on_event(self, resource: str, event: Event) -> None:
        if resource != CRDS:
            return
        name = event.obj["metadata"]["name"]
        if event.type == "DELETED":
            # at once, so a CRD created again under the same name starts empty
            self._specs.pop(name, None)
            self._remove(name)
            return
        spec = event.obj.get("spec")
        if self._specs.get(name) != spec:
            self._specs[name] = spec
            self.api.kinds.register(name, served_versions(event.obj))
        _soon(lambda: self._set_status(name))

    def restored(self, crds: list[Obj]) -> None:
        """Serve CRDs restored in bulk (``Api.load``, which calls no listener) at once, so the
        custom resources of the same snapshot can be restored after them."""
        for crd in crds:
            name = crd["metadata"]["name"]
            self._specs[name] = crd.get("spec")
            self.api.kinds.register(name, served_versions(crd))

    def _set_status(self, name: str) -> None:
        """What the naming and establishing controllers write once the names are served."""
        api = self.api
        entry = api.store.entry(CRDS, None, name)
        if entry is None:
            return
        crd = entry.obj
        spec = crd["spec"]
        old = crd.get("status") or {}
        accepted = {k: v for k, v in spec["names"].items() if v}
        stored = list(old.get("storedVersions") or [])
        storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
        if storage not in stored:
            stored.append(storage)
        conditions = [
            _condition(old, "NamesAccepted", "NoConflicts", "no conflicts found"),
            _condition(old, "Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ]
        status = {"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}
        if old == status:
            return
        api.update(CRD, None, name, {**crd, "status": status}, "status")

    def _remove(self, name: str) -> None:
        """The CRD finalizer's work: delete every object of the kind, then stop serving it."""
        api = self.api
        versions = api.kinds.custom(name)
        if not versions:
            return
        resource = store_name(versions[0])
        for entry in list(api.store.entries(resource)):
            meta = entry.obj["metadata"]
            final = {**entry.obj, "metadata": {**meta, "resourceVersion": str(api.store.next_revision())}}
            api.store.remove(resource, api.store.key(meta.get("namespace"), meta["name"]), final)
        for watcher in api.store.watchers(resource):
            watcher.close()
        api.kinds.unregister(name)


def _condition(status: Obj, kind: str, reason: str, message: str) -> Obj:
    from simcluster.api import now

    for old in status.get("conditions") or []:
        if old.get("type") == kind and old.get("status") == "True":
            return old
    return {"type": kind, "status": "True", "lastTransitionTime": now(), "reason": reason, "message": message}


def _soon(action: Callable[[], None]) -> None:
    """Run after the write that triggered it has been published (or now, without an event loop)."""
    try:
        asyncio.get_running_loop().call_soon(action)
    except RuntimeError:
        action()
