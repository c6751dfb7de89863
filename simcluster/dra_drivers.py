"""Simulated DRA drivers: the devices a node template declares, published as a kubelet plugin would.

A node group's `devices` (one mapping or a list of them) names a `driver`, a `count`, optional
`namePrefix` (default: the driver's first DNS label and "-", e.g. `gpu-`), `attributes` and
`capacity`. Attribute values are typed by YAML: integers become `int`, booleans `bool`,
strings `string`; a one-key mapping (`{version: 1.2.3}`) is taken as written. Capacities are
quantities. Every device also gets a `uuid` attribute, stable for its node and name.

Per node and driver one ResourceSlice is published: generated name
`<00000>-<driver>-<node>-<random>` as upstream's slice controller names them, pool named after
the node (generation 1, one slice), `nodeName` set, controlled by the Node so the garbage
collector removes it with the node. Each driver gets a DeviceClass of the same name selecting
its devices, unless one exists already.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simcluster.resources import BY_STORE_NAME

if TYPE_CHECKING:
    from simcluster.api import Api

Obj = dict[str, Any]
SLICES, CLASSES = BY_STORE_NAME["resourceslices"], BY_STORE_NAME["deviceclasses"]
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PREFIX = re.compile(r"^[a-z0-9][-a-z0-9]*$")
_TYPED = ("int", "bool", "string", "version")


@dataclass(slots=True, frozen=True)
class DeviceSet:
    """`count` alike devices of one driver on each node of a group."""

    driver: str
    count: int
    name_prefix: str
    attributes: Mapping[str, Obj] = field(default_factory=dict)
    capacity: Mapping[str, Obj] = field(default_factory=dict)

    def device_names(self) -> list[str]:
        return [f"{self.name_prefix}{i}" for i in range(self.count)]


def _attribute(value: Any, where: str) -> Obj:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPED:
        return dict(value)
    raise ValueError(f"{where}: expected a string, integer, boolean or one of {{{', '.join(_TYPED)}: value}}")


def _device_set(raw: Any, where: str) -> DeviceSet:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(raw).__name__}")
    unknown = set(raw) - {"driver", "count", "namePrefix", "attributes", "capacity"}
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    driver = raw.get("driver")
    if not isinstance(driver, str) or not _SUBDOMAIN.match(driver) or len(driver) > 63:
        raise ValueError(
            f"{where}.driver: must be a DNS subdomain of at most 63 characters, e.g. gpu.example.com"
        )
    count = raw.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"{where}.count: must be a non-negative integer")
    prefix = raw.get("namePrefix", driver.split(".")[0] + "-")
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise ValueError(f"{where}.namePrefix: must start a lowercase RFC 1123 label, e.g. gpu-")
    attributes = raw.get("attributes") or {}
    capacity = raw.get("capacity") or {}
    if not isinstance(attributes, dict) or not isinstance(capacity, dict):
        raise ValueError(f"{where}: attributes and capacity must be mappings")
    return DeviceSet(
        driver=driver,
        count=count,
        name_prefix=prefix,
        attributes={str(k): _attribute(v, f"{where}.attributes.{k}") for k, v in attributes.items()},
        capacity={str(k): {"value": str(v)} for k, v in capacity.items()},
    )


def parse_devices(raw: Any, where: str) -> tuple[DeviceSet, ...]:
    """A node group's `devices`; raises ValueError naming the field (`where` is its path)."""
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else [raw]
    sets = tuple(
        _device_set(item, f"{where}[{i}]" if isinstance(raw, list) else where) for i, item in enumerate(items)
    )
    seen: set[tuple[str, str]] = set()
    for device_set in sets:
        key = (device_set.driver, device_set.name_prefix)
        if key in seen:
            raise ValueError(f"{where}: two sets of {key[0]} devices named {key[1]}N: give one a namePrefix")
        seen.add(key)
    return sets


def device_class(driver: str) -> Obj:
    """The DeviceClass a driver installs with itself: every device of that driver."""
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    return {"metadata": {"name": driver}, "spec": {"selectors": [selector]}}


def resource_slice(node: Obj, driver: str, sets: Iterable[DeviceSet]) -> Obj:
    """The ResourceSlice a driver's kubelet plugin publishes for `node` (a stored Node)."""
    meta = node["metadata"]
    name = meta["name"]
    devices = []
    for device_set in sets:
        for device in device_set.device_names():
            stable = uuid.uuid5(uuid.NAMESPACE_URL, f"{driver}/{name}/{device}")
            attributes = {
                **device_set.attributes,
                "uuid": {"string": f"{device_set.name_prefix.upper()}{stable}"},
            }
            entry: Obj = {"name": device, "attributes": attributes}
            if device_set.capacity:
                entry["capacity"] = dict(device_set.capacity)
            devices.append(entry)
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta["uid"], "controller": True}
    return {
        "metadata": {"generateName": f"00000-{driver}-{name}-", "ownerReferences": [owner]},
        "spec": {
            "driver": driver,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": name,
            "devices": devices,
        },
    }


def publish(api: Api, devices: Mapping[str, tuple[DeviceSet, ...]]) -> None:
    """Publish the slices of every node that has devices, and each driver's DeviceClass."""
    drivers: set[str] = set()
    for node_name, sets in devices.items():
        node = api.store.entry("nodes", None, node_name)
        if node is None or not sets:
            continue
        by_driver: dict[str, list[DeviceSet]] = {}
        for device_set in sets:
            by_driver.setdefault(device_set.driver, []).append(device_set)
        for driver, of_driver in by_driver.items():
            api.create(SLICES, None, resource_slice(node.obj, driver, of_driver))
            drivers.add(driver)
    for driver in sorted(drivers):
        if api.store.entry("deviceclasses", None, driver) is None:
            api.create(CLASSES, None, device_class(driver))
