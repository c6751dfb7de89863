"""What NodeResourcesFit scores a DRA-backed extended resource by on a node that does not
advertise it: how many devices of the resource's DeviceClass the node has (allocatable) and how
many of them some claim holds (allocated), as upstream counts them.

Upstream counts the devices of every slice serving the node (whatever its pool's generation;
of a perDeviceNodeSelection slice, those naming the node) that match all the class's CEL
selectors; a selector that fails makes it count none on that node. A device held in any way
(exclusively or by a share of its capacity) counts as allocated. The matching devices of a node
change only with its slices, the class or its labels, so they are kept per node until one of
those is a new object; the allocated ones are counted anew each cycle (assumed allocations
included).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.dra.cel import CelError, SelectorCache
from scheduler.dra.claims import AllocatedDevices
from scheduler.dra.model import Device, DeviceID, SliceIndex


def _expressions(cls: Mapping[str, Any]) -> tuple[str, ...]:
    selectors = (cls.get("spec") or {}).get("selectors") or ()
    return tuple(str(s["cel"].get("expression") or "") for s in selectors if s.get("cel"))


def _matches(device: Device, expressions: tuple[str, ...], selectors: SelectorCache) -> bool:
    """CelError when a selector does not compile or fails on the device."""
    for expression in expressions:
        known = device.matches.get(expression)
        if known is None:
            known = device.matches[expression] = selectors.get(expression).matches(device.cel)
        if not known:
            return False
    return True


class ClassDevices:
    """The devices of a class on each node, kept while the slices, the class and the node's
    labels are the same objects."""

    __slots__ = ("_answers", "_selectors")

    def __init__(self, selectors: SelectorCache) -> None:
        self._selectors = selectors
        # (class name, node) -> (index, class, labels, the devices or None after a CEL error)
        self._answers: dict[tuple[str, str], tuple[Any, Any, Any, frozenset[DeviceID] | None]] = {}

    def on_node(
        self, index: SliceIndex, cls: Mapping[str, Any], node_name: str, labels: Mapping[str, str]
    ) -> frozenset[DeviceID] | None:
        key = (str((cls.get("metadata") or {}).get("name", "")), node_name)
        known = self._answers.get(key)
        if known is not None and known[0] is index and known[1] is cls and known[2] is labels:
            return known[3]
        expressions = _expressions(cls)
        devices: frozenset[DeviceID] | None
        try:
            devices = frozenset(
                device.id
                for device in index.devices_on(node_name, labels)
                if _matches(device, expressions, self._selectors)
            )
        except CelError:
            devices = None
        self._answers[key] = (index, cls, labels, devices)
        return devices

    def counts(
        self,
        index: SliceIndex,
        cls: Mapping[str, Any],
        node_name: str,
        labels: Mapping[str, str],
        allocated: AllocatedDevices,
    ) -> tuple[int, int]:
        """(allocatable, allocated) devices of the class on the node; (0, 0) after a CEL error."""
        devices = self.on_node(index, cls, node_name, labels)
        if not devices:
            return 0, 0
        return len(devices), allocated.count_in(devices)
