"""Simulated DRA drivers: the devices a node template declares, published as a kubelet plugin would.

A node group's `devices` (one mapping or a list of them) names a `driver`, a `count`, optional
`namePrefix` (default: the driver's first DNS label and "-", e.g. `gpu-`), `attributes` and
`capacity`. Attribute values are typed by YAML: integers become `int`, booleans `bool`,
strings `string`; a one-key mapping (`{version: 1.2.3}`) is taken as written. Capacities are
quantities, or a mapping with `value` and a `requestPolicy` as the API has it. Every device also
gets a `uuid` attribute, stable for its node and name. The features v1.36 ships:

- `counters` and `partitions` (DRAPartitionableDevices): each of the `count` physical devices
  (`gpu-0`, ...) is a counter set of that name holding `counters`, offered as its partitions,
  devices named `<physical>-<partition name>` that each consume their `consumes` from it (with
  their own `attributes` and `capacity` besides the set's);
- `allowMultipleAllocations: true` (DRAConsumableCapacity): each device is shared by claims,
  which consume its capacity;
- `bindingConditions`, `bindingFailureConditions`, `bindsToNode` (DRADeviceBindingConditions):
  the device must be attached before its pod binds; the driver reports the binding conditions
  True `attachDelay` seconds (default 1) after the device is allocated, or with `attachFails:
  true` the first failure condition (see `simcluster.dra_attach`).

Per node and driver one ResourceSlice is published (two when the driver has counters: one of
the counter sets, one of the devices, as v1.36 keeps them apart): generated name
`<00000>-<driver>-<node>-<random>` as upstream's slice controller names them, pool named after
the node (generation 1), `nodeName` set, controlled by the Node so the garbage collector removes
it with the node. A node registered later through the API whose name is a group's `namePrefix`
and a number gets its group's devices too. Each driver gets a DeviceClass of the same name
selecting its devices, unless one exists already.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simcluster.resources import BY_STORE_NAME

if TYPE_CHECKING:
    from simcluster.api import Api
    from simcluster.store import Event

Obj = dict[str, Any]
SLICES, CLASSES = BY_STORE_NAME["resourceslices"], BY_STORE_NAME["deviceclasses"]
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PREFIX = re.compile(r"^[a-z0-9][-a-z0-9]*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_TYPED = ("int", "bool", "string", "version")
_FIELDS = {
    "driver",
    "count",
    "namePrefix",
    "attributes",
    "capacity",
    "counters",
    "partitions",
    "allowMultipleAllocations",
    "bindingConditions",
    "bindingFailureConditions",
    "bindsToNode",
    "attachDelay",
    "attachFails",
}


@dataclass(slots=True, frozen=True)
class Partition:
    """A device carved out of each physical device of a set, consuming its counters."""

    name: str
    consumes: Mapping[str, Obj]  # counter -> {"value": quantity}
    attributes: Mapping[str, Obj] = field(default_factory=dict)
    capacity: Mapping[str, Obj] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class DeviceSet:
    """`count` alike devices of one driver on each node of a group."""

    driver: str
    count: int
    name_prefix: str
    attributes: Mapping[str, Obj] = field(default_factory=dict)
    capacity: Mapping[str, Obj] = field(default_factory=dict)
    counters: Mapping[str, Obj] = field(default_factory=dict)  # per physical device
    partitions: tuple[Partition, ...] = ()
    multiple: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    attach_delay: float = 1.0
    attach_fails: bool = False

    def physical_names(self) -> list[str]:
        return [f"{self.name_prefix}{i}" for i in range(self.count)]

    def device_names(self) -> list[str]:
        """The devices published: the physical ones, or each one's partitions."""
        if not self.partitions:
            return self.physical_names()
        return [f"{gpu}-{p.name}" for gpu in self.physical_names() for p in self.partitions]


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


def _attributes(raw: Any, where: str) -> dict[str, Obj]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be a mapping")
    return {str(k): _attribute(v, f"{where}.{k}") for k, v in raw.items()}


def _capacity(raw: Any, where: str) -> dict[str, Obj]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be a mapping")
    result = {}
    for name, value in raw.items():
        if isinstance(value, dict):
            if "value" not in value or set(value) - {"value", "requestPolicy"}:
                raise ValueError(f"{where}.{name}: expected a quantity or {{value, requestPolicy}}")
            result[str(name)] = {**value, "value": str(value["value"])}
        else:
            result[str(name)] = {"value": str(value)}
    return result


def _counters(raw: Any, where: str) -> dict[str, Obj]:
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{where}: must be a mapping of counter names to quantities")
    for name in raw:
        if not isinstance(name, str) or not _LABEL.match(name):
            raise ValueError(f"{where}.{name}: a counter name must be a lowercase RFC 1123 label")
    return {name: {"value": str(value)} for name, value in raw.items()}


def _partition(raw: Any, where: str, counters: Mapping[str, Obj]) -> Partition:
    if not isinstance(raw, dict) or set(raw) - {"name", "consumes", "attributes", "capacity"}:
        raise ValueError(f"{where}: expected a mapping with name, consumes, attributes, capacity")
    name = raw.get("name")
    if not isinstance(name, str) or not _LABEL.match(name):
        raise ValueError(f"{where}.name: must be a lowercase RFC 1123 label, e.g. half-a")
    consumes = _counters(raw.get("consumes"), f"{where}.consumes")
    unknown = sorted(set(consumes) - set(counters))
    if unknown:
        raise ValueError(f"{where}.consumes: {', '.join(unknown)} not among the set's counters")
    return Partition(
        name=name,
        consumes=consumes,
        attributes=_attributes(raw.get("attributes") or {}, f"{where}.attributes"),
        capacity=_capacity(raw.get("capacity") or {}, f"{where}.capacity"),
    )


def _conditions(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(c, str) and c for c in raw):
        raise ValueError(f"{where}: must be a list of condition types")
    return tuple(raw)


def _device_set(raw: Any, where: str) -> DeviceSet:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _FIELDS
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
    counters = _counters(raw["counters"], f"{where}.counters") if "counters" in raw else {}
    partitions = raw.get("partitions") or []
    if not isinstance(partitions, list) or bool(partitions) != bool(counters):
        raise ValueError(f"{where}: counters and partitions (a list) go together")
    delay = raw.get("attachDelay", 1.0)
    if not isinstance(delay, int | float) or isinstance(delay, bool) or delay < 0:
        raise ValueError(f"{where}.attachDelay: must be a non-negative number of seconds")
    return DeviceSet(
        driver=driver,
        count=count,
        name_prefix=prefix,
        attributes=_attributes(raw.get("attributes") or {}, f"{where}.attributes"),
        capacity=_capacity(raw.get("capacity") or {}, f"{where}.capacity"),
        counters=counters,
        partitions=tuple(
            _partition(p, f"{where}.partitions[{i}]", counters) for i, p in enumerate(partitions)
        ),
        multiple=bool(raw.get("allowMultipleAllocations")),
        binding_conditions=_conditions(raw.get("bindingConditions"), f"{where}.bindingConditions"),
        binding_failure_conditions=_conditions(
            raw.get("bindingFailureConditions"), f"{where}.bindingFailureConditions"
        ),
        binds_to_node=bool(raw.get("bindsToNode")),
        attach_delay=float(delay),
        attach_fails=bool(raw.get("attachFails")),
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


def _entry(device_set: DeviceSet, driver: str, node: str, name: str, partition: Partition | None) -> Obj:
    stable = uuid.uuid5(uuid.NAMESPACE_URL, f"{driver}/{node}/{name}")
    attributes = {
        **device_set.attributes,
        **(partition.attributes if partition else {}),
        "uuid": {"string": f"{device_set.name_prefix.upper()}{stable}"},
    }
    entry: Obj = {"name": name, "attributes": attributes}
    capacity = {**device_set.capacity, **(partition.capacity if partition else {})}
    if capacity:
        entry["capacity"] = capacity
    if device_set.multiple:
        entry["allowMultipleAllocations"] = True
    if device_set.binding_conditions:
        entry["bindingConditions"] = list(device_set.binding_conditions)
    if device_set.binding_failure_conditions:
        entry["bindingFailureConditions"] = list(device_set.binding_failure_conditions)
    if device_set.binds_to_node:
        entry["bindsToNode"] = True
    return entry


def _devices(node: str, driver: str, device_set: DeviceSet) -> list[Obj]:
    if not device_set.partitions:
        return [_entry(device_set, driver, node, name, None) for name in device_set.physical_names()]
    devices = []
    for physical in device_set.physical_names():
        for partition in device_set.partitions:
            entry = _entry(device_set, driver, node, f"{physical}-{partition.name}", partition)
            entry["consumesCounters"] = [{"counterSet": physical, "counters": dict(partition.consumes)}]
            devices.append(entry)
    return devices


def resource_slices(node: Obj, driver: str, sets: Iterable[DeviceSet]) -> list[Obj]:
    """The ResourceSlices a driver's kubelet plugin publishes for `node` (a stored Node)."""
    meta = node["metadata"]
    name = meta["name"]
    sets = list(sets)
    counter_sets = [
        {"name": physical, "counters": dict(s.counters)}
        for s in sets
        if s.partitions
        for physical in s.physical_names()
    ]
    pool = {"name": name, "generation": 1, "resourceSliceCount": 2 if counter_sets else 1}
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta["uid"], "controller": True}

    def slice_of(content: Obj) -> Obj:
        return {
            "metadata": {"generateName": f"00000-{driver}-{name}-", "ownerReferences": [owner]},
            "spec": {"driver": driver, "pool": dict(pool), "nodeName": name, **content},
        }

    slices = [slice_of({"devices": [d for s in sets for d in _devices(name, driver, s)]})]
    if counter_sets:
        slices.append(slice_of({"sharedCounters": counter_sets}))
    return slices


def group_of(node_name: str, groups: Mapping[str, tuple[DeviceSet, ...]]) -> tuple[DeviceSet, ...]:
    """The devices of the group a node belongs to by name (its namePrefix and a number)."""
    for prefix in sorted(groups, key=len, reverse=True):
        if node_name.startswith(prefix) and node_name[len(prefix) :].isdigit():
            return groups[prefix]
    return ()


class DevicePublisher:
    """Publishes the slices of every node whose group has devices: those there at the start, and
    nodes registered later (a turn of the event loop after their creation)."""

    def __init__(self, api: Api, groups: Mapping[str, tuple[DeviceSet, ...]]) -> None:
        self.api = api
        self.groups = {prefix: sets for prefix, sets in groups.items() if sets}
        self._published: set[str] = set()
        for entry in api.store.entries("nodes"):
            self.publish(entry.obj)
        api.store.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    def _on_event(self, resource: str, event: Event) -> None:
        if resource != "nodes":
            return
        name = event.obj["metadata"]["name"]
        if event.type == "DELETED":
            self._published.discard(name)
        elif event.type == "ADDED" and name not in self._published and group_of(name, self.groups):
            asyncio.get_running_loop().call_soon(self._publish_stored, name)

    def _publish_stored(self, name: str) -> None:
        node = self.api.store.entry("nodes", None, name)
        if node is not None:
            self.publish(node.obj)

    def publish(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        sets = group_of(name, self.groups)
        if name in self._published or not sets:
            return
        self._published.add(name)
        by_driver: dict[str, list[DeviceSet]] = {}
        for device_set in sets:
            by_driver.setdefault(device_set.driver, []).append(device_set)
        for driver, of_driver in by_driver.items():
            for published in resource_slices(node, driver, of_driver):
                self.api.create(SLICES, None, published)
            if self.api.store.entry("deviceclasses", None, driver) is None:
                self.api.create(CLASSES, None, device_class(driver))
