"""Extended resources backed by DRA (DRAExtendedResource, beta and on in v1.36).

A DeviceClass serves the extended resource named in its ``spec.extendedResourceName`` and,
always, ``deviceclass.resource.kubernetes.io/<class name>``. A pod requesting such a resource
on a node that does not advertise it in allocatable gets devices instead: the scheduler
allocates one *special claim* for the pod (one ExactCount request per container and resource),
creates it at PreBind owned by the pod and records it in ``status.extendedResourceClaimStatus``.

This module holds the pure parts: which class serves a resource, the special claim in memory,
the claim a pod already got in an earlier cycle, and the requests with their container mapping.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.api import Pod
from scheduler.api.quantity import QuantityError, parse_quantity
from scheduler.config.extenders import is_extended_resource_name

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# Not a valid object name on purpose: the claim only has this name until PreBind creates it.
IN_MEMORY_NAME = "<extended-resources>"
EXACT_COUNT = "ExactCount"

ClassMap = Mapping[str, Mapping[str, Any]]


def is_dra_extended_resource_name(name: str) -> bool:
    """Upstream's IsDRAExtendedResourceName: an extended resource or a class's implicit name."""
    return name.startswith(DEVICE_CLASS_PREFIX) or is_extended_resource_name(name)


class ClassMaps:
    """``class_map`` of a DeviceClass lister, rebuilt only when its objects changed (the
    informer replaces an object on every change, so identical objects mean an identical map):
    NodeResourcesFit asks for it several times per cycle for a pod with extended resources."""

    __slots__ = ("_classes", "_map")

    def __init__(self) -> None:
        self._classes: list[Mapping[str, Any]] = []
        self._map: dict[str, Mapping[str, Any]] = {}

    def of(self, classes: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        if len(classes) != len(self._classes) or any(
            a is not b for a, b in zip(classes, self._classes, strict=True)
        ):
            self._classes, self._map = classes, class_map(classes)
        return self._map


def class_map(classes: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Resource name -> the DeviceClass serving it. Several classes naming the same extended
    resource: the one created last wins, equal timestamps the smallest name (as upstream's
    cache resolves them)."""
    found: dict[str, Mapping[str, Any]] = {}
    for cls in classes:
        meta = cls.get("metadata") or {}
        found[DEVICE_CLASS_PREFIX + str(meta.get("name", ""))] = cls
        name = (cls.get("spec") or {}).get("extendedResourceName")
        if not name:
            continue
        current = found.get(name)
        if current is None or _wins(meta, current.get("metadata") or {}):
            found[name] = cls
    return found


def _wins(meta: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    created, other_created = str(meta.get("creationTimestamp", "")), str(other.get("creationTimestamp", ""))
    if created != other_created:
        return created > other_created
    return str(meta.get("name", "")) < str(other.get("name", ""))


def dra_backed(requests: Mapping[str, int], classes: ClassMap) -> dict[str, int]:
    """The pod's non-zero requests that some DeviceClass serves."""
    return {name: quantity for name, quantity in requests.items() if quantity and name in classes}


def special_owner(claim: Mapping[str, Any]) -> str:
    """The uid of the pod controlling a special claim; "" for any other claim."""
    meta = claim.get("metadata") or {}
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return ""
    return next((str(o.get("uid", "")) for o in meta.get("ownerReferences") or () if o.get("controller")), "")


def is_special_for(pod: Pod, claim: Mapping[str, Any]) -> bool:
    """Whether ``claim`` is the special claim an earlier cycle created for ``pod``."""
    owners = (claim.get("metadata") or {}).get("ownerReferences") or ()
    return special_owner(claim) == pod.uid and any(
        o.get("controller") and o.get("uid") == pod.uid and o.get("name") == pod.name for o in owners
    )


def in_memory_claim(pod: Pod) -> dict[str, Any]:
    """The special claim before PreBind creates it: no requests yet (Filter fills them per node)
    and a temporary uid; the server gives it a name from ``generateName``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": IN_MEMORY_NAME,
            "uid": str(uuid.uuid4()),
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
            ],
            "annotations": {CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def is_in_memory(claim: Mapping[str, Any]) -> bool:
    return (claim.get("metadata") or {}).get("name") == IN_MEMORY_NAME


def _count(value: Any) -> int:
    """A container's request as a whole number of devices; 0 when it is not an integer."""
    try:
        quantity = parse_quantity(value)
    except QuantityError:
        return 0
    return int(quantity) if quantity.denominator == 1 else 0


def _request(
    index: int, requests: Mapping[str, Any], resource: str, class_name: str, count: int
) -> dict[str, Any]:
    # named after the container's position and the resource's among its sorted requests
    position = sorted(requests).index(resource)
    return {
        "name": f"container-{index}-request-{position}",
        "exactly": {"deviceClassName": class_name, "allocationMode": EXACT_COUNT, "count": count},
    }


def _mapping(container: str, resource: str, request: str) -> dict[str, str]:
    return {"containerName": container, "resourceName": resource, "requestName": request}


def requests_and_mappings(
    pod: Pod, resources: Iterable[str], classes: ClassMap
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The special claim's device requests for ``resources`` and which container uses which
    request, as upstream builds them: a container or sidecar gets a request of its own; a plain
    init container first reuses the requests of the long-lived containers after it, asks for
    the rest, and all plain init containers share the largest such request."""
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        cls = classes.get(resource)
        if cls is None:
            continue
        class_name = str((cls.get("metadata") or {}).get("name", ""))
        long_lived: list[tuple[int, dict[str, Any]]] = []
        long_mappings: list[dict[str, str]] = []
        for c in pod.container_requests:
            count = _count(c.requests.get(resource, 0)) if c.long_lived else 0
            if count:
                request = _request(c.index, c.requests, resource, class_name, count)
                long_lived.append((c.index, request))
                long_mappings.append(_mapping(c.name, resource, request["name"]))
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for c in pod.container_requests:
            count = _count(c.requests.get(resource, 0)) if not c.long_lived else 0
            if not count:
                continue
            covered = 0
            for index, reused in long_lived:
                if index < c.index:
                    continue
                covered += reused["exactly"]["count"]
                short_mappings.append(_mapping(c.name, resource, reused["name"]))
                if covered >= count:
                    break
            if covered >= count:
                continue
            request = _request(c.index, c.requests, resource, class_name, count - covered)
            short_names.add(request["name"])
            short_mappings.append(_mapping(c.name, resource, request["name"]))
            if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                largest = request
        if largest is not None:
            requests.append(largest)
            if len(short_names) > 1:
                for m in short_mappings:
                    if m["requestName"] in short_names:
                        m["requestName"] = largest["name"]
        requests.extend(request for _, request in long_lived)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings
