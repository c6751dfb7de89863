"""The DRA state the plugins of one scheduler share, as upstream's SharedDRAManager.

DynamicResources assumes allocations at Reserve in the claim tracker; NodeResourcesFit's scoring
of a DRA-backed extended resource must count those devices as taken too, and both read the same
parsed ResourceSlices (with their selector answers cached on the devices). So both plugins take
this state from ``shared_dra(handle)``: one per claims lister, which the profiles of a scheduler
share (tests with their own handle get their own).

With DRADeviceTaintRules the scheduler watches DeviceTaintRules, and the slices read here carry
their taints (as upstream's slice tracker patches them in), for the allocator to honour.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from scheduler.dra.cel import SelectorCache
from scheduler.dra.claims import ClaimTracker
from scheduler.dra.extended import ClassMaps
from scheduler.dra.memo import SearchMemo
from scheduler.dra.model import SliceIndex, SliceParser
from scheduler.framework import Handle, ObjectLister

CLAIMS = "resourceclaims"
SLICES = "resourceslices"
TAINT_RULES = "devicetaintrules"


@dataclass(slots=True, eq=False)
class SharedDRA:
    tracker: ClaimTracker
    slices: SliceParser = field(default_factory=SliceParser)
    class_maps: ClassMaps = field(default_factory=ClassMaps)
    selectors: SelectorCache = field(default_factory=SelectorCache)
    memo: SearchMemo = field(default_factory=SearchMemo)  # each node's last allocation search

    def slice_index(self, handle: Handle) -> SliceIndex:
        """The ResourceSlices, with the taints of the DeviceTaintRules when they are watched
        (DRADeviceTaintRules); KeyError when slices are not watched."""
        slices = handle.lister(SLICES).list()
        try:
            rules = handle.lister(TAINT_RULES).list()
        except KeyError:  # the gate is off: no rules
            rules = []
        return self.slices.index(slices, rules)


_BY_LISTER: weakref.WeakKeyDictionary[ObjectLister, SharedDRA] = weakref.WeakKeyDictionary()


def shared_dra(handle: Handle) -> SharedDRA:
    """The state for the scheduler ``handle`` belongs to; KeyError when claims are not watched."""
    lister = handle.lister(CLAIMS)
    found = _BY_LISTER.get(lister)
    if found is None:
        found = _BY_LISTER[lister] = SharedDRA(ClaimTracker(lister))
    return found
