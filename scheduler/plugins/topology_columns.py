"""Every node's topology domain as a small integer, one numpy column per topology key.

Shared by PodTopologySpread and InterPodAffinity: both compare per-domain counts across all
nodes. With each node's domain as an int32 id (``-1``: the node lacks the label, or the row holds
no node), a whole cycle's counting is one ``bincount`` and a whole Filter one fancy-index. The
ids are re-read from ``table.infos[slot].node.labels`` only for the rows whose Node object was
replaced since (Node objects are never mutated in place); ids are interned per key and never
reused, so per-domain arrays stay valid across refreshes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from scheduler.api import Node
from scheduler.framework import NodeInfo, NodeTable
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity

MISSING = -1
_AFFINITY_MEMOS = 32


class DomainColumn:
    """Domain ids of one topology key, per table slot (as of the owner's last refresh)."""

    __slots__ = ("id_of", "ids", "key", "values")

    def __init__(self, key: str) -> None:
        self.key = key
        self.ids = np.zeros(0, dtype=np.int32)  # per slot: domain id, or MISSING
        self.values: list[str] = []  # id -> label value
        self.id_of: dict[str, int] = {}  # label value -> id

    def intern(self, value: str) -> int:
        found = self.id_of.get(value)
        if found is None:
            found = self.id_of[value] = len(self.values)
            self.values.append(value)
        return found

    def ids_of(self, infos: Sequence[NodeInfo]) -> np.ndarray:
        """The ids of ``infos`` read from their labels, for nodes given without their table."""
        key = self.key
        return np.array(
            [MISSING if (v := info.node.labels.get(key)) is None else self.intern(v) for info in infos],
            dtype=np.int32,
        )

    def fill(self, nodes: Sequence[Node | None], slots: Iterable[int]) -> None:
        key, ids = self.key, self.ids
        for slot in slots:
            node = nodes[slot]
            value = node.labels.get(key) if node is not None else None
            ids[slot] = MISSING if value is None else self.intern(value)


class DomainColumns:
    """The plugin's columns, one per topology key asked about so far, over the last table seen.

    A refresh re-reads labels only for the slots whose Node object is not the one last read,
    and only when the table's ``epoch`` (which moves whenever a Node object is replaced, added
    or removed) moved since.
    """

    __slots__ = ("_affinity", "_columns", "_epoch", "_nodes", "slot_of")

    def __init__(self) -> None:
        self._columns: dict[str, DomainColumn] = {}
        # per required node affinity (nodeSelector + required terms): does each slot's node match?
        self._affinity: dict[RequiredNodeAffinity, np.ndarray] = {}
        self._nodes: list[Node | None] = []  # per slot: the Node object the ids were read from
        self._epoch = 0
        self.slot_of: dict[str, int] = {}  # node name -> slot, as of the last refresh

    def key(self, key: str) -> DomainColumn:
        """The column of ``key`` as of the last refresh (a new one is filled from it)."""
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = DomainColumn(key)
            column.ids = np.full(len(self._nodes), MISSING, dtype=np.int32)
            column.fill(self._nodes, range(len(self._nodes)))
        return column

    def refresh(self, table: NodeTable) -> None:
        """Bring every column up to date with ``table``."""
        if self._epoch == table.epoch and len(self._nodes) == table.capacity:
            return
        if len(self._nodes) != table.capacity:
            self._nodes = [None] * table.capacity
            self.slot_of = {}
            for column in self._columns.values():
                column.ids = np.full(table.capacity, MISSING, dtype=np.int32)
            self._affinity.clear()
        seen, slot_of = self._nodes, self.slot_of
        stale = []
        for slot, info in enumerate(table.infos):
            node = info.node if info is not None else None
            before = seen[slot]
            if node is not before:
                if before is not None and slot_of.get(before.name) == slot:
                    del slot_of[before.name]
                if node is not None:
                    slot_of[node.name] = slot
                seen[slot] = node
                stale.append(slot)
        for column in self._columns.values():
            column.fill(seen, stale)
        for required, matches in self._affinity.items():
            _match(required, seen, stale, matches)
        self._epoch = table.epoch

    def affinity(self, table: NodeTable, required: RequiredNodeAffinity) -> np.ndarray:
        """Per slot, up to date with ``table``: does the node match ``required``? (read only)"""
        self.refresh(table)
        matches = self._affinity.get(required)
        if matches is None:
            if len(self._affinity) >= _AFFINITY_MEMOS:
                self._affinity.clear()  # workloads come and go; keep the memo small
            matches = self._affinity[required] = np.zeros(len(self._nodes), dtype=bool)
            _match(required, self._nodes, range(len(self._nodes)), matches)
        return matches

    def column(self, table: NodeTable, key: str) -> DomainColumn:
        """The column of ``key``, up to date with ``table``."""
        self.refresh(table)
        return self.key(key)


def _match(
    required: RequiredNodeAffinity, nodes: Sequence[Node | None], slots: Iterable[int], out: np.ndarray
) -> None:
    for slot in slots:
        node = nodes[slot]
        out[slot] = node is not None and required.matches(node)


def per_slot(columns: DomainColumns, capacity: int, by_name: Mapping[str, int]) -> np.ndarray:
    """Per-node-name counts as a per-slot column (names the last refreshed table lacks are dropped)."""
    found = np.zeros(capacity, dtype=np.int64)
    if by_name:
        slots = np.fromiter(
            map(columns.slot_of.get, by_name.keys(), itertools.repeat(-1)), dtype=np.int64, count=len(by_name)
        )
        counts = np.fromiter(by_name.values(), dtype=np.int64, count=len(by_name))
        known = slots >= 0
        found[slots[known]] = counts[known]
    return found


def lookup(counts: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``counts[ids]``, with 0 for a missing id or one interned after ``counts`` was sized."""
    if len(counts) == 0:
        return np.zeros(len(ids), dtype=np.int64)
    known = (ids >= 0) & (ids < len(counts))
    return np.where(known, counts[np.where(known, ids, 0)], 0)


def by_domain(column: DomainColumn, per_slot_counts: np.ndarray) -> np.ndarray:
    """Per-slot counts summed per domain id of ``column`` (int64, one entry per interned value);
    slots without the key, and slots past either array's end, count nowhere."""
    ids = column.ids
    n = min(len(ids), len(per_slot_counts))
    size = len(column.values)
    if n == 0:
        return np.zeros(size, dtype=np.int64)
    # shift by one so MISSING (-1) lands in bin 0, which is dropped
    summed = np.bincount(ids[:n] + 1, weights=per_slot_counts[:n], minlength=size + 1)[1:]
    return summed.astype(np.int64)


def by_domain_sparse(column: DomainColumn, slots: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """:func:`by_domain` for counts given at a few slots only."""
    size = len(column.values)
    ids = column.ids
    inside = slots < len(ids)
    domains = ids[slots[inside]]
    known = domains >= 0
    if not known.any():
        return np.zeros(size, dtype=np.int64)
    return np.bincount(domains[known], weights=counts[inside][known], minlength=size)[:size].astype(np.int64)
