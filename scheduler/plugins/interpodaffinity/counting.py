"""Per-node tallies of placed pods, kept up to date from the NodeTable's change log.

Both tallies answer "how many pods of interest sit on each node?" as per-slot counts, and refresh
by re-reading only the rows rewritten since they last looked (``NodeTable.changed_since``: the
cache rewrites a row on every pod placed on or removed from its node, and on every node change).
A different table, or a change log that no longer reaches back, means a rebuild from scratch.

- :class:`PlacedMatches`: pods matching the incoming pod's terms, per condition set (namespaces
  and selector each), for the few condition sets in use lately; built once from the pod index.
- :class:`ExistingTerms`: the (anti-)affinity terms *of* placed pods, grouped by identical term
  (a workload's pods share them), so a cycle matches each distinct term once against the incoming
  pod instead of every pod with affinity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import LabelSelector, Pod, SelectorError
from scheduler.framework import NodeInfo, NodeTable
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms
from scheduler.plugins.topology_columns import DomainColumn, by_domain, by_domain_sparse

# (namespaces, selector): a pod matches when it is in one of the namespaces (None: any) and its
# labels match the selector.
Condition = tuple[frozenset[str] | None, LabelSelector]


def _changed_slots(table: NodeTable, owner: object, mark: int) -> set[int] | None:
    """Slots rewritten since ``mark`` of ``owner``'s table; None when a rebuild is due."""
    if owner is not table:
        return None
    changed = table.changed_since(mark)
    return None if changed is None else set(changed)


def _matches(conditions: tuple[Condition, ...], pod: Pod) -> bool:
    return all(
        (namespaces is None or pod.namespace in namespaces) and selector.matches(pod.labels)
        for namespaces, selector in conditions
    )


@dataclass(slots=True)
class _Tally:
    counts: np.ndarray  # per slot
    mark: int


class PlacedMatches:
    """Per slot, the placed pods matching *all* of a tuple of conditions (LRU over tuples)."""

    __slots__ = ("_limit", "_table", "_tallies")

    def __init__(self, limit: int = 32) -> None:
        self._tallies: dict[tuple[Condition, ...], _Tally] = {}
        self._table: NodeTable | None = None
        self._limit = limit

    def per_slot(
        self,
        table: NodeTable,
        conditions: tuple[Condition, ...],
        index: PodsByLabel,
        slot_of: Mapping[str, int],
    ) -> np.ndarray:
        """Counts per slot of ``table`` (read only); ``slot_of`` maps node names to its slots."""
        if table is not self._table:
            self._tallies.clear()
            self._table = table
        tally = self._tallies.pop(conditions, None)
        changed = None if tally is None else _changed_slots(table, self._table, tally.mark)
        if tally is None or changed is None or len(tally.counts) != table.capacity:
            tally = _Tally(self._build(table, conditions, index, slot_of), table.change_mark)
        else:
            infos = table.infos
            for slot in changed:
                info = infos[slot]
                tally.counts[slot] = (
                    0 if info is None else sum(1 for p in info.pods.values() if _matches(conditions, p))
                )
            tally.mark = table.change_mark
        if len(self._tallies) >= self._limit:
            del self._tallies[next(iter(self._tallies))]  # the least recently used
        self._tallies[conditions] = tally
        return tally.counts

    @staticmethod
    def _build(
        table: NodeTable, conditions: tuple[Condition, ...], index: PodsByLabel, slot_of: Mapping[str, int]
    ) -> np.ndarray:
        counts = np.zeros(table.capacity, dtype=np.int64)
        namespaces, selector = conditions[0]
        rest = conditions[1:]
        slots = [
            slot_of.get(p.node_name, -1)
            for p in index.matching(namespaces, selector)
            if not rest or _matches(rest, p)
        ]
        if slots:
            found = np.array(slots, dtype=np.int64)
            found = found[found >= 0]  # pods of nodes the table does not hold are not counted
            counts += np.bincount(found, minlength=table.capacity)[: table.capacity]
        return counts


# Kinds of terms of placed pods.
REQUIRED_ANTI_AFFINITY, REQUIRED_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY = range(4)

# (term, weight): weight is the preferred term's own, 0 for required terms
TermKey = tuple[AffinityTerm, int]

# Past this many nodes, a term's per-slot counts are kept as a full column patched in place.
DENSE_AT = 256


@dataclass(slots=True)
class TermCounts:
    """How many placed pods carry one term, per slot."""

    slots: dict[int, int] = field(default_factory=dict)
    dense: np.ndarray | None = None  # per slot, once many slots hold the term

    def set(self, slot: int, count: int, capacity: int) -> None:
        if count:
            self.slots[slot] = count
        else:
            self.slots.pop(slot, None)
        if self.dense is None:
            if len(self.slots) >= DENSE_AT:
                self.dense = np.zeros(max(capacity, max(self.slots) + 1), dtype=np.int64)
                self.dense[list(self.slots)] = list(self.slots.values())
            return
        if slot >= len(self.dense):
            self.dense = padded(self.dense, max(capacity, slot + 1))
        self.dense[slot] = count

    def by_domain(self, column: DomainColumn) -> np.ndarray:
        """Pods carrying the term summed per domain of ``column`` (refreshed against the table)."""
        if self.dense is not None:
            return by_domain(column, self.dense)
        slots = np.fromiter(self.slots.keys(), dtype=np.int64, count=len(self.slots))
        counts = np.fromiter(self.slots.values(), dtype=np.int64, count=len(self.slots))
        return by_domain_sparse(column, slots, counts)


@dataclass(slots=True)
class _SlotTerms:
    """What one node's pods contribute: count per (kind, term key), and the first parse errors."""

    counts: dict[tuple[int, TermKey], int]
    anti_error: SelectorError | None  # among pods with required anti-affinity
    error: SelectorError | None  # among all pods with affinity


def _slot_terms(info: NodeInfo | None, terms_of: Callable[[Pod], PodTerms]) -> _SlotTerms | None:
    if info is None or not info.pods_with_affinity:
        return None
    counts: dict[tuple[int, TermKey], int] = {}
    anti_error = error = None
    for pod in info.pods_with_affinity.values():
        try:
            terms = terms_of(pod)
        except SelectorError as exc:
            error = error or exc
            if pod.uid in info.pods_with_required_anti_affinity:
                anti_error = anti_error or exc
            continue
        keys = [(REQUIRED_ANTI_AFFINITY, (t, 0)) for t in terms.required_anti_affinity]
        keys += [(REQUIRED_AFFINITY, (t, 0)) for t in terms.required_affinity]
        keys += [(PREFERRED_AFFINITY, (w.term, w.weight)) for w in terms.preferred_affinity]
        keys += [(PREFERRED_ANTI_AFFINITY, (w.term, w.weight)) for w in terms.preferred_anti_affinity]
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return _SlotTerms(counts, anti_error, error)


class ExistingTerms:
    """The terms of every placed pod with (anti-)affinity, grouped by kind and identical term."""

    __slots__ = ("_bad", "_by_slot", "_kinds", "_mark", "_table", "_terms_of")

    def __init__(self, terms_of: Callable[[Pod], PodTerms]) -> None:
        self._terms_of = terms_of
        self._kinds: list[dict[TermKey, TermCounts]] = [{} for _ in range(4)]
        self._by_slot: dict[int, _SlotTerms] = {}
        self._bad: set[int] = set()  # slots holding a pod with an invalid term
        self._table: NodeTable | None = None
        self._mark = 0

    def refresh(self, table: NodeTable) -> None:
        changed = _changed_slots(table, self._table, self._mark)
        if changed is None:
            self._kinds = [{} for _ in range(4)]
            self._by_slot = {}
            self._bad = set()
            self._table = table
            changed = {slot for slot, info in enumerate(table.infos) if info is not None}
        infos, capacity = table.infos, table.capacity
        for slot in changed:
            self._set_slot(slot, _slot_terms(infos[slot], self._terms_of), capacity)
        self._mark = table.change_mark

    def _set_slot(self, slot: int, new: _SlotTerms | None, capacity: int) -> None:
        old = self._by_slot.pop(slot, None)
        old_counts = old.counts if old is not None else {}
        new_counts = new.counts if new is not None else {}
        for kind_key in old_counts.keys() | new_counts.keys():
            count = new_counts.get(kind_key, 0)
            if count == old_counts.get(kind_key, 0):
                continue
            kind, key = kind_key
            entries = self._kinds[kind]
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = TermCounts()
            entry.set(slot, count, capacity)
            if not entry.slots:
                del entries[key]
        self._bad.discard(slot)
        if new is not None:
            self._by_slot[slot] = new
            if new.error is not None:
                self._bad.add(slot)

    def terms(self, kind: int) -> Iterator[tuple[AffinityTerm, int, TermCounts]]:
        """(term, weight, per-slot counts) of every distinct term of ``kind`` placed somewhere."""
        for (term, weight), counts in self._kinds[kind].items():
            yield term, weight, counts

    def first_error(self, required_anti_only: bool) -> SelectorError | None:
        """An invalid term of a placed pod (with required anti-affinity, or with any affinity)."""
        for slot in self._bad:
            found = self._by_slot[slot]
            error = found.anti_error if required_anti_only else found.error
            if error is not None:
                return error
        return None


def add_to(totals: dict[str, np.ndarray], key: str, counts: np.ndarray) -> None:
    """``totals[key] += counts`` for per-domain arrays that may differ in length."""
    found = totals.get(key)
    if found is None:
        totals[key] = counts.copy()
        return
    size = max(len(found), len(counts))
    totals[key] = padded(found, size) + padded(counts, size)


def padded(counts: np.ndarray, size: int) -> np.ndarray:
    """``counts`` extended with zeros to ``size`` entries (itself when long enough)."""
    if len(counts) >= size:
        return counts
    return np.concatenate([counts, np.zeros(size - len(counts), dtype=counts.dtype)])
