"""ResourceSlice defaults and validation, as the API server applies them (resource.k8s.io/v1).

Besides the pool and where its devices are available (exactly one of ``nodeName``,
``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``; per device then), the fields of
v1.36's beta features: a slice holds ``devices`` or ``sharedCounters``, never both; at most 8
counter sets of at most 32 counters, named as DNS labels, each set once; a device consumes from
at most 2 sets, each once; at most 64 devices when one has taints or consumes counters (else
128); at most 4 binding conditions and 4 binding failure conditions, qualified names, each once,
the two lists disjoint and given together; a capacity's ``requestPolicy`` only on a device
allowing multiple allocations, one of ``validValues`` (ascending, at most 10, none above the
capacity, the default among them) or ``validRange`` (min required, min and max within the
capacity, the default within the range and on a step, one step fits). Quantities are stored in
canonical form. The first error found is reported.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from scheduler.api.quantity import Quantity
from simcluster.dra_fields import (
    FieldInvalid,
    duplicates,
    items,
    label,
    label_format,
    mapping,
    qualified_name,
    quantity,
    subdomain,
)

Obj = dict[str, Any]
PLACEMENT = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_PLACEMENT = ", ".join(f"`{f}`" for f in PLACEMENT)
_DEVICE_PLACEMENT = ("nodeName", "nodeSelector", "allNodes")
MAX_DEVICES = 128
MAX_DEVICES_WITH_ADVANCED_FEATURES = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS = 32
MAX_CONSUMPTIONS = 2
MAX_CONDITIONS = 4
MAX_VALID_VALUES = 10


def slice_spec(spec: Any, old: Obj | None) -> Obj:
    """The defaulted spec of a slice; FieldInvalid for the first bad field."""
    spec = dict(spec or {})
    subdomain(spec.get("driver"), "spec.driver")
    pool = spec.get("pool") or {}
    if not pool.get("name"):
        raise FieldInvalid("spec.pool.name", "Required value")
    count = pool.get("resourceSliceCount") or 0
    if not isinstance(count, int) or count <= 0:
        raise FieldInvalid(
            "spec.pool.resourceSliceCount", f"Invalid value: {json.dumps(count)}: must be greater than zero"
        )
    if (pool.get("generation") or 0) < 0:
        raise FieldInvalid(
            "spec.pool.generation",
            f"Invalid value: {pool['generation']}: must be greater than or equal to zero",
        )
    chosen = [f"`{f}`" for f in PLACEMENT if spec.get(f)]
    if not chosen:
        raise FieldInvalid("spec", f"Required value: exactly one of {_PLACEMENT} is required")
    if len(chosen) > 1:
        raise FieldInvalid(
            "spec",
            f'Invalid value: "{{{", ".join(chosen)}}}": exactly one of {_PLACEMENT} is required, '
            "but multiple fields are set",
        )
    if old is not None:
        _immutable(spec, old.get("spec") or {})
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        raise FieldInvalid("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed')
    raw_devices = items(spec.get("devices"), "spec.devices")
    advanced = any((d or {}).get("taints") or (d or {}).get("consumesCounters") for d in raw_devices)
    items(raw_devices, "spec.devices", MAX_DEVICES_WITH_ADVANCED_FEATURES if advanced else MAX_DEVICES)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    devices = [
        _device(dict(raw or {}), f"spec.devices[{i}]", bool(spec.get("perDeviceNodeSelection")), stamp)
        for i, raw in enumerate(raw_devices)
    ]
    duplicates([d.get("name") for d in devices], "spec.devices")
    if "devices" in spec:
        spec["devices"] = devices
    if spec.get("sharedCounters") is not None:
        sets = items(spec["sharedCounters"], "spec.sharedCounters", MAX_COUNTER_SETS)
        spec["sharedCounters"] = [
            _counter_set(dict(s or {}), f"spec.sharedCounters[{i}]") for i, s in enumerate(sets)
        ]
        duplicates([s.get("name") for s in spec["sharedCounters"]], "spec.sharedCounters")
    return spec


def _immutable(spec: Obj, before: Obj) -> None:
    pool, was_pool = spec.get("pool") or {}, before.get("pool") or {}
    for field, value, was in (
        ("pool.name", pool.get("name"), was_pool.get("name")),
        ("driver", spec.get("driver"), before.get("driver")),
        ("nodeName", spec.get("nodeName"), before.get("nodeName")),
    ):
        if value != was:
            raise FieldInvalid(f"spec.{field}", f"Invalid value: {json.dumps(value)}: field is immutable")


def _counters(raw: Any, path: str) -> dict[str, Obj]:
    counters = mapping(raw, path, MAX_COUNTERS)
    if not counters:
        raise FieldInvalid(path, "Required value")
    for name in counters:
        label_format(name, path)
    return {
        name: {"value": quantity((c or {}).get("value"), f"{path}[{name}].value")}
        for name, c in counters.items()
    }


def _counter_set(counter_set: Obj, path: str) -> Obj:
    label(counter_set.get("name"), f"{path}.name")
    counter_set["counters"] = _counters(counter_set.get("counters"), f"{path}.counters")
    return counter_set


def _device(device: Obj, path: str, per_device: bool, stamp: str) -> Obj:
    label(device.get("name"), f"{path}.name")
    multiple = bool(device.get("allowMultipleAllocations"))
    capacities = mapping(device.get("capacity"), f"{path}.capacity")
    if capacities:
        device["capacity"] = {
            name: _capacity(dict(c or {}), f"{path}.capacity[{name}]", multiple)
            for name, c in capacities.items()
        }
    consumptions = items(device.get("consumesCounters"), f"{path}.consumesCounters", MAX_CONSUMPTIONS)
    for j, consumption in enumerate(consumptions):
        at = f"{path}.consumesCounters[{j}]"
        label(consumption.get("counterSet"), f"{at}.counterSet")
        consumption["counters"] = _counters(consumption.get("counters"), f"{at}.counters")
    duplicates([c.get("counterSet") for c in consumptions], f"{path}.consumesCounters")
    _placement(device, path, per_device)
    check_binding_conditions(device, path)
    if device.get("taints"):  # a taint's time is the server's when the driver leaves it out
        device["taints"] = [{"timeAdded": stamp, **t} for t in device["taints"]]
    return device


def _placement(device: Obj, path: str, per_device: bool) -> None:
    given = [f for f in _DEVICE_PLACEMENT if device.get(f) is not None]
    if not per_device:
        if given:
            raise FieldInvalid(
                path,
                "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
        return
    why = (
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
        "is set to true in the ResourceSlice spec"
    )
    if not given:
        raise FieldInvalid(path, f"Required value: {why}")
    if len(given) > 1:
        raise FieldInvalid(path, f'Invalid value: "{{{", ".join(f"`{f}`" for f in given)}}}": {why}')


def check_binding_conditions(device: Obj, path: str) -> None:
    """A device's (or an allocation result's) binding conditions within upstream's limits."""
    conditions = items(device.get("bindingConditions"), f"{path}.bindingConditions", MAX_CONDITIONS)
    failures = items(
        device.get("bindingFailureConditions"), f"{path}.bindingFailureConditions", MAX_CONDITIONS
    )
    for j, condition in enumerate(conditions):
        qualified_name(condition, f"{path}.bindingConditions[{j}]")
    for j, condition in enumerate(failures):
        qualified_name(condition, f"{path}.bindingFailureConditions[{j}]")
    duplicates(conditions, f"{path}.bindingConditions")
    duplicates(failures, f"{path}.bindingFailureConditions")
    for j, condition in enumerate(failures):
        if condition in conditions:
            raise FieldInvalid(
                f"{path}.bindingFailureConditions[{j}]",
                f"Invalid value: {json.dumps(condition)}: bindingFailureConditions must not overlap with "
                "bindingConditions",
            )
    if failures and not conditions:
        raise FieldInvalid(
            f"{path}.bindingConditions",
            f"Invalid value: {json.dumps(device.get('bindingConditions'))}: "
            "bindingConditions are required to use bindingFailureConditions",
        )
    if conditions and not failures:
        raise FieldInvalid(
            f"{path}.bindingFailureConditions",
            f"Invalid value: {json.dumps(device.get('bindingFailureConditions'))}: "
            "bindingFailureConditions are required to use bindingConditions",
        )


def _capacity(capacity: Obj, path: str, multiple: bool) -> Obj:
    capacity["value"] = quantity(capacity.get("value"), f"{path}.value")
    policy = capacity.get("requestPolicy")
    if policy is None:
        return capacity
    at = f"{path}.requestPolicy"
    if not multiple:
        raise FieldInvalid(at, "Forbidden: allowMultipleAllocations must be true")
    policy = dict(policy)
    for key in ("default",):
        if policy.get(key) is not None:
            policy[key] = quantity(policy[key], f"{at}.{key}")
    if policy.get("validValues") and policy.get("validRange") is not None:
        raise FieldInvalid(
            at,
            'Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" '
            "at the same time",
        )
    maximum = Quantity.parse(capacity["value"])
    if policy.get("validValues"):
        policy["validValues"] = _valid_values(policy, maximum, f"{at}.validValues", at)
    elif policy.get("validRange") is not None:
        policy["validRange"] = _valid_range(policy, maximum, f"{at}.validRange", at)
    capacity["requestPolicy"] = policy
    return capacity


def _valid_values(policy: Obj, maximum: Quantity, path: str, at: str) -> list[str]:
    if policy.get("default") is None:
        raise FieldInvalid(f"{at}.default", "Required value: required when validValues is defined")
    values = [quantity(v, f"{path}[{i}]") for i, v in enumerate(items(policy["validValues"], path))]
    parsed = [Quantity.parse(v) for v in values]
    for i in range(1, len(parsed)):
        if parsed[i - 1].value > parsed[i].value:
            raise FieldInvalid(
                f"{path}[{i}]", f'Invalid value: "{values[i]}": values must be sorted in ascending order'
            )
    items(values, path, MAX_VALID_VALUES)
    for i, value in enumerate(parsed):
        if value.value > maximum.value:
            raise FieldInvalid(
                f"{path}[{i}]",
                f'Invalid value: "{values[i]}": option is larger than capacity value: {maximum}',
            )
    duplicates([v.integer() for v in parsed], path)
    default = Quantity.parse(policy["default"])
    if all(v.value != default.value for v in parsed):
        raise FieldInvalid(
            path,
            f'Invalid value: "{policy["default"]}": '
            "default value is not valid according to the requestPolicy",
        )
    return values


def _valid_range(policy: Obj, maximum: Quantity, path: str, at: str) -> Obj:
    if policy.get("default") is None:
        raise FieldInvalid(f"{at}.default", "Required value: required when validRange is defined")
    bounds = dict(policy["validRange"] or {})
    if bounds.get("min") is None:
        raise FieldInvalid(f"{path}.min", "Required value: required when validRange is defined")
    for key in ("min", "max", "step"):
        if bounds.get(key) is not None:
            bounds[key] = quantity(bounds[key], f"{path}.{key}")
    low, default = Quantity.parse(bounds["min"]), Quantity.parse(policy["default"])
    if low.value > maximum.value:
        raise FieldInvalid(
            f"{path}.min", f'Invalid value: "{low}": min is larger than capacity value: {maximum}'
        )
    if default.value < low.value:
        raise FieldInvalid(f"{path}.min", f'Invalid value: "{default}": default is less than min: {low}')
    if bounds.get("max") is not None:
        high = Quantity.parse(bounds["max"])
        if low.value > high.value:
            raise FieldInvalid(f"{path}.max", f'Invalid value: "{low}": min is larger than max: {high}')
        if high.value > maximum.value:
            raise FieldInvalid(
                f"{path}.max", f'Invalid value: "{high}": max is larger than capacity value: {maximum}'
            )
        if default.value > high.value:
            raise FieldInvalid(f"{path}.max", f'Invalid value: "{default}": default is more than max: {high}')
    if bounds.get("step") is not None:
        step = Quantity.parse(bounds["step"])
        if low.value + step.value > maximum.value:
            raise FieldInvalid(
                f"{path}.step",
                f'Invalid value: "{step}": one step {Quantity(low.value + step.value, low.format)} '
                f"is larger than capacity value: {maximum}",
            )
        for value in (default, *((Quantity.parse(bounds["max"]),) if bounds.get("max") is not None else ())):
            if step.integer() and (value.integer() - low.integer()) % step.integer():
                raise FieldInvalid(
                    f"{path}.step",
                    f'Invalid value: "{value}": '
                    f"value is not a multiple of a given step ({step}) from ({low})",
                )
    return bounds
