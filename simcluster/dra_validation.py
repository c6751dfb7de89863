"""Defaulting and validation of resource.k8s.io/v1 objects, as the API server applies them.

Covers what a scheduler and its tests rely on: request defaults (allocationMode ExactCount,
count 1, toleration operator Equal), the required fields of claims, templates, classes and
slices with the server's field paths, immutable claim and template specs, a pod's references to
its claims, and the invariants of a claim's status (reservedFor needs an allocation; an
allocation is never changed in place, only removed).
CEL selectors are not compiled here: a bad expression is the allocator's error, as for a
claim stored before a stricter server. The first error found is reported.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from scheduler.config.extenders import is_extended_resource_name
from simcluster.errors import ApiError, invalid
from simcluster.resources import ResourceType

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MODES = ("All", "ExactCount")
_PLACEMENT = "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"


class _Invalid(Exception):
    """One field error: the path and the server's wording after it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _label(value: Any, path: str) -> None:
    if not value:
        raise _Invalid(path, "Required value")
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.match(value):
        raise _Invalid(
            path,
            f"Invalid value: {json.dumps(value)}: a lowercase RFC 1123 label must consist of lower case "
            "alphanumeric characters or '-', and must start and end with an alphanumeric character",
        )


def _subdomain(value: Any, path: str) -> None:
    if not value:
        raise _Invalid(path, "Required value")
    if not isinstance(value, str) or len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise _Invalid(
            path,
            f"Invalid value: {json.dumps(value)}: a lowercase RFC 1123 subdomain must consist of lower "
            "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )


def _items(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Invalid(path, f"Invalid value: {json.dumps(value)}: must be a list")
    return value


# ---- claims and templates ---------------------------------------------------------------


def _default_exact(request: Obj) -> Obj:
    request = dict(request)
    request.setdefault("allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    if request.get("tolerations"):
        request["tolerations"] = [{"operator": "Equal", **t} for t in request["tolerations"]]
    return request


def _check_exact(request: Obj, path: str) -> None:
    _subdomain(request.get("deviceClassName"), f"{path}.deviceClassName")
    for j, selector in enumerate(_items(request.get("selectors"), f"{path}.selectors")):
        if not isinstance(selector, dict) or not selector.get("cel"):
            raise _Invalid(f"{path}.selectors[{j}].cel", "Required value")
        if not (selector["cel"] or {}).get("expression"):
            raise _Invalid(f"{path}.selectors[{j}].cel.expression", "Required value")
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All" and count:
        raise _Invalid(
            f"{path}.count", f"Invalid value: {count}: must not be specified when allocationMode is 'All'"
        )
    if mode == "ExactCount" and (not isinstance(count, int) or count <= 0):
        raise _Invalid(f"{path}.count", f"Invalid value: {json.dumps(count)}: must be greater than zero")
    if mode not in _MODES:
        raise _Invalid(
            f"{path}.allocationMode",
            f'Unsupported value: {json.dumps(mode)}: supported values: "All", "ExactCount"',
        )


def _claim_devices(devices: Any, path: str) -> Obj:
    """The defaulted `devices` of a claim spec; raises _Invalid for the first bad field."""
    if devices is None:
        return {}
    if not isinstance(devices, dict):
        raise _Invalid(path, f"Invalid value: {json.dumps(devices)}: must be an object")
    devices = dict(devices)
    names: dict[str, set[str]] = {}
    requests = []
    for i, raw in enumerate(_items(devices.get("requests"), f"{path}.requests")):
        at = f"{path}.requests[{i}]"
        request = dict(raw or {})
        _label(request.get("name"), f"{at}.name")
        if request["name"] in names:
            raise _Invalid(f"{at}.name", f"Duplicate value: {json.dumps(request['name'])}")
        exactly, alternatives = request.get("exactly"), request.get("firstAvailable")
        if exactly is not None and alternatives:
            raise _Invalid(
                at,
                "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
                "but multiple fields are set",
            )
        if exactly is not None:
            request["exactly"] = _default_exact(exactly)
            _check_exact(request["exactly"], f"{at}.exactly")
            names[request["name"]] = set()
        elif alternatives:
            subs: list[Obj] = []
            for j, sub in enumerate(_items(alternatives, f"{at}.firstAvailable")):
                sub_at = f"{at}.firstAvailable[{j}]"
                sub = _default_exact(sub or {})
                _label(sub.get("name"), f"{sub_at}.name")
                if sub["name"] in {s["name"] for s in subs}:
                    raise _Invalid(f"{sub_at}.name", f"Duplicate value: {json.dumps(sub['name'])}")
                _check_exact(sub, sub_at)
                subs.append(sub)
            request["firstAvailable"] = subs
            names[request["name"]] = {s["name"] for s in subs}
        else:
            raise _Invalid(at, "Required value: exactly one of `exactly` or `firstAvailable` is required")
        requests.append(request)
    if "requests" in devices:
        devices["requests"] = requests
    for field in ("constraints", "config"):
        for i, entry in enumerate(_items(devices.get(field), f"{path}.{field}")):
            for j, ref in enumerate(_items((entry or {}).get("requests"), f"{path}.{field}[{i}].requests")):
                head, _, sub = str(ref).partition("/")
                if head not in names or (sub and sub not in names[head]):
                    raise _Invalid(
                        f"{path}.{field}[{i}].requests[{j}]",
                        f"Invalid value: {json.dumps(ref)}: must be the name of a request in the claim or "
                        "the name of a request and a subrequest separated by '/'",
                    )
            if (
                field == "constraints"
                and not (entry or {}).get("matchAttribute")
                and not (entry or {}).get("distinctAttribute")
            ):
                raise _Invalid(
                    f"{path}.constraints[{i}]",
                    'Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, '
                    "but multiple fields are set",
                )
    return devices


def _claim_spec(spec: Any, path: str) -> Obj:
    spec = dict(spec or {})
    if "devices" in spec:
        spec["devices"] = _claim_devices(spec["devices"], f"{path}.devices")
    return spec


# ---- classes and slices -----------------------------------------------------------------


def _class_spec(spec: Any) -> Obj:
    spec = dict(spec or {})
    for j, selector in enumerate(_items(spec.get("selectors"), "spec.selectors")):
        if not isinstance(selector, dict) or not (selector.get("cel") or {}).get("expression"):
            raise _Invalid(f"spec.selectors[{j}].cel", "Required value")
    name = spec.get("extendedResourceName")
    if name is not None and not (isinstance(name, str) and is_extended_resource_name(name)):
        why = f"Invalid value: {json.dumps(name)}: must be a valid extended resource name"
        raise _Invalid("spec.extendedResourceName", why)
    return spec


def _slice_spec(spec: Any, old: Obj | None) -> Obj:
    spec = dict(spec or {})
    _subdomain(spec.get("driver"), "spec.driver")
    pool = spec.get("pool") or {}
    if not pool.get("name"):
        raise _Invalid("spec.pool.name", "Required value")
    count = pool.get("resourceSliceCount") or 0
    if not isinstance(count, int) or count <= 0:
        raise _Invalid(
            "spec.pool.resourceSliceCount", f"Invalid value: {json.dumps(count)}: must be greater than zero"
        )
    if (pool.get("generation") or 0) < 0:
        raise _Invalid(
            "spec.pool.generation",
            f"Invalid value: {pool['generation']}: must be greater than or equal to zero",
        )
    chosen = [
        f"`{f}`" for f in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(f)
    ]
    if not chosen:
        raise _Invalid(
            "spec",
            f"Required value: exactly one of {_PLACEMENT} is required",
        )
    if len(chosen) > 1:
        raise _Invalid(
            "spec",
            f'Invalid value: "{{{", ".join(chosen)}}}": exactly one of {_PLACEMENT} is required, '
            "but multiple fields are set",
        )
    if old is not None:
        before = old.get("spec") or {}
        for field, value, was in (
            ("pool.name", pool.get("name"), (before.get("pool") or {}).get("name")),
            ("driver", spec.get("driver"), before.get("driver")),
            ("nodeName", spec.get("nodeName"), before.get("nodeName")),
        ):
            if value != was:
                raise _Invalid(f"spec.{field}", f"Invalid value: {json.dumps(value)}: field is immutable")
    devices = []
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for i, raw in enumerate(_items(spec.get("devices"), "spec.devices")):
        device = dict(raw or {})
        _label(device.get("name"), f"spec.devices[{i}].name")
        if device.get("taints"):  # a taint's time is the server's when the driver leaves it out
            device["taints"] = [{"timeAdded": stamp, **t} for t in device["taints"]]
        devices.append(device)
    if "devices" in spec:
        spec["devices"] = devices
    return spec


# ---- pods --------------------------------------------------------------------------------


def _pod_claims(spec: Obj) -> None:
    """`spec.resourceClaims` and the containers' `resources.claims` that refer to them."""
    names: set[str] = set()
    for i, claim in enumerate(_items(spec.get("resourceClaims"), "spec.resourceClaims")):
        at = f"spec.resourceClaims[{i}]"
        claim = claim if isinstance(claim, dict) else {}
        if claim.get("name") in names:
            raise _Invalid(f"{at}.name", f"Duplicate value: {json.dumps(claim['name'])}")
        _label(claim.get("name"), f"{at}.name")
        names.add(claim["name"])
        given = [f for f in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(f) is not None]
        if len(given) != 1:
            why = (
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
                if given
                else "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            )
            raise _Invalid(at, f"Invalid value: {json.dumps(claim, separators=(',', ':'))}: {why}")
        _subdomain(claim[given[0]], f"{at}.{given[0]}")
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(kind) or ()):
            refs = ((container or {}).get("resources") or {}).get("claims") or ()
            for j, ref in enumerate(refs):
                at = f"spec.{kind}[{i}].resources.claims[{j}]"
                name = (ref or {}).get("name")
                if not name:
                    raise _Invalid(at, "Required value")
                if name not in names:
                    known = f": {', '.join(sorted(names))}" if names else " which is empty"
                    why = f"must be one of the names in pod.spec.resourceClaims{known}"
                    raise _Invalid(at, f"Not found: {json.dumps(name)}: {why}")


def check_pod(name: str, spec: Obj) -> None:
    """A pod's resource claims, as the API server validates them on create."""
    try:
        _pod_claims(spec)
    except _Invalid as error:
        raise invalid("Pod", name, error.path, error.message) from None


# ---- entry points -----------------------------------------------------------------------


def _raise(rt: ResourceType, obj: Obj, error: _Invalid) -> ApiError:
    return invalid(rt.kind, obj["metadata"].get("name", ""), error.path, error.message, GROUP)


def prepare(rt: ResourceType, obj: Obj, old: Obj | None = None) -> Obj:
    """Default and validate a resource.k8s.io object on create (`old` None) or update."""
    try:
        if rt.kind == "ResourceClaim":
            obj["spec"] = _claim_spec(obj.get("spec"), "spec")
            if old is not None and obj["spec"] != old.get("spec"):
                raise _Invalid("spec", f"Invalid value: {json.dumps(obj['spec'])}: field is immutable")
        elif rt.kind == "ResourceClaimTemplate":
            template = dict(obj.get("spec") or {})
            template["spec"] = _claim_spec(template.get("spec"), "spec.spec")
            obj["spec"] = template
            if old is not None and template != old.get("spec"):
                raise _Invalid("spec", f"Invalid value: {json.dumps(template)}: field is immutable")
        elif rt.kind == "DeviceClass":
            obj["spec"] = _class_spec(obj.get("spec"))
        elif rt.kind == "ResourceSlice":
            obj["spec"] = _slice_spec(obj.get("spec"), old)
    except _Invalid as error:
        raise _raise(rt, obj, error) from None
    return obj


def check_claim_status(rt: ResourceType, old: Obj, new: Obj) -> None:
    """The status invariants the API server enforces on a claim's status subresource."""
    status, before = new.get("status") or {}, old.get("status") or {}
    try:
        seen: set[str] = set()
        for i, ref in enumerate(_items(status.get("reservedFor"), "status.reservedFor")):
            for field in ("resource", "name", "uid"):
                if not (ref or {}).get(field):
                    raise _Invalid(f"status.reservedFor[{i}].{field}", "Required value")
            if ref["uid"] in seen:
                raise _Invalid(f"status.reservedFor[{i}]", f"Duplicate value: {json.dumps(ref)}")
            seen.add(ref["uid"])
        if status.get("reservedFor") and not status.get("allocation"):
            raise _Invalid(
                "status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"
            )
        if new["metadata"].get("deletionTimestamp"):
            old_uids = {(r or {}).get("uid") for r in before.get("reservedFor") or ()}
            if seen - old_uids:
                raise _Invalid(
                    "status.reservedFor",
                    "Forbidden: new entries may not be added while `deallocationRequested` or "
                    "`deletionTimestamp` are set",
                )
        allocation, was = status.get("allocation"), before.get("allocation")
        if allocation and was and allocation != was:
            raise _Invalid(
                "status.allocation", f"Invalid value: {json.dumps(allocation)}: field is immutable"
            )
    except _Invalid as error:
        raise _raise(rt, new, error) from None
