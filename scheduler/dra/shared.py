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
from typing import Any

from scheduler.dra.cel import SelectorCache
from scheduler.dra.claims import ClaimTracker
from scheduler.dra.extended import ClassMaps
from scheduler.dra.memo import SearchMemo
from scheduler.dra.model import SliceIndex, SliceParser
from scheduler.framework import Handle, ObjectLister, RevisionedLister

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
    # the listers the last index was made from, each with its revision then (None: it has none)
    _read: tuple[tuple[ObjectLister, int | None], ...] = ()
    _index: SliceIndex | None = None
    # per kind (SLICES, TAINT_RULES): its current lister, and that lister if it has revisions
    _revisioned: dict[str, tuple[ObjectLister, RevisionedLister | None]] = field(default_factory=dict)

    def slice_index(self, handle: Handle) -> SliceIndex:
        """The ResourceSlices, with the taints of the DeviceTaintRules when they are watched
        (DRADeviceTaintRules); KeyError when slices are not watched. The last index is kept
        while both listers say nothing changed (their revisions stand)."""
        slices = handle.lister(SLICES)
        try:
            rules: ObjectLister | None = handle.lister(TAINT_RULES)
        except KeyError:  # the gate is off: no rules
            rules = None
        read = tuple(
            (lister, self._revision(kind, lister))
            for kind, lister in ((SLICES, slices), (TAINT_RULES, rules))
            if lister is not None
        )
        if self._index is not None and _unchanged(self._read, read):
            return self._index
        listed: list[Any] = rules.list() if rules is not None else []
        self._index = self.slices.index(slices.list(), listed)
        self._read = read
        return self._index

    def _revision(self, kind: str, lister: ObjectLister) -> int | None:
        """The revision of the kind's lister; None for a lister without (asked once per lister,
        and only the current one is kept: a replaced lister is freed)."""
        known = self._revisioned.get(kind)
        if known is None or known[0] is not lister:
            revisioned = lister if isinstance(lister, RevisionedLister) else None
            known = self._revisioned[kind] = (lister, revisioned)
        return known[1].revision if known[1] is not None else None


def _unchanged(
    before: tuple[tuple[ObjectLister, int | None], ...], now: tuple[tuple[ObjectLister, int | None], ...]
) -> bool:
    """The same listers, each with a revision that stands."""
    return len(before) == len(now) and all(
        a is b and r is not None and r == s for (a, r), (b, s) in zip(before, now, strict=True)
    )


_BY_LISTER: weakref.WeakKeyDictionary[ObjectLister, SharedDRA] = weakref.WeakKeyDictionary()


def shared_dra(handle: Handle) -> SharedDRA:
    """The state for the scheduler ``handle`` belongs to; KeyError when claims are not watched."""
    lister = handle.lister(CLAIMS)
    found = _BY_LISTER.get(lister)
    if found is None:
        found = _BY_LISTER[lister] = SharedDRA(ClaimTracker(lister))
    return found
