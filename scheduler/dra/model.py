"""ResourceSlices read into pools of devices, and which pools a node can use.

A pool (driver, pool name) is published in one or more slices; only its newest generation
counts, and it is usable only once all ``resourceSliceCount`` slices of that generation are
seen (otherwise it is *incomplete*: an ExactCount request skips it, an All request fails). A
slice serves one node (``nodeName``), the nodes its ``nodeSelector`` matches, or all nodes;
as upstream, each node's pools are gathered from the slices that serve it.

Devices that need a feature pyscheduler does not implement yet (partitionable devices,
consumable capacity, binding conditions) are never offered: as upstream with that feature
off, they are left out, and ``Slice.skipped`` names the feature so a failure can say why.
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
    # the driver's domain is there even when empty, so selectors need no copy with it added
    attributes.setdefault(driver, {})
    capacity.setdefault(driver, {})
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
            # None of its devices is offered; as serving every node (upstream: the nodes one of
            # its devices names), it counts toward its pool there and a failure names the feature.
            result.skipped.add(PARTITIONABLE_DEVICES)
            result.all_nodes = not result.node_name
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


class SliceIndex:
    """All slices of the cluster, indexed for the per-node question ``pools_for``."""

    def __init__(self, slices: Sequence[Slice]) -> None:
        self._by_node: dict[str, list[Slice]] = {}
        self._cluster_wide: list[Slice] = []
        # per pool: how many slices each generation has, cluster-wide
        self._generations: dict[tuple[str, str], dict[int, int]] = {}
        # per node: the labels it was asked with, its pools and the devices of the usable ones
        # (while the slices are unchanged)
        self._answers: dict[str, tuple[Mapping[str, str], list[Pool], list[Device]]] = {}
        for s in slices:
            if s.node_name:
                self._by_node.setdefault(s.node_name, []).append(s)
            else:
                self._cluster_wide.append(s)
            counts = self._generations.setdefault((s.driver, s.pool), {})
            counts[s.generation] = counts.get(s.generation, 0) + 1

    def pools_for(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        """As upstream gathers them: per pool the newest generation among the slices serving the
        node; complete when those are all its slices, or when the cluster holds all of that
        generation and no newer one (else a newer generation elsewhere makes it obsolete: left
        out; or it is incomplete). Only the serving slices are checked for duplicate names."""
        return self._answer(node_name, labels)[0]

    def usable_devices(self, node_name: str, labels: Mapping[str, str]) -> list[Device]:
        """The devices of the node's complete, valid pools, in the order they are searched."""
        return self._answer(node_name, labels)[1]

    def _answer(self, node_name: str, labels: Mapping[str, str]) -> tuple[list[Pool], list[Device]]:
        known = self._answers.get(node_name)
        if known is not None and known[0] is labels:
            return known[1], known[2]
        serving: dict[tuple[str, str], list[Slice]] = {}
        for s in (*self._by_node.get(node_name, ()), *self._cluster_wide):
            if not _serves(s, node_name, labels):
                continue
            group = serving.setdefault((s.driver, s.pool), [])
            if group and s.generation < group[0].generation:
                continue
            if group and s.generation > group[0].generation:
                group.clear()
            group.append(s)
        pools = []
        for (driver, name), group in sorted(serving.items()):
            generation, wanted = group[0].generation, group[0].slice_count
            if len(group) != wanted:
                counts = self._generations[(driver, name)]
                if max(counts) > generation:
                    continue
                if counts[generation] != wanted:
                    pools.append(Pool(driver, name, [], incomplete=True))
                    continue
            group.sort(key=lambda s: s.name)
            pools.append(Pool(driver, name, group, invalid=_duplicates(group)))
        usable = [d for p in pools if not (p.incomplete or p.invalid) for d in p.devices()]
        self._answers[node_name] = (labels, pools, usable)
        return pools, usable


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
