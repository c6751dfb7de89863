"""The simulated drivers' side of binding conditions: attaching devices before their pod binds.

When a claim gets an allocation of a device whose set declares `bindingConditions` (see
`simcluster.dra_drivers`), the driver "attaches" it: `attachDelay` seconds later it writes the
device's entry in the claim's `status.devices` with every binding condition True, or, for a set
with `attachFails`, its first failure condition True. It does so once per allocation (a claim
deallocated and allocated again is attached again), and only while the claim still holds the
device.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from simcluster.api import now
from simcluster.dra_drivers import DeviceSet, group_of
from simcluster.errors import ApiError
from simcluster.resources import BY_STORE_NAME

if TYPE_CHECKING:
    from simcluster.api import Api
    from simcluster.store import Event

log = logging.getLogger(__name__)
CLAIMS = BY_STORE_NAME["resourceclaims"]
# (claim uid, allocation time, driver, pool, device, share): one attachment per allocated device
_Key = tuple[str, str, str, str, str, str]


class DeviceAttacher:
    def __init__(self, api: Api, groups: Mapping[str, tuple[DeviceSet, ...]]) -> None:
        self.api = api
        self.groups = groups
        self._started: set[_Key] = set()
        self._timers: dict[_Key, asyncio.TimerHandle] = {}
        api.store.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _attachable(self, driver: str, pool: str, device: str) -> DeviceSet | None:
        """The set of a device that must be attached (its pool is its node, as published)."""
        for device_set in group_of(pool, self.groups):
            if (
                device_set.driver == driver
                and device_set.binding_conditions
                and device in device_set.device_names()
            ):
                return device_set
        return None

    def _on_event(self, resource: str, event: Event) -> None:
        if resource != "resourceclaims":
            return
        claim = event.obj
        if event.type == "DELETED":
            self._started = {key for key in self._started if key[0] != claim["metadata"]["uid"]}
            return
        status = claim.get("status") or {}
        allocation = status.get("allocation") or {}
        reported = {_device_key(d) for d in status.get("devices") or ()}
        meta = claim["metadata"]
        for result in (allocation.get("devices") or {}).get("results") or ():
            driver, pool, device, share = _device_key(result)
            key = (meta["uid"], str(allocation.get("allocationTimestamp", "")), driver, pool, device, share)
            if key in self._started or key[2:] in reported:
                continue
            device_set = self._attachable(driver, pool, device)
            if device_set is None:
                continue
            self._started.add(key)
            self._timers[key] = asyncio.get_running_loop().call_later(
                device_set.attach_delay, self._attach, meta["namespace"], meta["name"], key, device_set
            )

    def _attach(self, namespace: str, name: str, key: _Key, device_set: DeviceSet) -> None:
        self._timers.pop(key, None)
        entry = self.api.store.entry("resourceclaims", namespace, name)
        if entry is None or entry.obj["metadata"]["uid"] != key[0]:
            return
        claim = entry.obj
        status = dict(claim.get("status") or {})
        allocation = status.get("allocation") or {}
        held = {_device_key(r) for r in (allocation.get("devices") or {}).get("results") or ()}
        if str(allocation.get("allocationTimestamp", "")) != key[1] or key[2:] not in held:
            return  # deallocated (or allocated anew) meanwhile
        stamp = now()
        if device_set.attach_fails and device_set.binding_failure_conditions:
            conditions = [
                {
                    "type": device_set.binding_failure_conditions[0],
                    "status": "True",
                    "reason": "AttachFailed",
                    "message": "the simulated driver could not attach the device",
                    "lastTransitionTime": stamp,
                }
            ]
        else:
            conditions = [
                {
                    "type": kind,
                    "status": "True",
                    "reason": "Attached",
                    "message": "attached by the simulated driver",
                    "lastTransitionTime": stamp,
                }
                for kind in device_set.binding_conditions
            ]
        driver, pool, device, share = key[2:]
        reported: dict[str, object] = {"driver": driver, "pool": pool, "device": device}
        if share:
            reported["shareID"] = share
        status["devices"] = [*(status.get("devices") or ()), {**reported, "conditions": conditions}]
        try:
            self.api.update(CLAIMS, namespace, name, {**claim, "status": status}, "status")
        except ApiError as err:
            self._started.discard(key)  # tried again on the claim's next change
            log.warning("attach %s to %s/%s: %s", device, namespace, name, err.message)


def _device_key(entry: Mapping[str, object]) -> tuple[str, str, str, str]:
    """Driver, pool, device and share of an allocation result or a device status."""
    return (
        str(entry.get("driver")),
        str(entry.get("pool")),
        str(entry.get("device")),
        str(entry.get("shareID") or ""),
    )
