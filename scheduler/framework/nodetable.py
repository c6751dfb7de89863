"""A columnar view of all nodes, so hot plugins evaluate every node in one numpy expression.

The cache owns the table and rewrites a node's row whenever its NodeInfo changes
(:meth:`NodeTable.sync_row`); plugins only read it. Rows are recycled when nodes go away, so a
row index (a *slot*) is stable for the lifetime of a node.
"""

from __future__ import annotations

import numpy as np

from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from scheduler.framework.types import NodeInfo

# columns of `alloc` and `requested`
CPU, MEMORY, EPHEMERAL_STORAGE, PODS = 0, 1, 2, 3
# columns of `non_zero`
NZ_CPU, NZ_MEMORY = 0, 1


class NodeTable:
    """Row ``slot`` describes ``infos[slot]``; ``valid[slot]`` is False for free rows.

    Columns: ``alloc[:, CPU|MEMORY|EPHEMERAL_STORAGE|PODS]`` (CPU in millicores, PODS = allowed
    pod count), ``requested[...]`` with the same columns (PODS = pods on the node), ``non_zero``
    (the scoring requests, CPU and memory), ``unschedulable``, ``has_hard_taints`` (a NoSchedule
    or NoExecute taint exists), ``has_soft_taints`` (a PreferNoSchedule taint exists),
    ``has_images`` (the node reports images) and one pair of columns per extended/scalar resource.
    The flag columns let per-node loops visit only the nodes where there is something to check.
    """

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = 0
        self.infos: list[NodeInfo | None] = []
        self.valid = np.zeros(0, dtype=bool)
        self.alloc = np.zeros((0, 4), dtype=np.int64)
        self.requested = np.zeros((0, 4), dtype=np.int64)
        self.non_zero = np.zeros((0, 2), dtype=np.int64)
        self.unschedulable = np.zeros(0, dtype=bool)
        self.has_hard_taints = np.zeros(0, dtype=bool)
        self.has_soft_taints = np.zeros(0, dtype=bool)
        self.has_images = np.zeros(0, dtype=bool)
        self.scalar_alloc: dict[str, np.ndarray] = {}
        self.scalar_requested: dict[str, np.ndarray] = {}
        self._free: list[int] = []
        self._grow(capacity)

    def _grow(self, capacity: int) -> None:
        old = self.capacity

        def grown(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            bigger[:old] = array
            return bigger

        self.valid = grown(self.valid)
        self.alloc = grown(self.alloc)
        self.requested = grown(self.requested)
        self.non_zero = grown(self.non_zero)
        self.unschedulable = grown(self.unschedulable)
        self.has_hard_taints = grown(self.has_hard_taints)
        self.has_soft_taints = grown(self.has_soft_taints)
        self.has_images = grown(self.has_images)
        self.scalar_alloc = {name: grown(col) for name, col in self.scalar_alloc.items()}
        self.scalar_requested = {name: grown(col) for name, col in self.scalar_requested.items()}
        self.infos.extend([None] * (capacity - old))
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
        self.valid[slot] = False
        self.infos[slot] = None
        self.alloc[slot] = 0
        self.requested[slot] = 0
        self.non_zero[slot] = 0
        self.unschedulable[slot] = False
        self.has_hard_taints[slot] = False
        self.has_soft_taints[slot] = False
        self.has_images[slot] = False
        for col in (*self.scalar_alloc.values(), *self.scalar_requested.values()):
            col[slot] = 0
        self._free.append(slot)
        info.slot = -1

    def sync_row(self, info: NodeInfo) -> None:
        """Rewrite the row of ``info`` from its node and its pods' accounted requests."""
        slot = info.slot
        node = info.node
        alloc, req = node.allocatable, info.requested
        self.alloc[slot] = (alloc.milli_cpu, alloc.memory, alloc.ephemeral_storage, alloc.allowed_pod_number)
        self.requested[slot] = (req.milli_cpu, req.memory, req.ephemeral_storage, len(info.pods))
        self.non_zero[slot] = (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory)
        self.unschedulable[slot] = node.unschedulable
        self.has_hard_taints[slot] = any(t.effect in (NO_SCHEDULE, NO_EXECUTE) for t in node.taints)
        self.has_soft_taints[slot] = any(t.effect == PREFER_NO_SCHEDULE for t in node.taints)
        self.has_images[slot] = bool(node.images)
        for name in set(alloc.scalar) | set(req.scalar) | set(self.scalar_alloc):
            alloc_col, req_col = self._scalar_columns(name)
            alloc_col[slot] = alloc.scalar.get(name, 0)
            req_col[slot] = req.scalar.get(name, 0)

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

    def info(self, slot: int) -> NodeInfo:
        info = self.infos[slot]
        assert info is not None, f"slot {slot} holds no node"
        return info
