"""Which devices a pod's unallocated claims get on one node: upstream's structured allocator
(the "incubating" variant, which v1.36.2 picks with its default feature gates).

A depth-first search over claims, their requests (for ``firstAvailable``, the alternatives in
order) and the devices each needs, in pool order (driver, pool), slice name and device order;
the next device of a request is looked for after the previous one, so each set of devices is
tried once, and the first complete solution is taken, as upstream's, so the same slices give
the same device names. It backtracks when a later request, a ``matchAttribute`` or
``distinctAttribute`` constraint, or the limit of 32 devices per claim cannot be met. A device
is taken when it is not allocated to any claim yet (``adminAccess`` requests may share one),
every selector of its class and of the request matches, its capacity fits the request (see
``scheduler.dra.capacity``), the counters it consumes have room and its taints are tolerated.

Partitionable devices: a device consuming counters takes them from its pool's counters left
(what allocated devices on any node do not consume, see ``SliceIndex.available_counters``) and
from what the search took so far; it is refused when any counter of the pool would be short.
As upstream, counters taken for a device then refused for a taint or a constraint stay taken
for the rest of that node's search, and so do those of a shared device once taken.

Shared devices (``allowMultipleAllocations``) are never "in use": each allocation gets a share
(a new ``shareID``) and consumes capacity (``consumedCapacity``), counted with what other
claims' shares consume, the assumed ones included; their counters are taken once.

The result of each claim is the API's ``AllocationResult``: devices per request (with their
binding conditions copied, a share and its consumed capacity), the class and claim configuration
for the requests that got devices, and the node selector the devices imply (the node itself for
node-local devices and for devices that bind to their node).

``allocate`` returns None when the claims do not fit on the node, raises ``NodeFailure`` when
the node's pools are unusable and ``ClaimError`` for a problem of a claim or class (a bad
selector, an All request over a pool being updated): upstream stops scheduling the pod with
that error.
"""

from __future__ import annotations

import sys
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from scheduler.api.quantity import BINARY_SI, DECIMAL_SI, Quantity, QuantityError
from scheduler.dra import capacity
from scheduler.dra.cel import CelError, SelectorCache
from scheduler.dra.memo import Answer, Picks, SearchMemo
from scheduler.dra.model import Amount, CounterKey, Device, DeviceID, Pool, PoolKey, SliceIndex
from scheduler.dra.settled import ChangeView, Settled
from scheduler.framework import NodeTable

ALLOCATION_RESULTS_MAX_SIZE = 32  # upstream's AllocationResultsMaxSize
ALL = "All"
EXACT_COUNT = "ExactCount"


class ClaimError(Exception):
    """A claim or its class cannot be allocated anywhere; the message is upstream's."""


class NodeFailure(Exception):
    """The node's pools cannot be used now; other nodes may still do."""


class AllocationTimeout(Exception):
    """The search on one node ran past its time limit (upstream's filter timeout)."""


# how many search steps run between two looks at the clock
_STEPS_PER_CLOCK_CHECK = 256


def claim_ref(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def device_string(device_id: DeviceID) -> str:
    return "/".join(device_id)


@dataclass(slots=True, eq=False)
class _Request:
    """One request, or one alternative of a firstAvailable request, ready for matching."""

    name: str  # "req" or "req/sub"
    base: str
    sub: str
    cls: Mapping[str, Any]
    class_name: str
    # (expression, who owns it for error messages): the class's selectors, then the request's
    selectors: tuple[tuple[str, str], ...]
    mode: str
    count: int
    admin: bool
    tolerations: tuple[Mapping[str, Any], ...]
    capacity: Mapping[str, Quantity]  # capacity.requests
    capacity_key: Hashable  # the same for requests asking the same capacity


@dataclass(slots=True, eq=False)
class _Choice:
    """A device picked for a request: with a share of it and what that consumes, if shared."""

    request: _Request
    device: Device
    share_id: str = ""
    consumed: Mapping[str, Quantity] | None = None


class AllocatedState(ChangeView, Protocol):
    """The devices claims hold when the cycle starts (``scheduler.dra.claims.AllocatedDevices``)."""

    def __contains__(self, device: object) -> bool:
        """Held exclusively by some claim."""

    def is_allocated(self, device: DeviceID) -> bool:
        """Held in any way (exclusively, or by a share)."""

    def consumed_capacity(self, device: DeviceID) -> Mapping[str, Amount] | None: ...

    def pool_version(self, pool: PoolKey) -> Hashable: ...


@dataclass(slots=True, eq=False)
class _Slot:
    """A request of a claim: its own data, or its alternatives."""

    exact: _Request | None
    alternatives: list[_Request]


@dataclass(slots=True, eq=False)
class _Claim:
    claim: Mapping[str, Any]
    slots: list[_Slot]
    constraints: list[tuple[type[_Constraint], str, tuple[str, ...]]]  # kind, attribute, requests


class _Constraint(ABC):
    """A claim constraint over the devices of the requests it names (all when it names none)."""

    __slots__ = ("attribute", "count", "requests")

    def __init__(self, attribute: str, requests: Collection[str]) -> None:
        self.attribute = attribute
        self.requests = frozenset(requests)
        self.count = 0

    def applies(self, request: _Request) -> bool:
        return not self.requests or request.base in self.requests or request.name in self.requests

    @abstractmethod
    def add(self, request: _Request, device: Device) -> bool:
        """Whether the device may join; if so, it is counted."""

    @abstractmethod
    def remove(self, request: _Request) -> None:
        """Undoes the last successful ``add`` of this request."""


class _MatchAttribute(_Constraint):
    """Every device has the attribute, with one value."""

    __slots__ = ("value",)

    def __init__(self, attribute: str, requests: Collection[str]) -> None:
        super().__init__(attribute, requests)
        self.value: Any = None

    def add(self, request: _Request, device: Device) -> bool:
        if not self.applies(request):
            return True
        value = _lookup_attribute(device, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
        elif value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: _Request) -> None:
        if self.applies(request):
            self.count -= 1


class _DistinctAttribute(_Constraint):
    """Every device has the attribute, each with another value. As upstream, the value kept is
    the last one per request (not per device), so two devices of one request are compared with
    each other when picked but later requests are compared with that request's last device."""

    __slots__ = ("values",)

    def __init__(self, attribute: str, requests: Collection[str]) -> None:
        super().__init__(attribute, requests)
        self.values: dict[str, Any] = {}

    def add(self, request: _Request, device: Device) -> bool:
        if not self.applies(request):
            return True
        value = _lookup_attribute(device, self.attribute)
        if value is None:
            return False
        if self.count and any(value == other for other in self.values.values()):
            return False
        self.values[request.base] = value
        self.count += 1
        return True

    def remove(self, request: _Request) -> None:
        if self.applies(request):
            self.values.pop(request.base, None)
            self.count -= 1


def _lookup_attribute(device: Device, name: str) -> Any:
    """The attribute by its qualified name; the driver's own may be stored without its domain."""
    if name in device.attributes:
        return device.attributes[name]
    domain, sep, ident = name.partition("/")
    if sep and domain == device.id[0]:
        return device.attributes.get(ident)
    return None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """A device toleration against a device taint, as core/v1 tolerations match taints."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def _taint_blocks(device: Device, request: _Request) -> bool:
    return any(
        taint.get("effect") in ("NoSchedule", "NoExecute")
        and not any(tolerates(t, taint) for t in request.tolerations)
        for taint in device.taints
    )


class Allocator:
    """Allocation of one pod's unallocated claims against one snapshot of slices, classes and
    allocated devices (one cycle): the claims are read once, then ``allocate`` runs per node."""

    def __init__(
        self,
        index: SliceIndex,
        allocated: AllocatedState,
        classes: Callable[[str], Mapping[str, Any] | None],
        selectors: SelectorCache,
        claims: Sequence[Mapping[str, Any]],
        timeout: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        memo: SearchMemo | None = None,
    ) -> None:
        """ClaimError when a claim cannot be allocated anywhere (a missing class, too many devices).
        ``timeout`` (seconds, 0 for none) bounds the search on each node; ``memo`` keeps each
        node's answer for the next allocator asking the same (``scheduler.dra.memo``)."""
        self.timeout = timeout
        self.clock = clock
        self.index = index
        self.allocated = allocated
        self.classes = classes
        self.selectors = selectors
        self.claims = [self._prepare(claim) for claim in claims]
        self.memo = memo
        # per claim: its requests and alternatives in order, as a memo's picks name them
        self._requests = [
            [r for slot in c.slots for r in ((slot.exact,) if slot.exact is not None else slot.alternatives)]
            for c in self.claims
        ]
        self._shape = memo.shape(_shape(self.claims)) if memo is not None else None

    def allocate(self, node_name: str, labels: Mapping[str, str]) -> NodeAllocation | None:
        """AllocationTimeout when the search on this node takes longer than ``timeout``."""
        return self._allocate(node_name, labels)[0]

    def allocate_settled(
        self, settled: Settled, slot: int, node_name: str, labels: Mapping[str, str]
    ) -> NodeAllocation | None:
        """``allocate`` on the node in ``slot``, its answer settled for the next batch when kept."""
        found, answer = self._allocate(node_name, labels)
        if answer is not None:
            settled.settle(slot, node_name, answer)
        return found

    def settled(self, table: NodeTable) -> Settled:
        """The batch answers of these claims' shape, brought up to date with what changed since
        the last batch on ``table``; only for an allocator with a memo."""
        assert self.memo is not None, "settled answers are the memo's"
        found = self.memo.settled(self._shape)
        found.update(table, self.index, self.allocated)
        return found

    def from_answer(self, answer: Answer, node_name: str) -> NodeAllocation:
        """A kept answer that fits, as the devices for these claims."""
        picks = answer.picks
        assert picks is not None
        return NodeAllocation(self.claims, lambda: self._choices(picks), node_name)

    def _allocate(
        self, node_name: str, labels: Mapping[str, str]
    ) -> tuple[NodeAllocation | None, Answer | None]:
        """The devices on the node (None: they do not fit) and the memo's answer for it, when
        there is one (none for shared devices, or without a memo)."""
        memo = self.memo
        if memo is not None:
            known = memo.recall(node_name, self.index, self._shape, labels, self.allocated.pool_version)
            if known is not None:
                return (None if known.picks is None else self.from_answer(known, node_name)), known
        pools = self.index.pools_for(node_name, labels)
        keys = tuple([p.key for p in pools]) if memo is not None else ()
        versions = tuple([self.allocated.pool_version(key) for key in keys])
        search = _Search(self, pools, self.index.usable_devices(node_name, labels))
        kept = memo is not None and not _offers_shares(pools)
        if not search.run():
            if any(p.invalid for p in search.pools):
                raise NodeFailure("invalid resource pools were encountered")
            answer = Answer(self._shape, labels, keys, versions, None) if kept else None
            if memo is not None and answer is not None:
                memo.keep(node_name, self.index, answer)
            return None, answer
        results = search.results
        answer = Answer(self._shape, labels, keys, versions, self._picks(results)) if kept else None
        if memo is not None and answer is not None:
            memo.keep(node_name, self.index, answer)
        return NodeAllocation(self.claims, lambda: results, node_name), answer

    def _picks(self, results: list[list[_Choice]]) -> Picks:
        return tuple(
            tuple((self._requests[ci].index(choice.request), choice.device) for choice in chosen)
            for ci, chosen in enumerate(results)
        )

    def _choices(self, picks: Picks) -> list[list[_Choice]]:
        return [
            [_Choice(self._requests[ci][position], device) for position, device in claim_picks]
            for ci, claim_picks in enumerate(picks)
        ]

    def shortages(self, node_name: str, labels: Mapping[str, str]) -> list[str]:
        """For explain: per request no device of the node serves on its own (whatever the other
        requests take), what each device it matches lacks: the counters or the capacity that ran
        out, or that another claim holds it. Requests some device could serve are left out."""
        search = _Search(
            self, self.index.pools_for(node_name, labels), self.index.usable_devices(node_name, labels)
        )
        found = []
        for claim in self.claims:
            for slot in claim.slots:
                for request in (slot.exact,) if slot.exact is not None else slot.alternatives:
                    reasons = [
                        search.lack(request, d) for d in search.candidates if search.matches_alone(request, d)
                    ]
                    if reasons and all(reasons):
                        found.append(
                            f"claim {claim_ref(claim.claim)}, request {request.name}: {'; '.join(reasons)}"
                        )
        return found

    def _prepare(self, claim: Mapping[str, Any]) -> _Claim:
        devices = (claim.get("spec") or {}).get("devices") or {}
        slots = []
        min_devices = 0
        for raw in devices.get("requests") or ():
            name = str(raw.get("name", ""))
            if raw.get("firstAvailable"):
                alternatives = [
                    self._request(claim, sub, f"{name}/{sub.get('name', '')}", name, str(sub.get("name", "")))
                    for sub in raw["firstAvailable"]
                ]
                slots.append(_Slot(None, alternatives))
                min_devices += min(_fixed_count(r) for r in alternatives)
            else:
                exact = self._request(claim, raw.get("exactly") or {}, name, name, "")
                slots.append(_Slot(exact, []))
                min_devices += _fixed_count(exact)
        _check_claim_size(claim, min_devices)
        constraints: list[tuple[type[_Constraint], str, tuple[str, ...]]] = []
        for i, raw in enumerate(devices.get("constraints") or ()):
            requests = tuple(raw.get("requests") or ())
            if raw.get("matchAttribute"):
                constraints.append((_MatchAttribute, str(raw["matchAttribute"]), requests))
            elif raw.get("distinctAttribute"):
                constraints.append((_DistinctAttribute, str(raw["distinctAttribute"]), requests))
            else:
                raise ClaimError(
                    f"claim {claim_ref(claim)}, constraint #{i}: empty constraint "
                    "(unsupported constraint type?)"
                )
        return _Claim(claim, slots, constraints)

    def _request(
        self, claim: Mapping[str, Any], raw: Mapping[str, Any], name: str, base: str, sub: str
    ) -> _Request:
        class_name = str(raw.get("deviceClassName") or "")
        if not class_name:
            raise ClaimError(
                f"claim {claim_ref(claim)}, request {name}: missing device class name "
                "(unsupported request type?)"
            )
        cls = self.classes(class_name)
        if cls is None:
            raise ClaimError(
                f"claim {claim_ref(claim)}, request {name}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        selectors = [
            (str((selector.get("cel") or {}).get("expression") or ""), f"class {class_name}: selector #{i}")
            for i, selector in enumerate((cls.get("spec") or {}).get("selectors") or ())
        ]
        for i, selector in enumerate(raw.get("selectors") or ()):
            expression = (selector.get("cel") or {}).get("expression")
            if not expression:
                raise ClaimError(
                    f"claim {claim_ref(claim)}, request {name}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
            selectors.append((str(expression), f"claim {claim_ref(claim)}: selector #{i}"))
        mode = str(raw.get("allocationMode") or EXACT_COUNT)
        if mode not in (ALL, EXACT_COUNT):
            raise ClaimError(f"claim {claim_ref(claim)}, request {name}: unsupported count mode {mode}")
        requested = (raw.get("capacity") or {}).get("requests") or {}
        try:
            wanted = {str(k): Quantity.parse(v) for k, v in requested.items()}
        except QuantityError as exc:
            raise ClaimError(f"claim {claim_ref(claim)}, request {name}: capacity: {exc}") from None
        return _Request(
            name=name,
            base=base,
            sub=sub,
            cls=cls,
            class_name=class_name,
            selectors=tuple(selectors),
            mode=mode,
            count=int(raw.get("count") or 1),
            admin=bool(raw.get("adminAccess")),
            tolerations=tuple(raw.get("tolerations") or ()),
            capacity=wanted,
            capacity_key=tuple(sorted((k, v.value) for k, v in wanted.items())),
        )


def _request_shape(request: _Request) -> Hashable:
    """What of a request the search reads (its class only through the selectors; the selectors'
    owners name the claim, for error messages, which no kept answer has)."""
    return (
        request.name,
        request.base,
        tuple(expression for expression, _ in request.selectors),
        request.mode,
        request.count,
        request.admin,
        repr(request.tolerations),
        request.capacity_key,
    )


def _shape(claims: Sequence[_Claim]) -> Hashable:
    """What of the claims the search reads: equal shapes on equal nodes find the same devices."""
    return tuple(
        (
            tuple(
                (True, _request_shape(slot.exact))
                if slot.exact is not None
                else (False, tuple(_request_shape(r) for r in slot.alternatives))
                for slot in c.slots
            ),
            tuple(c.constraints),
        )
        for c in claims
    )


def _offers_shares(pools: Sequence[Pool]) -> bool:
    """A device of the pools allows multiple allocations: each gets a new share ID."""
    return any(d.multiple for p in pools for d in p.devices())


def _shown(value: Amount) -> str:
    """An amount as a quantity, in the shorter of its decimal and binary forms ("4G", "20Gi")."""
    forms = [str(Quantity(value, fmt)) for fmt in (DECIMAL_SI, BINARY_SI)]
    return min(forms, key=len)


def _fixed_count(request: _Request) -> int:
    """The devices a request needs before the node is known (All: none yet)."""
    return 0 if request.mode == ALL else request.count


def _check_claim_size(claim: Mapping[str, Any], min_devices: int) -> None:
    if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
        raise ClaimError(
            f"claim {claim_ref(claim)}: number of requested devices {min_devices} exceeds the claim "
            f"limit of {ALLOCATION_RESULTS_MAX_SIZE}"
        )


class NodeAllocation:
    """The devices found on one node, per claim; ``results`` are the API's AllocationResults.
    ``chosen`` gives the devices per claim when first asked (most nodes' never are)."""

    __slots__ = ("_chosen", "_claims", "_node", "_results")

    def __init__(
        self, claims: Sequence[_Claim], chosen: Callable[[], list[list[_Choice]]], node_name: str
    ) -> None:
        self._claims = claims
        self._chosen = chosen
        self._node = node_name
        self._results: list[dict[str, Any]] | None = None

    def results(self) -> list[dict[str, Any]]:
        """Built when asked (Reserve, Score): Filter finds many nodes, only one is taken."""
        if self._results is None:
            self._results = [
                _result(c.claim, chosen, self._node)
                for c, chosen in zip(self._claims, self._chosen(), strict=True)
            ]
        return self._results


# frames one device (or request, or claim) of a solution takes on the stack of the search
_FRAMES_PER_STEP = 3


def _allow_recursion(frames: int) -> None:
    """Up to 32 claims of 32 devices each go past Python's default limit (the frames of a
    pure-Python recursion do not grow the C stack since Python 3.11)."""
    needed = frames + 200  # what called the search
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


class _TooManyDevices(Exception):
    """A choice so far would give a claim more than 32 devices: upstream backtracks further
    (up to the nearest firstAvailable request, which may try a smaller alternative)."""


class _Search:
    """One node's depth-first search, in upstream's order: claims, their requests (the
    alternatives of a firstAvailable request in turn), and for each device of a request the
    candidates after the previous device's place, so each set of devices is tried once."""

    def __init__(self, allocator: Allocator, pools: list[Pool], candidates: list[Device]) -> None:
        self.a = allocator
        self.pools = pools
        self.candidates = candidates  # of ExactCount requests: usable pools, their slices, devices
        self.claims = allocator.claims
        self.constraints = [[kind(a, r) for kind, a, r in c.constraints] for c in self.claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        # what this search took so far: counters per pool, capacity of shared devices
        self.consumed: dict[PoolKey, dict[CounterKey, Amount]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Amount]] = {}
        # per pool whose counters were needed: what its allocated devices left, and whether that is
        # below zero somewhere (then no device consuming its counters fits)
        self.available: dict[PoolKey, tuple[dict[CounterKey, Amount], bool]] = {}
        self.results: list[list[_Choice]] = [[] for _ in self.claims]
        self.all_devices: dict[int, list[Device]] = {}  # id(request) -> its devices on this node
        self.timed = allocator.timeout > 0
        self.deadline = allocator.clock() + allocator.timeout if self.timed else 0.0
        self.steps = 0

    def run(self) -> bool:
        depth = 0  # how deep the search can go: devices (at most 32 a claim), requests, claims
        for claim in self.claims:
            least = most = 0  # the fewest and the most devices the claim can get on this node
            for slot in claim.slots:
                counts = []
                for request in (slot.exact,) if slot.exact is not None else slot.alternatives:
                    if request.mode == ALL:
                        devices = self._all_devices(claim.claim, request)
                        self.all_devices[id(request)] = devices
                        counts.append(len(devices))
                    else:
                        counts.append(request.count)
                least += min(counts)
                most += max(counts)
            _check_claim_size(claim.claim, least)
            depth += min(most, ALLOCATION_RESULTS_MAX_SIZE) + len(claim.slots) + 1
        _allow_recursion(depth * _FRAMES_PER_STEP)
        try:
            return self._one(0, 0, 0, None, 0)
        except _TooManyDevices:
            raise ClaimError("allocation max size exceeded") from None

    def _all_devices(self, claim: Mapping[str, Any], request: _Request) -> list[Device]:
        devices: list[Device] = []
        for pool in self.pools:
            if pool.incomplete:
                raise ClaimError(
                    f"claim {claim_ref(claim)}, request {request.name}: asks for all devices, but resource "
                    f"pool {pool.pool_id} is currently being updated"
                )
            if pool.invalid:
                raise ClaimError(
                    f"claim {claim_ref(claim)}, request {request.name}: asks for all devices, but resource "
                    f"pool {pool.pool_id} is currently invalid"
                )
            devices += (d for d in pool.devices() if self._selectable(request, d) and self._fits(request, d))
        return devices

    # ---------------------------------------------------------------- matching

    def _selectable(self, request: _Request, device: Device) -> bool:
        return all(self._matches(expression, device, owner) for expression, owner in request.selectors)

    def _matches(self, expression: str, device: Device, owner: str) -> bool:
        known = device.matches.get(expression)
        if known is not None:
            return known
        try:
            selector = self.a.selectors.get(expression)
        except CelError as exc:
            raise ClaimError(f"{owner}: CEL compile error: {exc}") from None
        try:
            result = selector.matches(device.cel)
        except CelError as exc:
            raise ClaimError(f"{owner}: CEL runtime error: {exc}") from None
        device.matches[expression] = result
        return result

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated or bool(self.allocating.get(device_id))

    def _fits(self, request: _Request, device: Device) -> bool:
        """The request's capacity fits what the device has left (upstream's check for every
        device, shared or not). For an exclusive device nothing else consumes any of it: that
        answer is the same for every request asking the same, and is kept with the device."""
        if not request.capacity and not device.capacity:
            return True
        in_use = self.a.allocated.consumed_capacity(device.id)
        if device.multiple or in_use is not None:
            return capacity.fits(
                request.capacity, device.capacity, in_use, self.allocating_capacity.get(device.id)
            )
        known = device.fits.get(request.capacity_key)
        if known is None:
            known = device.fits[request.capacity_key] = capacity.fits(
                request.capacity, device.capacity, None, None
            )
        return known

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        return (
            self.a.allocated.consumed_capacity(device_id) is not None or device_id in self.allocating_capacity
        )

    def _take_counters(self, device: Device) -> bool:
        """Count the device's counters as taken; False (and not taken) when the pool would then be
        short of any of its counters. Upstream compares every counter of the pool; as every
        device taken was compared when taken, only this device's can fall short, unless one was
        short already (below zero: more allocated than there is)."""
        pool = device.slice.key
        known = self.available.get(pool)
        if known is None:
            known = self.available[pool] = self.a.index.available_counters(
                pool, device.slice.generation, self.a.allocated
            )
        available, short = known
        if short:
            return False
        consumed = self.consumed.setdefault(pool, {})
        fits = True
        for counter_set, counters in device.consumes:
            for counter, value in counters:
                key = (counter_set, counter)
                taken = consumed[key] = consumed.get(key, 0) + value
                if key in available and taken > available[key]:
                    fits = False
        if not fits:
            self._release_counters(device)
        return fits

    def _release_counters(self, device: Device) -> None:
        consumed = self.consumed[device.slice.key]
        for counter_set, counters in device.consumes:
            for counter, value in counters:
                consumed[(counter_set, counter)] -= value

    # ---------------------------------------------------------------- for explain

    def matches_alone(self, request: _Request, device: Device) -> bool:
        """The device is one the request asks for (selectors, taints), whatever else is taken."""
        return self._selectable(request, device) and not (device.taints and _taint_blocks(device, request))

    def lack(self, request: _Request, device: Device) -> str:
        """What keeps the device from the request on its own ("" when nothing does)."""
        name = device_string(device.id)
        if not request.admin and device.id in self.a.allocated:
            return f"{name} is allocated to another claim"
        missing = [n for n in request.capacity if n not in device.capacity]
        if missing:
            return f"{name} has no capacity {', '.join(missing)}"
        in_use = self.a.allocated.consumed_capacity(device.id) or {}
        for capacity_name, cap in device.capacity.items():
            wanted = capacity.consumed(request.capacity.get(capacity_name), cap)
            if capacity.violates(wanted, cap.policy):
                return f"{name}: {capacity_name} {_shown(wanted.value)} is not allowed by its request policy"
            free = cap.value.value - in_use.get(capacity_name, 0)
            if wanted.value > free:
                return (
                    f"{name}: capacity {capacity_name} has {_shown(free)} left, {_shown(wanted.value)} needed"
                )
        if device.consumes and not (device.multiple and in_use):
            available, _ = self.a.index.available_counters(
                device.slice.key, device.slice.generation, self.a.allocated
            )
            for counter_set, counters in device.consumes:
                for counter, value in counters:
                    left = available.get((counter_set, counter), 0)
                    if value > left:
                        return (
                            f"{name} needs {_shown(value)} of counter {counter} in counter set {counter_set} "
                            f"of pool {device.id[0]}/{device.id[1]}, {_shown(left)} left"
                        )
        return ""

    # ---------------------------------------------------------------- search

    def _step(self) -> None:
        """One device looked at; now and then, a look at the clock."""
        self.steps += 1
        if self.steps % _STEPS_PER_CLOCK_CHECK == 0 and self.a.clock() > self.deadline:
            raise AllocationTimeout

    def _next_claim(self, ci: int) -> bool:
        try:
            return self._one(ci + 1, 0, 0, None, 0)
        except _TooManyDevices:
            return False  # another choice in an earlier claim may leave room

    def _alternatives(self, ci: int, ri: int, slot: _Slot) -> bool:
        all_too_many = True
        for k in range(len(slot.alternatives)):
            try:
                if self._one(ci, ri, 0, k, 0):
                    return True
            except _TooManyDevices:
                continue
            all_too_many = False
        if all_too_many:
            raise _TooManyDevices
        return False

    def _one(self, ci: int, ri: int, di: int, sub: int | None, start: int) -> bool:
        """Device ``di`` of request ``ri`` (alternative ``sub``) of claim ``ci``, from the
        candidates at ``start`` on."""
        if ci >= len(self.claims):
            return True
        slots = self.claims[ci].slots
        if ri >= len(slots):
            return self._next_claim(ci)
        slot = slots[ri]
        if slot.exact is None and sub is None:
            return self._alternatives(ci, ri, slot)
        request = slot.exact if slot.exact is not None else slot.alternatives[sub or 0]
        devices = self.all_devices[id(request)] if request.mode == ALL else None
        if devices is not None and not devices:
            return False
        wanted = len(devices) if devices is not None else request.count
        if di >= wanted:
            return self._one(ci, ri + 1, 0, None, 0)
        if len(self.results[ci]) + wanted - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _TooManyDevices
        if devices is not None:
            device = devices[di]
            if not self._add(ci, request, device, must=True):
                return False
            return self._then(ci, request, device, ri, di, sub, 0)
        candidates = self.candidates
        for position in range(start, len(candidates)):
            device = candidates[position]
            if self.timed:
                self._step()
            if request.admin:
                if ci in self.allocating.get(device.id, ()):
                    continue
            elif self._in_use(device.id):
                continue
            if not self._selectable(request, device):
                continue
            if not self._fits(request, device):
                continue
            if not self._add(ci, request, device, must=False):
                continue
            if self._then(ci, request, device, ri, di, sub, position + 1):
                return True
        return False

    def _then(
        self, ci: int, request: _Request, device: Device, ri: int, di: int, sub: int | None, start: int
    ) -> bool:
        """The rest of the search with ``device`` taken; it is given back unless that succeeds."""
        try:
            found = self._one(ci, ri, di + 1, sub, start)
        except _TooManyDevices:
            self._remove(ci, request, device)
            raise
        if not found:
            self._remove(ci, request, device)
        return found

    def _add(self, ci: int, request: _Request, device: Device, must: bool) -> bool:
        if request.admin:
            if not device.multiple and ci in self.allocating.get(device.id, ()):
                return False
        elif self._in_use(device.id):
            return False
        # a shared device already in use took its counters then
        shared_in_use = device.multiple and self._capacity_in_use(device.id)
        if device.consumes and not shared_in_use and not self._take_counters(device):
            return False
        if device.taints and _taint_blocks(device, request):
            return False
        constraints = self.constraints[ci]
        for i, constraint in enumerate(constraints):
            if not constraint.add(request, device):
                if must:
                    raise ClaimError(
                        f"claim {claim_ref(self.claims[ci].claim)}, request {request.name}: cannot add "
                        f"device {device_string(device.id)} because a claim constraint would not be satisfied"
                    )
                for earlier in constraints[:i]:
                    earlier.remove(request)
                return False
        choice = _Choice(request, device)
        if device.multiple:
            choice.consumed = capacity.consumption(request.capacity, device.capacity)
            choice.share_id = str(uuid.uuid4())
            taken = self.allocating_capacity.setdefault(device.id, {})
            for name, quantity in choice.consumed.items():
                taken[name] = taken.get(name, 0) + quantity.value
        else:
            self.allocating.setdefault(device.id, set()).add(ci)
        self.results[ci].append(choice)
        return True

    def _remove(self, ci: int, request: _Request, device: Device) -> None:
        for constraint in self.constraints[ci]:
            constraint.remove(request)
        choice = self.results[ci].pop()
        if device.multiple:
            if choice.consumed:  # as upstream, a share consuming nothing keeps the device in use
                taken = self.allocating_capacity[device.id]
                for name, quantity in choice.consumed.items():
                    taken[name] -= quantity.value
                if not any(taken.values()):
                    del self.allocating_capacity[device.id]
        else:
            self.allocating[device.id].discard(ci)
            if device.consumes:
                self._release_counters(device)


# ---------------------------------------------------------------- results


def _result(claim: Mapping[str, Any], chosen: Sequence[_Choice], node_name: str) -> dict[str, Any]:
    results = []
    for choice in chosen:
        request, device = choice.request, choice.device
        entry: dict[str, Any] = {
            "request": request.name,
            "driver": device.id[0],
            "pool": device.id[1],
            "device": device.id[2],
        }
        if request.admin:
            entry["adminAccess"] = True
        if request.tolerations:
            entry["tolerations"] = [dict(t) for t in request.tolerations]
        if device.binding_conditions:
            entry["bindingConditions"] = list(device.binding_conditions)
        if device.binding_failure_conditions:
            entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
        if choice.share_id:
            entry["shareID"] = choice.share_id
        if choice.consumed:
            entry["consumedCapacity"] = {name: str(q) for name, q in choice.consumed.items()}
        results.append(entry)
    allocation: dict[str, Any] = {"devices": {"results": results}}
    config = _config(claim, chosen)
    if config:
        allocation["devices"]["config"] = config
    node_selector = _node_selector(claim, (choice.device for choice in chosen), node_name)
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    return allocation


def _config(claim: Mapping[str, Any], chosen: Sequence[_Choice]) -> list[dict[str, Any]]:
    """Class configuration for each class used (once per class, naming its requests), then the
    claim's own for the requests (or alternatives) that got devices, as upstream."""
    picked: dict[str, _Request] = {}
    for choice in chosen:
        picked.setdefault(choice.request.base, choice.request)
    config: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    devices = (claim.get("spec") or {}).get("devices") or {}
    for raw in devices.get("requests") or ():
        used = picked.get(str(raw.get("name", "")))
        if used is None:
            continue
        if used.class_name in by_class:
            for entry in by_class[used.class_name]:
                entry["requests"].append(used.name)
            continue
        entries = [
            {"source": "FromClass", "requests": [used.name], **_configuration(c)}
            for c in (used.cls.get("spec") or {}).get("config") or ()
        ]
        by_class[used.class_name] = entries
        config += entries
    for raw in devices.get("config") or ():
        names = list(raw.get("requests") or ())
        entry = {"source": "FromClaim", "requests": names, **_configuration(raw)}
        if not names:
            config.append(entry)
            continue
        for request_raw in devices.get("requests") or ():
            name = str(request_raw.get("name", ""))
            if name in names:
                config.append(dict(entry))
                continue
            alternative = picked.get(name)
            if alternative is not None and alternative.sub and alternative.name in names:
                config.append(dict(entry))
    return config


def _node_selector(
    claim: Mapping[str, Any], devices: Iterable[Device], node_name: str
) -> dict[str, Any] | None:
    """Where the allocation can be used: the node when a device is local to a node or binds to
    the node it is allocated for, else the union of the requirements of the node selectors (of
    the slices, or of the devices that select nodes themselves), else everywhere (None)."""
    fields: list[Any] = []
    expressions: list[Any] = []
    for device in devices:
        s = device.slice
        local, selector = (
            (device.node_name, device.raw_node_selector)
            if s.per_device
            else (s.node_name, s.raw_node_selector)
        )
        if local or device.binds_to_node:
            return {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        terms = (selector or {}).get("nodeSelectorTerms") or ()
        if len(terms) > 1:
            name = (claim.get("metadata") or {}).get("name", "")
            raise ClaimError(
                f"create NodeSelector for claim {name}: unsupported ResourceSlice.NodeSelector "
                f"with {len(terms)} terms"
            )
        if terms:
            _add_requirements(fields, terms[0].get("matchFields") or ())
            _add_requirements(expressions, terms[0].get("matchExpressions") or ())
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]} if term else None


def _add_requirements(into: list[Any], requirements: Iterable[Mapping[str, Any]]) -> None:
    """Adds each requirement not already there (the same key, operator and set of values)."""

    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return (r.get("key"), r.get("operator"), frozenset(r.get("values") or ()))

    for requirement in requirements:
        if all(key(r) != key(requirement) for r in into):
            into.append(requirement)


def _configuration(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The DeviceConfiguration part of a config entry (today: opaque driver parameters)."""
    return {k: v for k, v in raw.items() if k not in ("requests", "source")}
