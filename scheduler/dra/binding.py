"""Binding conditions (DRADeviceBindingConditions): devices that must be readied before the pod binds.

An allocation result copies its device's ``bindingConditions`` and ``bindingFailureConditions``;
the driver reports them in the claim's ``status.devices[].conditions``. A claim is ready for
binding once every binding condition of every device is True there; a failure condition that is
True means the binding failed. A claim whose allocation (``allocationTimestamp``) is older than
DynamicResources' ``bindingTimeout`` and still not ready has timed out. Messages are upstream's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler.dra.claims import allocation_of

BINDING_TIMEOUT = "device binding timeout"
BINDING_FAILED = "device binding failed"
# how PreBind's wait ended, as upstream's binding-conditions metrics label it
SUCCESS, FAILURE, TIMEOUT, ERROR = "success", "failure", "timeout", "error"
_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


class BindingFailed(Exception):
    """A failure condition of a device is True."""


def _results(claim: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    allocation = allocation_of(claim) or {}
    yield from (allocation.get("devices") or {}).get("results") or ()


def has_binding_conditions(claim: Mapping[str, Any]) -> bool:
    return any(r.get("bindingConditions") for r in _results(claim))


def device_drivers(claims: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The driver of every device the claims' allocations hold, and of each of those with binding
    conditions (what upstream's metrics observe the wait for, and count, per device)."""
    every: list[str] = []
    conditioned: list[str] = []
    for claim in claims:
        for result in _results(claim):
            every.append(str(result.get("driver", "")))
            if result.get("bindingConditions"):
                conditioned.append(str(result.get("driver", "")))
    return every, conditioned


def _device_status(claim: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for device in (claim.get("status") or {}).get("devices") or ():
        if all(device.get(k) == result.get(k) for k in ("driver", "pool", "device")):
            return device
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == kind), None)


def is_ready(claim: Mapping[str, Any]) -> bool:
    """Every binding condition is True (so: allocated, and no device waits); BindingFailed when a
    failure condition is True."""
    if allocation_of(claim) is None:
        return False
    for result in _results(claim):
        conditions = result.get("bindingConditions") or ()
        if not conditions:
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or ():
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                name = (claim.get("metadata") or {}).get("name", "")
                raise BindingFailed(
                    f"{BINDING_FAILED}: claim={name}, reason={failed.get('reason', '')}, "
                    f"message={go_quote(str(failed.get('message', '')))}"
                )
        if not all((_condition(status, kind) or {}).get("status") == "True" for kind in conditions):
            return False
    return True


def timed_out(claim: Mapping[str, Any], timeout: float, now: float) -> bool:
    """Allocated with binding conditions longer than ``timeout`` seconds ago (``now``: wall time)."""
    stamp = (allocation_of(claim) or {}).get("allocationTimestamp")
    if not stamp or not has_binding_conditions(claim):
        return False
    try:
        allocated = datetime.strptime(str(stamp), _TIMESTAMP).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return False
    return allocated + timeout < now


def timestamp(now: float) -> str:
    """An allocationTimestamp as the API writes a time (whole seconds, UTC)."""
    return datetime.fromtimestamp(now, UTC).strftime(_TIMESTAMP)


def summary(claim: Mapping[str, Any]) -> str:
    """Per device with binding conditions, which are pending and which failed (for the log)."""
    parts = []
    for result in _results(claim):
        conditions = result.get("bindingConditions") or ()
        if not conditions:
            continue
        status = _device_status(claim, result) or {}
        failed = [c for c in result.get("bindingFailureConditions") or () if _is_true(status, c)]
        pending = [c for c in conditions if not _is_true(status, c)]
        part = f"<driver={result.get('driver')}, pool={result.get('pool')}> {result.get('device')}"
        if failed:
            part += f" failed=[{','.join(failed)}]"
        if pending:
            part += f" pending=[{','.join(pending)}]"
        parts.append(part)
    return "; ".join(parts)


def _is_true(status: Mapping[str, Any], kind: str) -> bool:
    return (_condition(status, kind) or {}).get("status") == "True"


def go_quote(text: str) -> str:
    """A string as Go's %q prints it (as JSON does for printable text)."""
    return json.dumps(text, ensure_ascii=False)
