"""Builders of resource.k8s.io/v1 objects (plain API dicts) for tests of DRA plugins and of the scheduler."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.example.com"


def device(
    name: str, capacity: dict[str, str] | None = None, taints: list[dict] | None = None, **attrs: Any
) -> dict:
    """A device; keyword attributes become int/bool/string attributes (``version_x`` a version)."""
    attributes: dict[str, Any] = {}
    for key, value in attrs.items():
        if key.startswith("version_"):
            attributes[key.removeprefix("version_")] = {"version": value}
        elif isinstance(value, bool):
            attributes[key] = {"bool": value}
        elif isinstance(value, int):
            attributes[key] = {"int": value}
        else:
            attributes[key] = {"string": value}
    result: dict[str, Any] = {"name": name, "attributes": attributes}
    if capacity:
        result["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if taints:
        result["taints"] = taints
    return result


def resource_slice(
    name: str,
    devices: list[dict],
    node: str | None = None,
    pool: str | None = None,
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    all_nodes: bool = False,
    node_selector: dict | None = None,
) -> dict:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool or node or name, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
    }
    if node:
        spec["nodeName"] = node
    if all_nodes:
        spec["allNodes"] = True
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


def device_class(name: str, *expressions: str, config: list[dict] | None = None) -> dict:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
    if config:
        spec["config"] = config
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def partitioned_gpus(count: int = 2) -> dict:
    """A sim-cluster node template's ``devices``: ``count`` 40Gi A100s, each offered whole or as two
    20Gi halves that share its memory counter."""
    return {
        "driver": DRIVER,
        "count": count,
        "attributes": {"model": "A100"},
        "counters": {"memory": "40Gi"},
        "partitions": [
            {"name": "full", "consumes": {"memory": "40Gi"}, "attributes": {"profile": "whole"}},
            {"name": "half-a", "consumes": {"memory": "20Gi"}, "attributes": {"profile": "half"}},
            {"name": "half-b", "consumes": {"memory": "20Gi"}, "attributes": {"profile": "half"}},
        ],
    }


BROKEN_TAINT = {"key": "example.com/broken", "effect": "NoSchedule"}


def device_taint_rule(name: str = "r", taint: dict | None = None, selector: dict | None = None) -> dict:
    """A resource.k8s.io/v1beta2 DeviceTaintRule putting ``taint`` (``BROKEN_TAINT`` if none) on the
    devices ``selector`` names (every device if none)."""
    spec: dict[str, Any] = {"taint": dict(taint or BROKEN_TAINT)}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": spec,
    }


def request(
    name: str = "gpu",
    device_class_name: str = "gpu",
    *selectors: str,
    count: int | None = None,
    mode: str | None = None,
    admin: bool = False,
    tolerations: list[dict] | None = None,
) -> dict:
    exactly: dict[str, Any] = {"deviceClassName": device_class_name}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if count is not None:
        exactly["count"] = count
    if mode is not None:
        exactly["allocationMode"] = mode
    if admin:
        exactly["adminAccess"] = True
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"name": name, "exactly": exactly}


def first_available(name: str, *alternatives: tuple[str, str, str]) -> dict:
    """A request with alternatives (sub name, class, selector or "")."""
    subs = []
    for sub, cls, selector in alternatives:
        entry: dict[str, Any] = {"name": sub, "deviceClassName": cls}
        if selector:
            entry["selectors"] = [{"cel": {"expression": selector}}]
        subs.append(entry)
    return {"name": name, "firstAvailable": subs}


def claim(
    name: str,
    *requests: dict,
    namespace: str = "default",
    constraints: list[dict] | None = None,
    config: list[dict] | None = None,
    uid: str | None = None,
    owner_uid: str | None = None,
) -> dict:
    devices: dict[str, Any] = {"requests": list(requests or [request()])}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "resourceVersion": "1",
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid, "controller": True}
        ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": devices},
    }


def allocated(
    obj: dict, node: str, *devices: str, pool: str | None = None, reserved: tuple[str, ...] = ()
) -> dict:
    """``obj`` with an allocation of ``devices`` on ``node`` and reservations for pod uids."""
    result = {
        **obj,
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": pool or node, "device": d}
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": f"pod-{u}", "uid": u} for u in reserved],
        },
    }
    return result


def holding(
    *devices: tuple[str, str, str], shares: tuple[tuple[tuple[str, str, str], dict], ...] = ()
) -> dict:
    """A claim allocated elsewhere, holding ``devices`` and ``shares`` (device, consumedCapacity)."""
    results: list[dict[str, Any]] = [
        {"request": "r", "driver": d[0], "pool": d[1], "device": d[2]} for d in devices
    ]
    for i, (d, consumed) in enumerate(shares):
        share: dict[str, Any] = {
            "request": "r",
            "driver": d[0],
            "pool": d[1],
            "device": d[2],
            "shareID": f"share-{i}",
        }
        if consumed:
            share["consumedCapacity"] = consumed
        results.append(share)
    name = "held-" + "-".join(d[2] for d in devices) + f"-{len(shares)}"
    return {**claim(name), "status": {"allocation": {"devices": {"results": results}}}}


def allocated_view(*claims: dict) -> Any:
    """What the allocator sees as held by ``claims`` (as the plugin reads it from its tracker)."""
    from scheduler.dra.claims import ClaimTracker
    from scheduler.testing import FakeLister

    return ClaimTracker(FakeLister(claims)).allocated_devices()


def counter_slice(
    name: str, sets: dict[str, dict[str, str]], pool: str, node: str | None = None, count: int = 2
) -> dict:
    """A slice of a pool's shared counters (never with devices): counter set -> counter -> value."""
    result = resource_slice(name, [], node=node, pool=pool, count=count, all_nodes=node is None)
    del result["spec"]["devices"]
    result["spec"]["sharedCounters"] = [
        {"name": s, "counters": {c: {"value": v} for c, v in counters.items()}}
        for s, counters in sets.items()
    ]
    return result


def partition(name: str, consumes: dict[str, dict[str, str]], **attrs: Any) -> dict:
    """A device consuming counters (counter set -> counter -> value) of its pool."""
    result = device(name, **attrs)
    result["consumesCounters"] = [
        {"counterSet": s, "counters": {c: {"value": v} for c, v in counters.items()}}
        for s, counters in consumes.items()
    ]
    return result


def shared_device(name: str, capacity: dict[str, dict[str, Any]], **attrs: Any) -> dict:
    """A device allowing multiple allocations: capacity name -> {"value": ..., "requestPolicy": ...}."""
    return {**device(name, **attrs), "allowMultipleAllocations": True, "capacity": capacity}


def with_capacity(req: dict, **amounts: str) -> dict:
    """``req`` asking device capacity (``capacity.requests``)."""
    req["exactly"]["capacity"] = {"requests": dict(amounts)}
    return req
