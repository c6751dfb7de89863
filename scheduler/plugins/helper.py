"""Shared by several plugins: Go's integer arithmetic where upstream relies on it, per-node memos, and
Filter from a PreFilter state."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from scheduler.api import Node
from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, NodeTable, NodeVerdicts, Status


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, like Go's ``/`` on int64 (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_array(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Element-wise :func:`go_div` for int64 arrays."""
    q = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (np.asarray(b) > 0), q, -q)


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> None:
    """Scale raw scores in place so the highest becomes ``max_priority`` (upstream's DefaultNormalizeScore).

    With ``reverse`` the order flips (fewer untolerated taints is better); when every score is 0 a
    reversed normalisation gives every node ``max_priority`` and a plain one leaves them at 0.
    """
    if len(scores) == 0:
        return
    max_count = int(scores.max())
    if max_count <= 0:
        if reverse:
            scores[:] = max_priority
        return
    scores *= max_priority
    if scores.min() >= 0:
        scores //= max_count  # the usual case: flooring equals Go's truncation for non-negatives
    else:
        scores[:] = go_div_array(scores, max_count)
    if reverse:
        np.subtract(max_priority, scores, out=scores)


def verdicts_from_mask(rejected: np.ndarray, status: Status) -> NodeVerdicts | None:
    """One reason for every rejected slot; ``None`` (everyone passes) when nothing was rejected."""
    if not rejected.any():
        return None
    return NodeVerdicts.uniform(rejected, status)


# a key not memoised yet is computed directly, without a memo, for this few slots (of more nodes)
_DIRECT_LIMIT = 16


class _MemoColumn:
    __slots__ = ("complete", "mark", "stamps", "values")

    def __init__(self, capacity: int, dtype: type | np.dtype, whole_table: bool) -> None:
        self.values = np.zeros(capacity, dtype=dtype)
        # whole-table memos only: the epoch each value was computed at, 0 = never
        self.stamps = np.zeros(capacity if whole_table else 0, dtype=np.int64)
        self.mark = 0  # the table's change mark when the values were last brought up to date
        self.complete = False  # every live slot has a value


class NodeMemo:
    """Per-key columns of per-node values, kept up to date by refreshing only the changed nodes.

    Many plugin answers depend on one node only (its Node object, or its row: the resources its
    pods use) and on something the pod shares with its siblings (a node selector, a toleration
    list, the resource requests). The first ask for a key computes every node; later asks refresh
    just the slots the table logged as changed since (usually the one node that took the previous
    pod), then gather. ``refresh(slots)`` returns one value per slot of ``slots``.

    With ``whole_table=True`` a value depends on other nodes too (e.g. how many nodes hold an
    image): values are then computed lazily for the slots asked and kept only until any node
    object changes (``NodeTable.epoch``).
    """

    __slots__ = ("_dtype", "_entries", "_limit", "_whole_table")

    def __init__(self, dtype: type | np.dtype, limit: int = 64, whole_table: bool = False) -> None:
        self._dtype = dtype
        self._limit = limit
        self._whole_table = whole_table
        self._entries: dict[Hashable, _MemoColumn] = {}

    def values(
        self, table: NodeTable, key: Hashable, slots: np.ndarray, refresh: Callable[[np.ndarray], Any]
    ) -> np.ndarray:
        """The value of every slot of ``slots`` (live rows), in order (a fresh array)."""
        entry = self._entries.get(key)
        if (
            (entry is None or not entry.complete)
            and not self._whole_table
            and len(slots) <= _DIRECT_LIMIT
            and len(slots) < table.size
        ):
            # e.g. a DaemonSet pod narrowed to its one node: computing every node would cost more
            return np.array(refresh(slots), dtype=self._dtype)
        if entry is None or len(entry.values) != table.capacity:
            if len(self._entries) >= self._limit:
                self._entries.clear()
            entry = self._entries[key] = _MemoColumn(table.capacity, self._dtype, self._whole_table)
        if self._whole_table:
            epoch = table.epoch
            stale = np.flatnonzero(entry.stamps[slots] != epoch)
            if stale.size:
                stale_slots = slots[stale]
                entry.values[stale_slots] = refresh(stale_slots)
                entry.stamps[stale_slots] = epoch
            return entry.values[slots]
        if entry.complete:
            changed = table.changed_since(entry.mark)
            if changed is None:
                entry.complete = False
            elif changed:
                infos = table.infos
                live = [slot for slot in dict.fromkeys(changed) if infos[slot] is not None]
                if live:
                    stale = np.array(live, dtype=np.int64)
                    entry.values[stale] = refresh(stale)
        if not entry.complete:
            live_slots = np.flatnonzero(table.valid)
            if len(live_slots):
                entry.values[live_slots] = refresh(live_slots)
            entry.complete = True
        entry.mark = table.change_mark
        return entry.values[slots]


def per_node(table: NodeTable, compute: Callable[[NodeInfo], Any]) -> Callable[[np.ndarray], list[Any]]:
    """A :meth:`NodeMemo.values` refresh that calls ``compute`` on each stale slot's NodeInfo."""
    infos = table.infos
    return lambda stale: [compute(infos[slot]) for slot in stale.tolist()]


StateT = TypeVar("StateT")


class _Refreshable(Protocol):
    def refresh(self, table: NodeTable) -> None: ...


class PreFilterVerdicts(Generic[StateT]):
    """Filter and FilterNodes of a plugin whose PreFilter computed all that filtering needs
    (InterPodAffinity, PodTopologySpread): the state written under ``key`` judges one node, or every
    slot at once once the plugin's domain columns are brought up to date with the table."""

    __slots__ = ("_check_node", "_check_nodes", "_columns", "_key")

    def __init__(
        self,
        key: str,
        columns: _Refreshable,
        check_node: Callable[[StateT, Node], Status | None],
        check_nodes: Callable[[StateT, np.ndarray], NodeVerdicts | None],
    ) -> None:
        self._key = key
        self._columns = columns
        self._check_node = check_node
        self._check_nodes = check_nodes

    def state(self, cycle_state: CycleState) -> StateT:
        """The PreFilter state; a KeyError with upstream's words when PreFilter wrote none."""
        found: StateT | None = cycle_state.get(self._key)
        if found is None:
            raise KeyError(f"reading {self._key!r} from cycleState: not found")
        return found

    def filter(self, cycle_state: CycleState, node_info: NodeInfo) -> Status | None:
        return self._check_node(self.state(cycle_state), node_info.node)

    def filter_nodes(
        self, cycle_state: CycleState, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        found = self.state(cycle_state)
        self._columns.refresh(table)
        return self._check_nodes(found, slots)
