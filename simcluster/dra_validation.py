"""Defaulting and validation of resource.k8s.io objects, as the API server applies them.

Covers what a scheduler and its tests rely on: request defaults (allocationMode ExactCount,
count 1, toleration operator Equal), the required fields of claims, templates, classes and
slices with the server's field paths, immutable claim and template specs, a pod's references to
its claims, and the invariants of a claim's status (reservedFor needs an allocation; an
allocation is never changed in place, only removed); slices through ``dra_slices``, and
DeviceTaintRules (v1beta2) through ``dra_taint_rules``.
CEL selectors are not compiled here: a bad expression is the allocator's error, as for a
claim stored before a stricter server. The first error found is reported.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scheduler.config.extenders import is_extended_resource_name
from simcluster.dra_fields import (
    FieldInvalid,
    duplicates,
    items,
    label,
    mapping,
    qualified_name,
    quantity,
    subdomain,
)
from simcluster.dra_slices import check_binding_conditions, slice_spec
from simcluster.dra_taint_rules import taint_rule_spec
from simcluster.errors import ApiError, invalid
from simcluster.resources import ResourceType

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
_MODES = ("All", "ExactCount")
_UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
MAX_DEVICE_CONDITIONS = 8  # AllocatedDeviceStatusMaxConditions


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
    subdomain(request.get("deviceClassName"), f"{path}.deviceClassName")
    for j, selector in enumerate(items(request.get("selectors"), f"{path}.selectors")):
        if not isinstance(selector, dict) or not selector.get("cel"):
            raise FieldInvalid(f"{path}.selectors[{j}].cel", "Required value")
        if not (selector["cel"] or {}).get("expression"):
            raise FieldInvalid(f"{path}.selectors[{j}].cel.expression", "Required value")
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All" and count:
        raise FieldInvalid(
            f"{path}.count", f"Invalid value: {count}: must not be specified when allocationMode is 'All'"
        )
    if mode == "ExactCount" and (not isinstance(count, int) or count <= 0):
        raise FieldInvalid(f"{path}.count", f"Invalid value: {json.dumps(count)}: must be greater than zero")
    if mode not in _MODES:
        raise FieldInvalid(
            f"{path}.allocationMode",
            f'Unsupported value: {json.dumps(mode)}: supported values: "All", "ExactCount"',
        )
    if request.get("capacity") is not None:
        requested = mapping((request["capacity"] or {}).get("requests"), f"{path}.capacity.requests")
        request["capacity"] = {
            "requests": {k: quantity(v, f"{path}.capacity.requests[{k}]") for k, v in requested.items()}
        }


def _claim_devices(devices: Any, path: str) -> Obj:
    """The defaulted `devices` of a claim spec; raises FieldInvalid for the first bad field."""
    if devices is None:
        return {}
    if not isinstance(devices, dict):
        raise FieldInvalid(path, f"Invalid value: {json.dumps(devices)}: must be an object")
    devices = dict(devices)
    names: dict[str, set[str]] = {}
    requests = []
    for i, raw in enumerate(items(devices.get("requests"), f"{path}.requests")):
        at = f"{path}.requests[{i}]"
        request = dict(raw or {})
        label(request.get("name"), f"{at}.name")
        if request["name"] in names:
            raise FieldInvalid(f"{at}.name", f"Duplicate value: {json.dumps(request['name'])}")
        exactly, alternatives = request.get("exactly"), request.get("firstAvailable")
        if exactly is not None and alternatives:
            raise FieldInvalid(
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
            for j, sub in enumerate(items(alternatives, f"{at}.firstAvailable")):
                sub_at = f"{at}.firstAvailable[{j}]"
                sub = _default_exact(sub or {})
                label(sub.get("name"), f"{sub_at}.name")
                if sub["name"] in {s["name"] for s in subs}:
                    raise FieldInvalid(f"{sub_at}.name", f"Duplicate value: {json.dumps(sub['name'])}")
                _check_exact(sub, sub_at)
                subs.append(sub)
            request["firstAvailable"] = subs
            names[request["name"]] = {s["name"] for s in subs}
        else:
            raise FieldInvalid(at, "Required value: exactly one of `exactly` or `firstAvailable` is required")
        requests.append(request)
    if "requests" in devices:
        devices["requests"] = requests
    for field in ("constraints", "config"):
        for i, entry in enumerate(items(devices.get(field), f"{path}.{field}")):
            for j, ref in enumerate(items((entry or {}).get("requests"), f"{path}.{field}[{i}].requests")):
                head, _, sub = str(ref).partition("/")
                if head not in names or (sub and sub not in names[head]):
                    raise FieldInvalid(
                        f"{path}.{field}[{i}].requests[{j}]",
                        f"Invalid value: {json.dumps(ref)}: must be the name of a request in the claim or "
                        "the name of a request and a subrequest separated by '/'",
                    )
            if (
                field == "constraints"
                and not (entry or {}).get("matchAttribute")
                and not (entry or {}).get("distinctAttribute")
            ):
                raise FieldInvalid(
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
    for j, selector in enumerate(items(spec.get("selectors"), "spec.selectors")):
        if not isinstance(selector, dict) or not (selector.get("cel") or {}).get("expression"):
            raise FieldInvalid(f"spec.selectors[{j}].cel", "Required value")
    name = spec.get("extendedResourceName")
    if name is not None and not (isinstance(name, str) and is_extended_resource_name(name)):
        why = f"Invalid value: {json.dumps(name)}: must be a valid extended resource name"
        raise FieldInvalid("spec.extendedResourceName", why)
    return spec


# ---- pods --------------------------------------------------------------------------------


def _pod_claims(spec: Obj) -> None:
    """`spec.resourceClaims` and the containers' `resources.claims` that refer to them."""
    names: set[str] = set()
    for i, claim in enumerate(items(spec.get("resourceClaims"), "spec.resourceClaims")):
        at = f"spec.resourceClaims[{i}]"
        claim = claim if isinstance(claim, dict) else {}
        if claim.get("name") in names:
            raise FieldInvalid(f"{at}.name", f"Duplicate value: {json.dumps(claim['name'])}")
        label(claim.get("name"), f"{at}.name")
        names.add(claim["name"])
        given = [f for f in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(f) is not None]
        if len(given) != 1:
            why = (
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
                if given
                else "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            )
            raise FieldInvalid(at, f"Invalid value: {json.dumps(claim, separators=(',', ':'))}: {why}")
        subdomain(claim[given[0]], f"{at}.{given[0]}")
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(kind) or ()):
            refs = ((container or {}).get("resources") or {}).get("claims") or ()
            for j, ref in enumerate(refs):
                at = f"spec.{kind}[{i}].resources.claims[{j}]"
                name = (ref or {}).get("name")
                if not name:
                    raise FieldInvalid(at, "Required value")
                if name not in names:
                    known = f": {', '.join(sorted(names))}" if names else " which is empty"
                    why = f"must be one of the names in pod.spec.resourceClaims{known}"
                    raise FieldInvalid(at, f"Not found: {json.dumps(name)}: {why}")


def check_pod(name: str, spec: Obj) -> None:
    """A pod's resource claims, as the API server validates them on create."""
    try:
        _pod_claims(spec)
    except FieldInvalid as error:
        raise invalid("Pod", name, error.path, error.message) from None


# ---- entry points -----------------------------------------------------------------------


def _raise(rt: ResourceType, obj: Obj, error: FieldInvalid) -> ApiError:
    return invalid(rt.kind, obj["metadata"].get("name", ""), error.path, error.message, GROUP)


def prepare(rt: ResourceType, obj: Obj, old: Obj | None = None) -> Obj:
    """Default and validate a resource.k8s.io object on create (`old` None) or update."""
    try:
        if rt.kind == "ResourceClaim":
            obj["spec"] = _claim_spec(obj.get("spec"), "spec")
            if old is not None and obj["spec"] != old.get("spec"):
                raise FieldInvalid("spec", f"Invalid value: {json.dumps(obj['spec'])}: field is immutable")
        elif rt.kind == "ResourceClaimTemplate":
            template = dict(obj.get("spec") or {})
            template["spec"] = _claim_spec(template.get("spec"), "spec.spec")
            obj["spec"] = template
            if old is not None and template != old.get("spec"):
                raise FieldInvalid("spec", f"Invalid value: {json.dumps(template)}: field is immutable")
        elif rt.kind == "DeviceClass":
            obj["spec"] = _class_spec(obj.get("spec"))
        elif rt.kind == "ResourceSlice":
            obj["spec"] = slice_spec(obj.get("spec"), old)
        elif rt.kind == "DeviceTaintRule":
            obj["spec"] = taint_rule_spec(obj.get("spec"), old)
    except FieldInvalid as error:
        raise _raise(rt, obj, error) from None
    return obj


def prepare_claim_status(rt: ResourceType, old: Obj, new: Obj) -> None:
    """A claim's status subresource write, as the API server takes it: the status of devices no
    longer allocated is dropped, a new allocation's quantities are made canonical, and the
    invariants are checked (reservations need an allocation, an allocation is never changed in
    place, a device status names an allocated device, binding conditions within their limits)."""
    status, before = new.get("status") or {}, old.get("status") or {}
    _drop_deallocated_devices(status, before)
    try:
        seen: set[str] = set()
        for i, ref in enumerate(items(status.get("reservedFor"), "status.reservedFor")):
            for field in ("resource", "name", "uid"):
                if not (ref or {}).get(field):
                    raise FieldInvalid(f"status.reservedFor[{i}].{field}", "Required value")
            if ref["uid"] in seen:
                raise FieldInvalid(f"status.reservedFor[{i}]", f"Duplicate value: {json.dumps(ref)}")
            seen.add(ref["uid"])
        if status.get("reservedFor") and not status.get("allocation"):
            raise FieldInvalid(
                "status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"
            )
        if new["metadata"].get("deletionTimestamp"):
            old_uids = {(r or {}).get("uid") for r in before.get("reservedFor") or ()}
            if seen - old_uids:
                raise FieldInvalid(
                    "status.reservedFor",
                    "Forbidden: new entries may not be added while `deallocationRequested` or "
                    "`deletionTimestamp` are set",
                )
        allocation, was = status.get("allocation"), before.get("allocation")
        if allocation and was and allocation != was:
            raise FieldInvalid(
                "status.allocation", f"Invalid value: {json.dumps(allocation)}: field is immutable"
            )
        if allocation and not was:
            _check_results(allocation)
        _check_device_statuses(status)
    except FieldInvalid as error:
        raise _raise(rt, new, error) from None


def _shared_ids(status: Obj) -> set[tuple[Any, ...]]:
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()
    return {(r.get("driver"), r.get("pool"), r.get("device"), r.get("shareID")) for r in results}


def _drop_deallocated_devices(status: Obj, before: Obj) -> None:
    gone = _shared_ids(before) - _shared_ids(status)
    devices = status.get("devices")
    if not gone or not isinstance(devices, list):
        return
    kept = [
        d for d in devices if (d.get("driver"), d.get("pool"), d.get("device"), d.get("shareID")) not in gone
    ]
    if kept:
        status["devices"] = kept
    else:
        status.pop("devices")


def _check_results(allocation: Obj) -> None:
    path = "status.allocation.devices.results"
    for i, result in enumerate(items((allocation.get("devices") or {}).get("results"), path, 32)):
        at = f"{path}[{i}]"
        check_binding_conditions(result, at)
        if result.get("shareID") is not None and not _UID.match(str(result["shareID"])):
            raise FieldInvalid(
                f"{at}.shareID",
                f"Invalid value: {json.dumps(result['shareID'])}: uid must be in RFC 4122 normalized form, "
                "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
            )
        consumed = mapping(result.get("consumedCapacity"), f"{at}.consumedCapacity")
        if consumed:
            result["consumedCapacity"] = {
                k: quantity(v, f"{at}.consumedCapacity[{k}]") for k, v in consumed.items()
            }


def _check_device_statuses(status: Obj) -> None:
    allocated = _shared_ids(status)
    keys = []
    for i, device in enumerate(items(status.get("devices"), "status.devices")):
        at = f"status.devices[{i}]"
        key = (device.get("driver"), device.get("pool"), device.get("device"), device.get("shareID"))
        keys.append("/".join(str(k) for k in key if k is not None))
        if key not in allocated:
            raise FieldInvalid(
                at, f"Invalid value: {json.dumps(keys[-1])}: must be an allocated device in the claim"
            )
        conditions = items(device.get("conditions"), f"{at}.conditions", MAX_DEVICE_CONDITIONS)
        for j, condition in enumerate(conditions):
            _check_condition(condition or {}, f"{at}.conditions[{j}]")
        duplicates([(c or {}).get("type") for c in conditions], f"{at}.conditions")
    duplicates(keys, "status.devices")


def _check_condition(condition: Obj, path: str) -> None:
    qualified_name(condition.get("type"), f"{path}.type")
    if condition.get("status") not in ("True", "False", "Unknown"):
        raise FieldInvalid(
            f"{path}.status",
            f"Unsupported value: {json.dumps(condition.get('status'))}: "
            'supported values: "False", "True", "Unknown"',
        )
    if not condition.get("lastTransitionTime"):
        raise FieldInvalid(f"{path}.lastTransitionTime", "Required value: must be set")
    reason = condition.get("reason")
    if not reason:
        raise FieldInvalid(f"{path}.reason", "Required value: must be set")
    if not isinstance(reason, str) or not _REASON.match(reason):
        raise FieldInvalid(
            f"{path}.reason",
            f"Invalid value: {json.dumps(reason)}: a condition reason must start with alphabetic character, "
            "optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
            "alphanumeric character or '_'",
        )
