"""A pod's ResourceClaims, and the claims as the scheduler must see them: with the allocations
it decided at Reserve but has not written yet, and with its writes before the informer shows
them (as assumed pods in the cache).

``ClaimTracker.allocated_devices`` is every device some claim holds, pending and assumed ones
included, so two pods in consecutive cycles never get the same device.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import Pod
from scheduler.dra.extended import special_owner
from scheduler.dra.model import DeviceID
from scheduler.framework import ObjectLister

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


def devices_of(claim: Mapping[str, Any]) -> frozenset[DeviceID]:
    """The devices an allocation holds exclusively (admin access does not hold a device)."""
    allocation = allocation_of(claim)
    if not allocation:
        return frozenset()
    return frozenset(
        (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        for r in (allocation.get("devices") or {}).get("results") or ()
        if not r.get("adminAccess")
    )


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
        # the informer's claims as last seen (by object identity) and how many hold each device
        self._seen: dict[int, tuple[Mapping[str, Any], frozenset[DeviceID]]] = {}
        self._holders: Counter[DeviceID] = Counter()
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
        """Every device a claim holds. The informer's claims are compared by identity with the
        last call's (an update is a new object), so only changed claims are looked into."""
        seen: dict[int, tuple[Mapping[str, Any], frozenset[DeviceID]]] = {}
        old = self._seen
        holders = self._holders
        for claim in self._lister.list():
            known = old.pop(id(claim), None)
            if known is None or known[0] is not claim:
                if known is not None:
                    holders.subtract(known[1])
                    self._forget_special(known[0])
                known = (claim, devices_of(claim))
                holders.update(known[1])
                owner = special_owner(claim)
                if owner:
                    self._specials[owner] = claim
            seen[id(claim)] = known
        for gone, devices in old.values():  # claims gone since the last call
            holders.subtract(devices)
            self._forget_special(gone)
        self._seen = seen
        assumed_devices: set[DeviceID] = set()
        for claim in self._pending.values():
            assumed_devices |= devices_of(claim)
        for key in list(self._assumed):
            assumed = self._current(key, self._lister.get(key))
            if assumed is not None:
                assumed_devices |= devices_of(assumed.claim)
        return AllocatedDevices(holders, assumed_devices)

    def special_claim(self, pod_uid: str) -> Mapping[str, Any] | None:
        """The special claim the pod controls, as the last ``allocated_devices`` saw the claims."""
        return self._specials.get(pod_uid)

    def _forget_special(self, claim: Mapping[str, Any]) -> None:
        owner = special_owner(claim)
        if owner and self._specials.get(owner) is claim:
            del self._specials[owner]


class AllocatedDevices:
    """``device in view``: some claim holds it (the informer's claims or an assumed one)."""

    __slots__ = ("_assumed", "_holders")

    def __init__(self, holders: Counter[DeviceID], assumed: set[DeviceID]) -> None:
        self._holders = holders
        self._assumed = assumed

    def __contains__(self, device: object) -> bool:
        return self._holders.get(device, 0) > 0 or device in self._assumed  # type: ignore[call-overload]
