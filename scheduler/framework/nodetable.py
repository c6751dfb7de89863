"""A columnar view of all nodes, so hot plugins evaluate every node in one numpy expression.

The cache owns the table and rewrites a node's row whenever its NodeInfo changes
(:meth:`NodeTable.sync_row`); plugins only read it. Rows are recycled when nodes go away, so a
row index (a *slot*) is stable for the lifetime of a node.

Two-column arrays are stored column-major (Fortran order): hot plugins read whole columns
(``alloc[:, CPU]``), which are then contiguous, while ``alloc[slot]`` still reads one row.
"""

from __future__ import annotations

import itertools

import numpy as np

from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from scheduler.framework.types import NodeInfo

# columns of `alloc` and `requested`
CPU, MEMORY, EPHEMERAL_STORAGE, PODS = 0, 1, 2, 3
# columns of `non_zero`
NZ_CPU, NZ_MEMORY = 0, 1

# Epochs are unique in the whole process (not per table), so a value memoised against one
# table's epoch can never be mistaken for another table's. 0 means "never".
_epochs = itertools.count(1)


class NodeTable:
    """Row ``slot`` describes ``infos[slot]``; ``valid[slot]`` is False for free rows.

    Columns: ``alloc[:, CPU|MEMORY|EPHEMERAL_STORAGE|PODS]`` (CPU in millicores, PODS = allowed
    pod count), ``requested[...]`` with the same columns (PODS = pods on the node), ``free``
    (``alloc - requested``, so a fit check is one comparison per resource), ``non_zero`` (the
    scoring requests, CPU and memory), ``unschedulable``, ``has_hard_taints`` (a NoSchedule or
    NoExecute taint exists), ``has_soft_taints`` (a PreferNoSchedule taint exists), ``has_images``
    (the node reports images) and one pair of columns per extended/scalar resource. The flag
    columns let per-node loops visit only the nodes where there is something to check.

    Plugins memoise per-node answers (label matches, taint verdicts, resource scores) and
    refresh only what changed: :meth:`changed_since` lists the slots whose rows were rewritten
    since a :attr:`change_mark`, and ``epoch`` changes whenever any Node object is replaced, added
    or removed (Node objects are never mutated in place: an update replaces ``NodeInfo.node``).

    :meth:`min_free` is the least free amount per column over all nodes, kept up to date as rows
    change (recomputed only after the node that held a minimum gained room or went away), so a
    pod that fits the emptiest-looking column everywhere needs no per-node check at all.
    """

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = 0
        self.infos: list[NodeInfo | None] = []
        self.valid = np.zeros(0, dtype=bool)
        self.alloc = np.zeros((0, 4), dtype=np.int64, order="F")
        self.requested = np.zeros((0, 4), dtype=np.int64, order="F")
        self.free = np.zeros((0, 4), dtype=np.int64, order="F")
        self.non_zero = np.zeros((0, 2), dtype=np.int64, order="F")
        self.unschedulable = np.zeros(0, dtype=bool)
        self.has_hard_taints = np.zeros(0, dtype=bool)
        self.has_soft_taints = np.zeros(0, dtype=bool)
        self.has_images = np.zeros(0, dtype=bool)
        self.scalar_alloc: dict[str, np.ndarray] = {}
        self.scalar_requested: dict[str, np.ndarray] = {}
        self.epoch = next(_epochs)
        self._changes: list[int] = []  # slots whose rows were rewritten, oldest first
        self._changes_start = 0  # the change number of _changes[0]
        self._nodes: list[object] = []  # the Node object each row was last filled from
        self._min_free: np.ndarray | None = None  # None: to be recomputed
        self._free: list[int] = []
        self._grow(capacity)

    def _grow(self, capacity: int) -> None:
        old = self.capacity

        def grown(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype, order="F")
            bigger[:old] = array
            return bigger

        self.valid = grown(self.valid)
        self.alloc = grown(self.alloc)
        self.requested = grown(self.requested)
        self.free = grown(self.free)
        self.non_zero = grown(self.non_zero)
        self.unschedulable = grown(self.unschedulable)
        self.has_hard_taints = grown(self.has_hard_taints)
        self.has_soft_taints = grown(self.has_soft_taints)
        self.has_images = grown(self.has_images)
        self.scalar_alloc = {name: grown(col) for name, col in self.scalar_alloc.items()}
        self.scalar_requested = {name: grown(col) for name, col in self.scalar_requested.items()}
        self.epoch = next(_epochs)
        self.infos.extend([None] * (capacity - old))
        self._nodes.extend([None] * (capacity - old))
        self._free.extend(range(capacity - 1, old - 1, -1))
        self.capacity = capacity

    def add(self, info: NodeInfo) -> int:
        """Give ``info`` a row, fill it, and return its slot."""
        if not self._free:
            self._grow(max(64, self.capacity * 2))
        slot = self._free.pop()
        info.slot = slot
        self.infos[slot] = info
        self.valid[slot] = True
        self.sync_row(info)
        return slot

    def remove(self, info: NodeInfo) -> None:
        slot = info.slot
        self._track_min_free(slot, None)
        self.valid[slot] = False
        self.infos[slot] = None
        self.alloc[slot] = 0
        self.requested[slot] = 0
        self.free[slot] = 0
        self.non_zero[slot] = 0
        self.unschedulable[slot] = False
        self.has_hard_taints[slot] = False
        self.has_soft_taints[slot] = False
        self.has_images[slot] = False
        for col in (*self.scalar_alloc.values(), *self.scalar_requested.values()):
            col[slot] = 0
        self._nodes[slot] = None
        self.epoch = next(_epochs)
        self._changed(slot)
        self._free.append(slot)
        info.slot = -1

    def sync_row(self, info: NodeInfo) -> None:
        """Rewrite the row of ``info`` from its node and its pods' accounted requests.

        Called on every pod placed or removed, so what comes from the Node object alone is
        rewritten only when that object was replaced.
        """
        slot = info.slot
        node = info.node
        alloc = node.allocatable
        if node is not self._nodes[slot]:
            self._nodes[slot] = node
            self.epoch = next(_epochs)
            self.alloc[slot] = (
                alloc.milli_cpu,
                alloc.memory,
                alloc.ephemeral_storage,
                alloc.allowed_pod_number,
            )
            self.unschedulable[slot] = node.unschedulable
            self.has_hard_taints[slot] = any(t.effect in (NO_SCHEDULE, NO_EXECUTE) for t in node.taints)
            self.has_soft_taints[slot] = any(t.effect == PREFER_NO_SCHEDULE for t in node.taints)
            self.has_images[slot] = bool(node.images)
            for name in set(alloc.scalar) | set(self.scalar_alloc):
                self._scalar_columns(name)[0][slot] = alloc.scalar.get(name, 0)
        req = info.requested
        pods = len(info.pods)
        self._changed(slot)
        self.requested[slot] = (req.milli_cpu, req.memory, req.ephemeral_storage, pods)
        free = (
            alloc.milli_cpu - req.milli_cpu,
            alloc.memory - req.memory,
            alloc.ephemeral_storage - req.ephemeral_storage,
            alloc.allowed_pod_number - pods,
        )
        self._track_min_free(slot, free)
        self.free[slot] = free
        self.non_zero[slot] = (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory)
        if req.scalar or self.scalar_requested:
            for name in set(req.scalar) | set(self.scalar_requested):
                self._scalar_columns(name)[1][slot] = req.scalar.get(name, 0)

    @property
    def change_mark(self) -> int:
        """A position in the log of row changes, for :meth:`changed_since`."""
        return self._changes_start + len(self._changes)

    def changed_since(self, mark: int) -> list[int] | None:
        """Slots whose rows were rewritten since ``mark`` (repeats possible), or None when the log
        no longer reaches back that far (then everything must be considered changed)."""
        if mark < self._changes_start:
            return None
        return self._changes[mark - self._changes_start :]

    def _changed(self, slot: int) -> None:
        changes = self._changes
        changes.append(slot)
        if len(changes) > 2 * self.capacity + 1024:  # keep the log short; old marks then read None
            drop = len(changes) // 2
            del changes[:drop]
            self._changes_start += drop

    def _track_min_free(self, slot: int, new: tuple[int, ...] | None) -> None:
        """Keep :meth:`min_free` exact as row ``slot`` becomes ``new`` (None: the node goes away)."""
        minimum = self._min_free
        if minimum is None:
            return
        old = self.free[slot].tolist()
        for column, (before, least) in enumerate(zip(old, minimum.tolist(), strict=True)):
            after = None if new is None else new[column]
            if after is not None and after < least:
                minimum[column] = after
            elif before == least and (after is None or after > before):
                self._min_free = None  # a row holding a minimum gained room or left: recompute on demand
                return

    def min_free(self) -> np.ndarray:
        """The least ``free`` amount per column over the nodes (int64 max when there is none)."""
        if self._min_free is None:
            live = self.free[self.valid]
            if len(live):
                self._min_free = live.min(axis=0)
            else:
                self._min_free = np.full(4, np.iinfo(np.int64).max, dtype=np.int64)
        return self._min_free

    def _scalar_columns(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in self.scalar_alloc:
            self.scalar_alloc[name] = np.zeros(self.capacity, dtype=np.int64)
            self.scalar_requested[name] = np.zeros(self.capacity, dtype=np.int64)
        return self.scalar_alloc[name], self.scalar_requested[name]

    def scalar(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(allocatable, requested) columns of a scalar resource; zeros when no node has it."""
        if name in self.scalar_alloc:
            return self.scalar_alloc[name], self.scalar_requested[name]
        zeros = np.zeros(self.capacity, dtype=np.int64)
        return zeros, zeros

    @property
    def size(self) -> int:
        """How many rows hold a node."""
        return self.capacity - len(self._free)

    def info(self, slot: int) -> NodeInfo:
        info = self.infos[slot]
        assert info is not None, f"slot {slot} holds no node"
        return info
