"""ResourceSlices read into pools of devices, and which pools a node can use.

A pool (driver, pool name) is published in one or more slices; only its newest generation
counts, and it is usable only once all ``resourceSliceCount`` slices of that generation are
seen (otherwise it is *incomplete*: an ExactCount request skips it, an All request fails). A
slice serves one node (``nodeName``), the nodes its ``nodeSelector`` matches, or all nodes.

Devices that need a feature pyscheduler does not implement yet (partitionable devices,
consumable capacity, binding conditions) are never offered: as upstream with that feature
off, they are left out, and ``Pool.skipped`` names the feature so a failure can say why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.quantity import QuantityError
from scheduler.api.selectors import NodeSelector, SelectorError
from scheduler.dra.cel import CelDevice, quantity_value, semver_value

PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
BINDING_CONDITIONS = "DRADeviceBindingConditions"

DeviceID = tuple[str, str, str]  # driver, pool, device


@dataclass(slots=True, eq=False)
class Device:
    """One device of a slice; ``matches`` caches selector results for this slice version."""

    id: DeviceID
    name: str
    attributes: Mapping[str, Any]  # qualified name -> the API's attribute value
    cel: CelDevice
    taints: tuple[Mapping[str, Any], ...]
    slice: Slice
    matches: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class Slice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    all_nodes: bool
    node_selector: NodeSelector | None
    raw_node_selector: Mapping[str, Any] | None
    devices: list[Device]
    skipped: set[str]  # features of devices left out


class SliceError(ValueError):
    """A slice that cannot be read; it is left out (reported once by whoever reads it)."""


def _attribute_value(value: Mapping[str, Any]) -> Any:
    if "int" in value:
        return int(value["int"])
    if "bool" in value:
        return bool(value["bool"])
    if "string" in value:
        return str(value["string"])
    if "version" in value:
        return semver_value(str(value["version"]))
    raise SliceError("unsupported attribute value")


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _cel_device(driver: str, raw: Mapping[str, Any]) -> CelDevice:
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (raw.get("attributes") or {}).items():
        domain, ident = _split(name, driver)
        try:
            attributes.setdefault(domain, {})[ident] = _attribute_value(value)
        except ValueError as exc:
            raise SliceError(f"attribute {name}: {exc}") from None
    capacity: dict[str, dict[str, Any]] = {}
    for name, value in (raw.get("capacity") or {}).items():
        domain, ident = _split(name, driver)
        try:
            capacity.setdefault(domain, {})[ident] = quantity_value(str(value.get("value", "0")))
        except QuantityError as exc:
            raise SliceError(f"capacity {name}: {exc}") from None
    return CelDevice(driver, attributes, capacity, bool(raw.get("allowMultipleAllocations")))


def _unsupported(raw: Mapping[str, Any]) -> str | None:
    if raw.get("consumesCounters") or raw.get("nodeName") or raw.get("nodeSelector") or raw.get("allNodes"):
        return PARTITIONABLE_DEVICES
    if raw.get("bindingConditions"):
        return BINDING_CONDITIONS
    if raw.get("allowMultipleAllocations"):
        return CONSUMABLE_CAPACITY
    return None


def parse_slice(obj: Mapping[str, Any]) -> Slice:
    try:
        spec = obj["spec"]
        driver = str(spec["driver"])
        pool = spec["pool"]
        raw_selector = spec.get("nodeSelector")
        node_selector = NodeSelector.parse(raw_selector) if raw_selector else None
        result = Slice(
            name=str(obj["metadata"]["name"]),
            driver=driver,
            pool=str(pool["name"]),
            generation=int(pool.get("generation") or 0),
            slice_count=int(pool.get("resourceSliceCount") or 1),
            node_name=str(spec.get("nodeName") or ""),
            all_nodes=bool(spec.get("allNodes")),
            node_selector=node_selector,
            raw_node_selector=raw_selector,
            devices=[],
            skipped=set(),
        )
        if spec.get("sharedCounters") or spec.get("perDeviceNodeSelection"):
            result.skipped.add(PARTITIONABLE_DEVICES)
            return result
        for raw in spec.get("devices") or ():
            feature = _unsupported(raw)
            if feature:
                result.skipped.add(feature)
                continue
            name = str(raw["name"])
            result.devices.append(
                Device(
                    id=(driver, result.pool, name),
                    name=name,
                    attributes=raw.get("attributes") or {},
                    cel=_cel_device(driver, raw),
                    taints=tuple(raw.get("taints") or ()),
                    slice=result,
                )
            )
        return result
    except (KeyError, TypeError, AttributeError, ValueError, SelectorError) as exc:
        raise SliceError(f"ResourceSlice {obj.get('metadata', {}).get('name')}: {exc}") from None


@dataclass(slots=True, eq=False)
class Pool:
    driver: str
    name: str
    slices: list[Slice]  # the newest generation's slices that serve the node
    incomplete: bool = False
    invalid: str = ""  # why the pool cannot be used (duplicate device names)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"

    def devices(self) -> Iterable[Device]:
        for s in self.slices:
            yield from s.devices


@dataclass(slots=True, eq=False)
class _PoolState:
    """One pool across all nodes: its newest generation's slices."""

    driver: str
    name: str
    slices: list[Slice]
    complete: bool
    invalid: str


class SliceIndex:
    """All pools of the cluster, indexed for the per-node question ``pools_for``."""

    def __init__(self, slices: Sequence[Slice]) -> None:
        newest: dict[tuple[str, str], list[Slice]] = {}
        for s in slices:
            group = newest.setdefault((s.driver, s.pool), [])
            if group and s.generation < group[0].generation:
                continue
            if group and s.generation > group[0].generation:
                group.clear()
            group.append(s)
        self._by_node: dict[str, list[_PoolState]] = {}
        self._cluster_wide: list[_PoolState] = []
        # per node: the labels it was asked with and its pools (while the slices are unchanged)
        self._answers: dict[str, tuple[Mapping[str, str], list[Pool]]] = {}
        for (driver, name), group in sorted(newest.items()):
            group.sort(key=lambda s: s.name)
            state = _PoolState(driver, name, group, len(group) == group[0].slice_count, _duplicates(group))
            nodes = {s.node_name for s in group if s.node_name}
            for node in nodes:
                self._by_node.setdefault(node, []).append(state)
            if any(not s.node_name for s in group):
                self._cluster_wide.append(state)

    def pools_for(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        known = self._answers.get(node_name)
        if known is not None and known[0] is labels:
            return known[1]
        pools = []
        for state in (*self._by_node.get(node_name, ()), *self._cluster_wide):
            serving = [s for s in state.slices if _serves(s, node_name, labels)]
            if not serving:
                continue
            pools.append(Pool(state.driver, state.name, serving, not state.complete, state.invalid))
        pools.sort(key=lambda p: (p.driver, p.name))
        self._answers[node_name] = (labels, pools)
        return pools


def _serves(s: Slice, node_name: str, labels: Mapping[str, str]) -> bool:
    if s.node_name:
        return s.node_name == node_name
    if s.all_nodes:
        return True
    if s.node_selector is not None:
        return s.node_selector.matches(labels, node_name)
    return False


def _duplicates(slices: Sequence[Slice]) -> str:
    seen: set[str] = set()
    for s in slices:
        for device in s.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return ""


class SliceParser:
    """Parsed slices memoised by the identity of the informer's objects (each update is a new
    object), so a selector's cached answers live exactly as long as the slice version."""

    def __init__(self) -> None:
        self._parsed: dict[int, tuple[Mapping[str, Any], Slice | None]] = {}
        self._index: tuple[tuple[int, ...], SliceIndex] | None = None
        self.errors: dict[str, str] = {}  # slice name -> why it is left out, reported once

    def index(self, objects: Sequence[Mapping[str, Any]]) -> SliceIndex:
        ids = tuple(map(id, objects))
        if self._index is not None and self._index[0] == ids:
            return self._index[1]
        parsed: dict[int, tuple[Mapping[str, Any], Slice | None]] = {}
        slices = []
        for obj in objects:
            known = self._parsed.get(id(obj))
            if known is None or known[0] is not obj:
                try:
                    known = (obj, parse_slice(obj))
                except SliceError as exc:
                    self.errors[str((obj.get("metadata") or {}).get("name"))] = str(exc)
                    known = (obj, None)
            parsed[id(obj)] = known
            if known[1] is not None:
                slices.append(known[1])
        self._parsed = parsed
        index = SliceIndex(slices)
        self._index = (ids, index)
        return index
