"""A pod's ResourceClaims, and the claims as the scheduler must see them: with the allocations
it decided at Reserve but has not written yet, and with its writes before the informer shows
them (as assumed pods in the cache).

``ClaimTracker.allocated_devices`` is every device some claim holds, pending and assumed ones
included, so two pods in consecutive cycles never get the same device: the devices held
exclusively, the shares of devices that allow multiple allocations and the capacity those
consume (DRAConsumableCapacity), and per pool a version that changes with its allocations, so
the counters a pool has left are recomputed only then.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import Pod
from scheduler.api.quantity import QuantityError
from scheduler.dra.extended import special_owner
from scheduler.dra.model import Amount, DeviceID, PoolKey, amount
from scheduler.framework import ObjectLister, RevisionedLister

RESERVED_FOR_MAX_SIZE = 256  # upstream's ResourceClaimReservedForMaxSize


class ClaimProblem(Exception):
    """Why a pod's claims cannot be used yet; the message is upstream's."""


class UnsupportedClaim(ClaimProblem):
    """A pod claim naming neither a claim nor a template: no event can ever fix it."""


def claim_name(pod: Pod, pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """The claim a pod claim stands for, and whether the pod must own it (generated claims);
    None when the claim generated from a template was deliberately not created."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName"):
        for status in pod.resource_claim_statuses:
            if status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimProblem(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise UnsupportedClaim(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.get("name", "")}": '
        "none of the supported fields are set"
    )


def is_for_pod(pod: Pod, claim: Mapping[str, Any]) -> None:
    meta = claim.get("metadata") or {}
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    if namespace != pod.namespace:
        raise ClaimProblem(
            f"ResourceClaim {namespace}/{name} is not in the same namespace as Pod {pod.namespace}/{pod.name}"
        )
    owners = meta.get("ownerReferences") or ()
    if not any(o.get("controller") and o.get("uid") == pod.uid for o in owners):
        raise ClaimProblem(
            f"ResourceClaim {namespace}/{name} was not created for Pod {pod.namespace}/{pod.name} "
            "(Pod is not owner)"
        )


def claim_key(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def claim_uid(claim: Mapping[str, Any]) -> str:
    return str((claim.get("metadata") or {}).get("uid", ""))


def _resource_version(claim: Mapping[str, Any] | None) -> str:
    return str(((claim or {}).get("metadata") or {}).get("resourceVersion", ""))


def allocation_of(claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (claim.get("status") or {}).get("allocation")


def reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or ())


def is_reserved_for_pod(pod: Pod, claim: Mapping[str, Any]) -> bool:
    return any(r.get("resource") == "pods" and r.get("uid") == pod.uid for r in reserved_for(claim))


def can_be_reserved(claim: Mapping[str, Any]) -> bool:
    return len(reserved_for(claim)) < RESERVED_FOR_MAX_SIZE


@dataclass(slots=True, frozen=True)
class Holding:
    """What an allocation holds: devices of its own (admin access holds none), and shares of
    devices allowing multiple allocations, with the capacity each share consumes (or None)."""

    exclusive: frozenset[DeviceID]
    shares: tuple[tuple[DeviceID, Mapping[str, Amount] | None], ...]

    def devices(self) -> Iterator[DeviceID]:
        yield from self.exclusive
        for device, _ in self.shares:
            yield device


NOTHING_HELD = Holding(frozenset(), ())


def holding_of(claim: Mapping[str, Any]) -> Holding:
    allocation = allocation_of(claim)
    if not allocation:
        return NOTHING_HELD
    exclusive = set()
    shares = []
    for r in (allocation.get("devices") or {}).get("results") or ():
        if r.get("adminAccess"):
            continue
        device = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        if r.get("shareID") is None:
            exclusive.add(device)
            continue
        consumed = r.get("consumedCapacity")
        try:
            capacity = {str(k): amount(v) for k, v in consumed.items()} if consumed is not None else None
        except (QuantityError, AttributeError):
            capacity = None  # the API server would not have stored it: nothing to count
        shares.append((device, capacity))
    return Holding(frozenset(exclusive), tuple(shares))


def devices_of(claim: Mapping[str, Any]) -> frozenset[DeviceID]:
    """The devices an allocation holds exclusively (admin access does not hold a device)."""
    return holding_of(claim).exclusive


_SERIALS = itertools.count()
_JOURNAL_KEPT = 4096  # pool changes the journal keeps; an older mark reads "unknown"


class _Held:
    """Counts of what a set of allocations holds, kept up to date as holdings come and go, and a
    journal of the pools whose holdings changed (what ``AllocatedDevices.pools_changed_since``
    answers from)."""

    __slots__ = (
        "capacity",
        "capacity_shares",
        "exclusive",
        "journal",
        "journal_start",
        "revisions",
        "serial",
        "shares",
    )

    def __init__(self) -> None:
        self.serial = next(_SERIALS)  # tells trackers apart in the versions of their pools
        self.exclusive: Counter[DeviceID] = Counter()
        self.shares: Counter[DeviceID] = Counter()
        # per device: the capacity its shares consume in all, and how many shares say so
        self.capacity: dict[DeviceID, dict[str, Amount]] = {}
        self.capacity_shares: Counter[DeviceID] = Counter()
        self.revisions: Counter[PoolKey] = Counter()  # per pool: bumped whenever a holding changes
        self.journal: list[PoolKey] = []  # the pools of the latest changes, oldest first
        self.journal_start = 0  # the position of journal[0] among all changes

    def change(self, holding: Holding, sign: int) -> None:
        for device in holding.exclusive:
            self.exclusive[device] += sign
        for device, consumed in holding.shares:
            self.shares[device] += sign
            if consumed is not None:
                self.capacity_shares[device] += sign
                total = self.capacity.setdefault(device, {})
                for name, value in consumed.items():
                    total[name] = total.get(name, 0) + sign * value
                if not self.capacity_shares[device]:
                    del self.capacity[device]
        journal = self.journal
        for device in holding.devices():
            pool = (device[0], device[1])
            self.revisions[pool] += 1
            journal.append(pool)
        if len(journal) > _JOURNAL_KEPT:
            drop = len(journal) // 2
            del journal[:drop]
            self.journal_start += drop

    def changed_since(self, position: int) -> list[PoolKey] | None:
        """The pools changed after journal ``position``; None when the journal is shorter."""
        if position < self.journal_start:
            return None
        return self.journal[position - self.journal_start :]

    @property
    def position(self) -> int:
        return self.journal_start + len(self.journal)


@dataclass(slots=True)
class _Assumed:
    base_version: str  # the informer's resourceVersion when the write was answered
    claim: Mapping[str, Any]


class ClaimTracker:
    """The claims lister with the scheduler's own knowledge on top: allocations decided at
    Reserve and not written yet (*pending*, kept whatever the informer shows until PreBind wrote
    them or Unreserve dropped them, as upstream's in-flight allocations), and claims as the API
    answered PreBind's writes (*assumed*, until the informer's object for them changes)."""

    def __init__(self, lister: ObjectLister) -> None:
        self._lister = lister
        self._pending: dict[str, Mapping[str, Any]] = {}
        self._assumed: dict[str, _Assumed] = {}
        # the informer's claims as last seen (by key), what each holds, and in all
        self._seen: dict[str, tuple[Mapping[str, Any], Holding]] = {}
        self._held = _Held()
        # the lister's revision ``_seen`` was taken at (None: not yet, or it has none)
        self._revisioned = lister if isinstance(lister, RevisionedLister) else None
        self._seen_revision: int | None = None
        # special claims (extended resources backed by DRA) by the uid of the pod controlling them
        self._specials: dict[str, Mapping[str, Any]] = {}

    def get(self, key: str) -> Mapping[str, Any] | None:
        latest = self._lister.get(key)
        assumed = self._current(key, latest)
        return assumed.claim if assumed is not None else latest

    def is_pending(self, key: str) -> bool:
        """An allocation decided for this claim is not written yet (another pod's cycle)."""
        return key in self._pending

    def _current(self, key: str, latest: Mapping[str, Any] | None) -> _Assumed | None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return None
        if latest is None or _resource_version(latest) != assumed.base_version:
            del self._assumed[key]  # the informer moved on: its object is the truth now
            return None
        return assumed

    def reserve(self, claim: Mapping[str, Any], key: str | None = None) -> None:
        """``claim`` with the allocation Reserve decided for it, until it is written. ``key``
        (default: the claim's) tells apart claims not created yet, such as each pod's special
        claim for extended resources (their names are all the same then)."""
        self._pending[key or claim_key(claim)] = claim

    def restore(self, key: str) -> bool:
        """Forget a pending allocation (Unreserve, a failed PreBind); True when there was one."""
        return self._pending.pop(key, None) is not None

    def written(self, claim: Mapping[str, Any]) -> None:
        """The API's answer to a PreBind write: it stands until the informer shows a newer object."""
        key = claim_key(claim)
        self._pending.pop(key, None)
        latest = self._lister.get(key)
        if _resource_version(latest) != _resource_version(claim):
            self._assumed[key] = _Assumed(_resource_version(latest), claim)

    def allocated_devices(self) -> AllocatedDevices:
        """Every device a claim holds. The informer's claims are looked into only where they
        changed: those the lister names as changed since the last call (when it can), else
        those that are other objects than the last call saw (an update is a new object)."""
        revision = self._revisioned.revision if self._revisioned is not None else None
        if revision is None or self._seen_revision is None:
            self._look_at_all()
        elif revision != self._seen_revision:
            assert self._revisioned is not None
            changed = self._revisioned.changed_since(self._seen_revision)
            if changed is None:
                self._look_at_all()
            else:
                self._look_at(changed)
        self._seen_revision = revision
        assumed = [holding_of(claim) for claim in self._pending.values()]
        for key in list(self._assumed):
            current = self._current(key, self._lister.get(key))
            if current is not None:
                assumed.append(holding_of(current.claim))
        return AllocatedDevices(self._held, assumed)

    def _look_at_all(self) -> None:
        """Bring ``_held`` (and the special claims) up to date with all the informer's claims."""
        old, self._seen = self._seen, {}
        for claim in self._lister.list():
            key = claim_key(claim)
            known = old.pop(key, None)
            if known is not None and known[0] is claim:
                self._seen[key] = known
                continue
            if known is not None:
                self._unsee(known)
            self._see(key, claim)
        for gone in old.values():  # claims gone since the last call
            self._unsee(gone)

    def _look_at(self, keys: Iterable[str]) -> None:
        """Bring ``_held`` up to date with the claims of these keys."""
        for key in dict.fromkeys(keys):
            claim = self._lister.get(key)
            known = self._seen.get(key)
            if known is not None and known[0] is claim:
                continue
            if known is not None:
                del self._seen[key]
                self._unsee(known)
            if claim is not None:
                self._see(key, claim)

    def _see(self, key: str, claim: Mapping[str, Any]) -> None:
        holding = holding_of(claim)
        self._seen[key] = (claim, holding)
        self._held.change(holding, 1)
        owner = special_owner(claim)
        if owner:
            self._specials[owner] = claim

    def _unsee(self, known: tuple[Mapping[str, Any], Holding]) -> None:
        self._held.change(known[1], -1)
        self._forget_special(known[0])

    def special_claim(self, pod_uid: str) -> Mapping[str, Any] | None:
        """The special claim the pod controls, as the last ``allocated_devices`` saw the claims."""
        return self._specials.get(pod_uid)

    def _forget_special(self, claim: Mapping[str, Any]) -> None:
        owner = special_owner(claim)
        if owner and self._specials.get(owner) is claim:
            del self._specials[owner]


@dataclass(slots=True, frozen=True, eq=False)
class PoolsMark:
    """Where a view of the allocations stood (``AllocatedDevices.mark``), to ask later which
    pools changed since."""

    held: _Held
    position: int
    assumed: Mapping[PoolKey, frozenset[DeviceID]]


class AllocatedDevices:
    """One cycle's view of what claims hold: the informer's claims (``held``) and the
    allocations pending or assumed on top (``assumed``). ``device in view``: some claim holds
    the device exclusively."""

    __slots__ = (
        "_any_held",
        "_assumed_capacity",
        "_assumed_exclusive",
        "_assumed_pools",
        "_assumed_shares",
        "_held",
    )

    def __init__(self, held: _Held, assumed: list[Holding]) -> None:
        self._held = held
        self._any_held: frozenset[DeviceID] | None = None
        self._assumed_exclusive: set[DeviceID] = set()
        self._assumed_shares: set[DeviceID] = set()
        self._assumed_capacity: dict[DeviceID, dict[str, Amount]] = {}
        pools: dict[PoolKey, set[DeviceID]] = {}
        for holding in assumed:
            self._assumed_exclusive |= holding.exclusive
            for device, consumed in holding.shares:
                self._assumed_shares.add(device)
                if consumed is not None:
                    total = self._assumed_capacity.setdefault(device, {})
                    for name, value in consumed.items():
                        total[name] = total.get(name, 0) + value
            for device in holding.devices():
                pools.setdefault((device[0], device[1]), set()).add(device)
        self._assumed_pools = {pool: frozenset(devices) for pool, devices in pools.items()}

    def __contains__(self, device: object) -> bool:
        return self._held.exclusive.get(device, 0) > 0 or device in self._assumed_exclusive  # type: ignore[call-overload]

    def is_allocated(self, device: DeviceID) -> bool:
        """Held in any way: exclusively or by a share (what counts against a pool's counters)."""
        held = self._held
        return (
            held.exclusive.get(device, 0) > 0
            or held.shares.get(device, 0) > 0
            or device in held.capacity
            or device in self._assumed_exclusive
            or device in self._assumed_shares
        )

    def consumed_capacity(self, device: DeviceID) -> Mapping[str, Amount] | None:
        """What the device's shares consume in all; None when no share says."""
        held = self._held.capacity.get(device)
        assumed = self._assumed_capacity.get(device)
        if assumed is None:
            return held
        if held is None:
            return assumed
        return {name: held.get(name, 0) + assumed.get(name, 0) for name in {*held, *assumed}}

    def pool_version(self, pool: PoolKey) -> Hashable:
        """Changes whenever what the pool's devices are held by changes."""
        return (self._held.serial, self._held.revisions.get(pool, 0), self._assumed_pools.get(pool))

    def mark(self) -> PoolsMark:
        """Where this view stands now: the informer's claims, their place in the journal of pool
        changes and the pending or assumed devices per pool, for ``pools_changed_since``."""
        return PoolsMark(self._held, self._held.position, self._assumed_pools)

    def pools_changed_since(self, mark: PoolsMark) -> set[PoolKey] | None:
        """The pools whose ``pool_version`` may differ from when ``mark`` was taken (of this
        tracker's views); None when that is not known: another tracker, or too long ago."""
        if mark.held is not self._held:
            return None
        held = self._held.changed_since(mark.position)
        if held is None:
            return None
        changed = set(held)
        before, now = mark.assumed, self._assumed_pools
        if before is not now:
            changed.update(pool for pool in {*before, *now} if before.get(pool) != now.get(pool))
        return changed

    def count_in(self, devices: frozenset[DeviceID]) -> int:
        """How many of ``devices`` are held in any way (as ``is_allocated``: what NodeResourcesFit
        counts as allocated, as upstream). The held set is made on the first call (one pass over
        this cycle's allocations), then each call is one intersection with it."""
        if self._any_held is None:
            held = self._held
            self._any_held = frozenset(
                {device for device, count in held.exclusive.items() if count > 0}
                | {device for device, count in held.shares.items() if count > 0}
                | held.capacity.keys()
                | self._assumed_exclusive
                | self._assumed_shares
            )
        return len(devices & self._any_held)
