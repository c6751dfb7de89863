"""The cluster as one scheduling cycle sees it: a cheap, incrementally refreshed view of the cache.

Upstream copies every changed NodeInfo into a snapshot at the start of each cycle, because its
informers mutate the cache from other goroutines while a cycle runs. Here scheduling is sequential
in one asyncio loop and a cycle never awaits between reading the snapshot and assuming its pod, so
nothing can change underneath it: the snapshot does not copy NodeInfos, it *is* the live cache seen
through three derived structures that are costly to rebuild and are rebuilt only when stale:

1. the node list in upstream's node-tree order (zones interleaved round-robin), rebuilt only when
   the set of nodes or some node's zone changed (the tree's generation number moved);
2. ``order``, the NodeTable slots of that list, which batch plugins index with;
3. the NodeInfos having pods with (anti-)affinity and with required anti-affinity, in list order,
   rebuilt only when some node changed since the last refresh *and* its membership flipped.

The cache's :class:`PodIndex` (placed pods by label) is live as well and handed out as is.

``Cache.snapshot()`` refreshes and returns the same :class:`Snapshot` object every time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from scheduler.framework import NodeInfo, NodeTable
from scheduler.framework.pod_index import PodIndex


class Snapshot:
    """Implements ``framework.NodeLister`` over the live cache."""

    __slots__ = (
        "_affinity",
        "_anti_affinity",
        "_by_name",
        "_infos",
        "_pod_index",
        "_with_affinity",
        "_with_anti",
        "order",
        "table",
    )

    def __init__(
        self, table: NodeTable, by_name: Mapping[str, NodeInfo], pod_index: PodIndex | None = None
    ) -> None:
        self.table = table
        self._pod_index = pod_index
        self.order: np.ndarray = np.zeros(0, dtype=np.int64)
        self._by_name = by_name  # the cache's own mapping; may hold nodes not (or no longer) listed
        self._infos: list[NodeInfo] = []
        self._affinity: list[NodeInfo] = []
        self._anti_affinity: list[NodeInfo] = []
        self._with_affinity: set[str] = set()
        self._with_anti: set[str] = set()

    # ------------------------------------------------------------------ NodeLister

    def node_infos(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, node_name: str) -> NodeInfo | None:
        info = self._by_name.get(node_name)
        return info if info is not None and info.slot >= 0 else None

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return self._affinity

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]:
        return self._anti_affinity

    def pod_index(self) -> PodIndex:
        """The cache's live index; built from the listed nodes when the snapshot was given none."""
        return self._pod_index if self._pod_index is not None else PodIndex.of(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    # ------------------------------------------------------------------ refresh (called by the cache)

    def set_nodes(self, infos: list[NodeInfo]) -> None:
        """The node list changed: take the new order and rebuild everything derived from it."""
        self._infos = infos
        self.order = np.fromiter((info.slot for info in infos), dtype=np.int64, count=len(infos))
        self._rebuild_affinity_lists()

    def nodes_changed(self, infos: Iterable[NodeInfo]) -> None:
        """Pods moved on ``infos``; rebuild the affinity lists only if one's membership flipped."""
        for info in infos:
            if (bool(info.pods_with_affinity) != (info.name in self._with_affinity)) or (
                bool(info.pods_with_required_anti_affinity) != (info.name in self._with_anti)
            ):
                self._rebuild_affinity_lists()
                return

    def _rebuild_affinity_lists(self) -> None:
        self._affinity = [info for info in self._infos if info.pods_with_affinity]
        self._anti_affinity = [info for info in self._infos if info.pods_with_required_anti_affinity]
        self._with_affinity = {info.name for info in self._affinity}
        self._with_anti = {info.name for info in self._anti_affinity}
