"""ResourceSlices read into pools of devices, and which pools a node can use.

A pool (driver, pool name) is published in one or more slices; only its newest generation
counts, and it is usable only once all ``resourceSliceCount`` slices of that generation are
seen (otherwise it is *incomplete*: an ExactCount request skips it, an All request fails). A
slice serves one node (``nodeName``), the nodes its ``nodeSelector`` matches, all nodes, or
with ``perDeviceNodeSelection`` the nodes each of its devices names; as upstream, each node's
pools are gathered from the slices that serve it.

Partitionable devices (DRAPartitionableDevices): a pool may hold slices of ``sharedCounters``
(counter sets, never with devices in one slice), and its devices consume from them
(``consumesCounters``). Counter slices belong to their pool on every node. The counters a pool
has left are its counter sets minus what its allocated devices consume, on any node
(``SliceIndex.available_counters``, kept until the pool's allocations change). A pool whose
counter sets repeat a name, or whose devices consume a set or counter it lacks, is invalid.

Pools whose devices have binding conditions (DRADeviceBindingConditions) are searched last, as
upstream orders them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from scheduler.api.quantity import Quantity, QuantityError, parse_quantity
from scheduler.api.selectors import NodeSelector, SelectorError
from scheduler.dra.cel import CelDevice, quantity_value, semver_value

DeviceID = tuple[str, str, str]  # driver, pool, device
PoolKey = tuple[str, str]  # driver, pool
Amount = int | Fraction  # an exact quantity value: an int when whole, as most are
CounterKey = tuple[str, str]  # counter set, counter


def amount(text: Any) -> Amount:
    value = parse_quantity(text)
    return int(value) if value.denominator == 1 else value


@dataclass(slots=True, frozen=True)
class RequestPolicy:
    """How a shared device's capacity is consumed (``capacity.<name>.requestPolicy``)."""

    default: Quantity | None
    valid_values: tuple[Quantity, ...]
    has_range: bool
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


@dataclass(slots=True, frozen=True)
class Capacity:
    value: Quantity
    policy: RequestPolicy | None


@dataclass(slots=True, eq=False)
class Device:
    """One device of a slice; ``matches`` caches selector results for this slice version and
    ``fits`` the capacity checks that depend only on the device and the request."""

    id: DeviceID
    name: str
    attributes: Mapping[str, Any]  # qualified name -> the API's attribute value
    cel: CelDevice
    taints: tuple[Mapping[str, Any], ...]  # the slice's, then those of DeviceTaintRules
    slice: Slice
    capacity: Mapping[str, Capacity] = field(default_factory=dict)
    multiple: bool = False  # allowMultipleAllocations
    consumes: tuple[tuple[str, tuple[tuple[str, Amount], ...]], ...] = ()  # counter set, counters
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    # with the slice's perDeviceNodeSelection: where this device is available
    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    raw_node_selector: Mapping[str, Any] | None = None
    matches: dict[str, bool] = field(default_factory=dict)
    fits: dict[Hashable, bool] = field(default_factory=dict)
    own_taints: tuple[Mapping[str, Any], ...] = ()  # the slice's alone


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
    per_device: bool = False  # perDeviceNodeSelection
    counter_sets: tuple[tuple[str, dict[str, Amount]], ...] = ()  # name, counters
    has_binding_conditions: bool = False

    @property
    def key(self) -> PoolKey:
        return (self.driver, self.pool)


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


def _optional(raw: Any) -> Quantity | None:
    return None if raw is None else Quantity.parse(raw)


def _policy(raw: Mapping[str, Any] | None) -> RequestPolicy | None:
    if raw is None:
        return None
    valid_range = raw.get("validRange")
    return RequestPolicy(
        default=_optional(raw.get("default")),
        valid_values=tuple(Quantity.parse(v) for v in raw.get("validValues") or ()),
        has_range=valid_range is not None,
        min=_optional((valid_range or {}).get("min")),
        max=_optional((valid_range or {}).get("max")),
        step=_optional((valid_range or {}).get("step")),
    )


def _capacity(raw: Mapping[str, Any]) -> dict[str, Capacity]:
    result = {}
    for name, value in (raw.get("capacity") or {}).items():
        try:
            result[str(name)] = Capacity(
                Quantity.parse(value.get("value", "0")), _policy(value.get("requestPolicy"))
            )
        except QuantityError as exc:
            raise SliceError(f"capacity {name}: {exc}") from None
    return result


def _counters(raw: Mapping[str, Any] | None, where: str) -> dict[str, Amount]:
    try:
        return {str(name): amount((c or {}).get("value", "0")) for name, c in (raw or {}).items()}
    except QuantityError as exc:
        raise SliceError(f"{where}: {exc}") from None


def _device(raw: Mapping[str, Any], result: Slice) -> Device:
    name = str(raw["name"])
    consumes = tuple(
        (
            str(c["counterSet"]),
            tuple(_counters(c.get("counters"), f"device {name}: counters of {c['counterSet']}").items()),
        )
        for c in raw.get("consumesCounters") or ()
    )
    raw_selector = raw.get("nodeSelector")
    taints = tuple(raw.get("taints") or ())
    return Device(
        id=(result.driver, result.pool, name),
        name=name,
        attributes=raw.get("attributes") or {},
        cel=_cel_device(result.driver, raw),
        taints=taints,
        slice=result,
        own_taints=taints,
        capacity=_capacity(raw),
        multiple=bool(raw.get("allowMultipleAllocations")),
        consumes=consumes,
        binding_conditions=tuple(str(c) for c in raw.get("bindingConditions") or ()),
        binding_failure_conditions=tuple(str(c) for c in raw.get("bindingFailureConditions") or ()),
        binds_to_node=bool(raw.get("bindsToNode")),
        node_name=str(raw.get("nodeName") or ""),
        all_nodes=bool(raw.get("allNodes")),
        node_selector=NodeSelector.parse(raw_selector) if raw_selector else None,
        raw_node_selector=raw_selector,
    )


def parse_slice(obj: Mapping[str, Any]) -> Slice:
    try:
        spec = obj["spec"]
        driver = str(spec["driver"])
        pool = spec["pool"]
        raw_selector = spec.get("nodeSelector")
        result = Slice(
            name=str(obj["metadata"]["name"]),
            driver=driver,
            pool=str(pool["name"]),
            generation=int(pool.get("generation") or 0),
            slice_count=int(pool.get("resourceSliceCount") or 1),
            node_name=str(spec.get("nodeName") or ""),
            all_nodes=bool(spec.get("allNodes")),
            node_selector=NodeSelector.parse(raw_selector) if raw_selector else None,
            raw_node_selector=raw_selector,
            devices=[],
            per_device=bool(spec.get("perDeviceNodeSelection")),
        )
        result.counter_sets = tuple(
            (str(s["name"]), _counters(s.get("counters"), f"counter set {s['name']}"))
            for s in spec.get("sharedCounters") or ()
        )
        result.devices = [_device(raw, result) for raw in spec.get("devices") or ()]
        result.has_binding_conditions = any(d.binding_conditions for d in result.devices)
        return result
    except (KeyError, TypeError, AttributeError, ValueError, SelectorError) as exc:
        raise SliceError(f"ResourceSlice {obj.get('metadata', {}).get('name')}: {exc}") from None


def device_serves(device: Device, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether a device of a perDeviceNodeSelection slice is available on the node."""
    if device.node_name:
        return device.node_name == node_name
    if device.all_nodes:
        return True
    if device.node_selector is not None:
        return device.node_selector.matches(labels, node_name)
    return False


@dataclass(slots=True, eq=False)
class PoolCounters:
    """What a pool generation's counters are, from all of its slices in the cluster: its counter
    sets, the devices consuming them (on any node), or why the pool is invalid."""

    counters: dict[CounterKey, Amount]
    consumers: list[Device]
    invalid: str = ""


@dataclass(slots=True, eq=False)
class Pool:
    driver: str
    name: str
    slices: list[Slice]  # the newest generation's device slices that serve the node, by name
    incomplete: bool = False
    invalid: str = ""  # why the pool cannot be used (duplicate names, bad counters)
    generation: int = 0
    devices_for_node: list[Device] = field(default_factory=list)
    binding: bool = False  # some device has binding conditions: searched after the others

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def key(self) -> PoolKey:
        return (self.driver, self.name)

    def devices(self) -> Iterable[Device]:
        """The devices available on the node, in the order they are searched."""
        return self.devices_for_node


class AllocationView(Protocol):
    """What the counters need to know of the devices allocated (``claims.AllocatedDevices``)."""

    def is_allocated(self, device: DeviceID) -> bool: ...

    def pool_version(self, pool: PoolKey) -> Hashable: ...


class SliceIndex:
    """All slices of the cluster, indexed for the per-node question ``pools_for``."""

    def __init__(self, slices: Sequence[Slice]) -> None:
        self._by_node: dict[str, list[Slice]] = {}
        self._cluster_wide: list[Slice] = []
        self._counter_slices: dict[PoolKey, list[Slice]] = {}  # serve every node, as upstream
        # per pool: its slices per generation, cluster-wide
        self._generations: dict[PoolKey, dict[int, list[Slice]]] = {}
        # per node: the labels it was asked with, its pools and the devices of the usable ones
        # (while the slices are unchanged)
        self._answers: dict[str, tuple[Mapping[str, str], list[Pool], list[Device]]] = {}
        self._pool_counters: dict[tuple[str, str, int], PoolCounters] = {}
        # per pool: the allocations' version the counters left were computed for, and them
        self._available: dict[
            tuple[str, str, int], tuple[Hashable, tuple[dict[CounterKey, Amount], bool]]
        ] = {}
        self._foreign: list[Pool] | None = None
        for s in slices:
            if s.counter_sets:
                self._counter_slices.setdefault(s.key, []).append(s)
            elif s.node_name:
                self._by_node.setdefault(s.node_name, []).append(s)
            else:
                self._cluster_wide.append(s)
            self._generations.setdefault(s.key, {}).setdefault(s.generation, []).append(s)

    def pools_for(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        """As upstream gathers them: per pool the newest generation among the slices serving the
        node (and its counter slices); complete when those are all its slices, or when the
        cluster holds all of that generation and no newer one (else a newer generation elsewhere
        makes it obsolete: left out; or it is incomplete). Only the serving slices are checked
        for duplicate names. Pools with binding conditions come last."""
        return self._answer(node_name, labels)[0]

    def devices_on(self, node_name: str, labels: Mapping[str, str]) -> Iterator[Device]:
        """Every device available on the node, of any slice serving it whatever its pool's
        generation or completeness (what NodeResourcesFit counts a DRA-backed extended resource
        by, as upstream); of a perDeviceNodeSelection slice, the devices naming the node."""
        for s in self._serving(node_name, labels):
            for device in s.devices:
                if not s.per_device or device_serves(device, node_name, labels):
                    yield device

    def _serving(self, node_name: str, labels: Mapping[str, str]) -> Iterator[Slice]:
        """The device slices serving the node (counter slices serve every node of their pool)."""
        for s in (*self._by_node.get(node_name, ()), *self._cluster_wide):
            if _serves(s, node_name, labels):
                yield s

    def usable_devices(self, node_name: str, labels: Mapping[str, str]) -> list[Device]:
        """The devices of the node's complete, valid pools, in the order they are searched."""
        return self._answer(node_name, labels)[1]

    def _answer(self, node_name: str, labels: Mapping[str, str]) -> tuple[list[Pool], list[Device]]:
        known = self._answers.get(node_name)
        if known is not None and known[0] is labels:
            return known[1], known[2]
        serving: dict[PoolKey, list[Slice]] = {}
        for s in self._serving(node_name, labels):
            _add(serving.setdefault(s.key, []), s)
        for key, group in serving.items():
            for s in self._counter_slices.get(key, ()):
                _add(group, s)
        pools = [p for key, group in serving.items() if (p := self._pool(key, group, node_name, labels))]
        # a pool only known here by its counters has no device for the node, but when it is
        # incomplete or invalid it counts as upstream counts it (All requests, the error)
        pools += (p for p in self._foreign_pools() if p.key not in serving)
        pools.sort(key=lambda p: (p.binding, p.driver, p.name))
        usable = [d for p in pools if not (p.incomplete or p.invalid) for d in p.devices_for_node]
        self._answers[node_name] = (labels, pools, usable)
        return pools, usable

    def _pool(
        self, key: PoolKey, group: list[Slice], node_name: str, labels: Mapping[str, str]
    ) -> Pool | None:
        """The pool from the node's relevant slices; None when a newer generation elsewhere makes
        them obsolete."""
        driver, name = key
        generation, wanted = group[0].generation, group[0].slice_count
        if len(group) != wanted:
            by_generation = self._generations[key]
            if max(by_generation) > generation:
                return None
            if len(by_generation[generation]) != wanted:
                return Pool(driver, name, [], incomplete=True, generation=generation)
        group.sort(key=lambda s: s.name)
        device_slices = [s for s in group if not s.counter_sets]
        pool = Pool(driver, name, device_slices, generation=generation)
        pool.invalid = _duplicates(device_slices) or self.counters_of(key, generation).invalid
        pool.binding = not pool.invalid and any(s.has_binding_conditions for s in device_slices)
        pool.devices_for_node = [
            d
            for s in device_slices
            for d in s.devices
            if not s.per_device or device_serves(d, node_name, labels)
        ]
        return pool

    def _foreign_pools(self) -> list[Pool]:
        """Incomplete or invalid pools as a node without their devices sees them."""
        if self._foreign is None:
            self._foreign = []
            for key, counter_slices in self._counter_slices.items():
                group: list[Slice] = []
                for s in counter_slices:
                    _add(group, s)
                pool = self._pool(key, group, "", {})
                if pool is not None and (pool.incomplete or pool.invalid):
                    pool.slices, pool.devices_for_node = [], []
                    self._foreign.append(pool)
        return self._foreign

    def counters_of(self, key: PoolKey, generation: int) -> PoolCounters:
        """The pool generation's counter sets and the devices consuming them, cluster-wide."""
        known = self._pool_counters.get((*key, generation))
        if known is None:
            slices = sorted(self._generations.get(key, {}).get(generation, ()), key=lambda s: s.name)
            known = self._pool_counters[(*key, generation)] = _pool_counters(slices)
        return known

    def available_counters(
        self, pool: PoolKey, generation: int, allocated: AllocationView
    ) -> tuple[dict[CounterKey, Amount], bool]:
        """The pool's counters minus what its allocated devices consume, and whether one is below
        zero (more allocated than there is), recomputed only when the pool's allocations changed."""
        slot = (*pool, generation)
        version = allocated.pool_version(pool)
        known = self._available.get(slot)
        if known is not None and known[0] == version:
            return known[1]
        info = self.counters_of(pool, generation)
        available = dict(info.counters)
        for device in info.consumers:
            if allocated.is_allocated(device.id):
                for counter_set, counters in device.consumes:
                    for counter, value in counters:
                        key = (counter_set, counter)
                        if key in available:
                            available[key] -= value
        answer = (available, any(v < 0 for v in available.values()))
        self._available[slot] = (version, answer)
        return answer


def _add(group: list[Slice], s: Slice) -> None:
    """A relevant slice joins its pool's group: the newest generation replaces older ones."""
    if group and s.generation < group[0].generation:
        return
    if group and s.generation > group[0].generation:
        group.clear()
    group.append(s)


def _pool_counters(slices: Sequence[Slice]) -> PoolCounters:
    counters: dict[CounterKey, Amount] = {}
    names: set[str] = set()
    invalid = ""
    for s in slices:
        for name, values in s.counter_sets:
            if name in names and not invalid:
                invalid = f"duplicate counter set name {name}"
            names.add(name)
            for counter, value in values.items():
                counters[(name, counter)] = value
    consumers = [d for s in slices for d in s.devices if d.consumes]
    if not invalid:
        invalid = next(filter(None, (_unknown_counter(d, names, counters) for d in consumers)), "")
    return PoolCounters(counters, consumers, invalid)


def _unknown_counter(device: Device, names: set[str], counters: Mapping[CounterKey, Amount]) -> str:
    """Why a device consumes from a counter set or counter its pool lacks ("" when it does not)."""
    for counter_set, consumed in device.consumes:
        if counter_set not in names:
            return f"counter set {counter_set} not found"
        for counter, _ in consumed:
            if (counter_set, counter) not in counters:
                return f"counter {counter} not found in counter set {counter_set}"
    return ""


def _serves(s: Slice, node_name: str, labels: Mapping[str, str]) -> bool:
    if s.node_name:
        return s.node_name == node_name
    if s.all_nodes:
        return True
    if s.node_selector is not None:
        return s.node_selector.matches(labels, node_name)
    if s.per_device:
        return any(device_serves(d, node_name, labels) for d in s.devices)
    return False


def _duplicates(slices: Sequence[Slice]) -> str:
    seen: set[str] = set()
    for s in slices:
        for device in s.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return ""


@dataclass(frozen=True, slots=True)
class TaintRule:
    """A DeviceTaintRule (DRADeviceTaintRules): its taint goes to every device of the driver,
    pool and device name it names (each one left out matches any; no selector: every device)."""

    driver: str | None
    pool: str | None
    device: str | None
    taint: Mapping[str, Any]

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> TaintRule:
        spec = obj.get("spec") or {}
        selector = spec.get("deviceSelector") or {}
        taint = spec.get("taint") or {}
        kept = {k: taint[k] for k in ("key", "value", "effect", "timeAdded") if taint.get(k) is not None}
        return cls(selector.get("driver"), selector.get("pool"), selector.get("device"), kept)

    def applies(self, s: Slice) -> bool:
        return (self.driver is None or self.driver == s.driver) and (self.pool is None or self.pool == s.pool)


def _apply_rules(s: Slice, rules: Sequence[TaintRule]) -> None:
    """The devices' taints: the slice's own, then the rules' in the order the rules are listed."""
    matching = [rule for rule in rules if rule.applies(s)]
    for device in s.devices:
        added = tuple(r.taint for r in matching if r.device is None or r.device == device.name)
        device.taints = device.own_taints + added


class SliceParser:
    """Parsed slices memoised by the identity of the informer's objects (each update is a new
    object), so a selector's cached answers live exactly as long as the slice version. The taints
    of DeviceTaintRules are applied to the devices when a slice or the rules change."""

    def __init__(self) -> None:
        self._parsed: dict[int, tuple[Mapping[str, Any], Slice | None]] = {}
        self._index: tuple[tuple[int, ...], tuple[Mapping[str, Any], ...], SliceIndex] | None = None
        self._rules: tuple[TaintRule, ...] = ()
        self.errors: dict[str, str] = {}  # slice name -> why it is left out, reported once

    def index(
        self, objects: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]] = ()
    ) -> SliceIndex:
        ids = tuple(map(id, objects))
        # the rules are kept themselves, not their ids: nothing else holds a deleted rule, and a
        # new object could take its id
        rules_changed = self._index is None or not _same_objects(self._index[1], rules)
        if self._index is not None and self._index[0] == ids and not rules_changed:
            return self._index[2]
        if rules_changed:
            self._rules = tuple(TaintRule.parse(rule) for rule in rules)
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
                if known[1] is not None and self._rules and not rules_changed:
                    _apply_rules(known[1], self._rules)
            parsed[id(obj)] = known
            if known[1] is not None:
                slices.append(known[1])
        if rules_changed:
            for s in slices:
                _apply_rules(s, self._rules)
        self._parsed = parsed
        index = SliceIndex(slices)
        self._index = (ids, tuple(rules), index)
        return index


def _same_objects(known: Sequence[object], objects: Sequence[object]) -> bool:
    return len(known) == len(objects) and all(a is b for a, b in zip(known, objects, strict=True))
