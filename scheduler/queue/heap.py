"""A min-heap keyed by pod uid, with O(log n) update and delete.

The sub-queues need "is this pod here?", "replace this pod" and "remove this pod" as much as "pop
the smallest", so entries are also indexed by uid and replaced or removed by marking the old heap
entry dead (it is skipped when it reaches the top, and dead entries are compacted away).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# entry layout: [key, tie-breaker, uid, item, alive]
_KEY, _SEQ, _UID, _ITEM, _ALIVE = range(5)


class KeyedHeap(Generic[T]):
    __slots__ = ("_entries", "_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        # Equal keys pop in insertion order, and items themselves are never compared.
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: object) -> bool:
        return uid in self._entries

    def __iter__(self) -> Iterator[T]:
        return (entry[_ITEM] for entry in self._entries.values())

    def get(self, uid: str) -> T | None:
        entry = self._entries.get(uid)
        return None if entry is None else entry[_ITEM]

    def push(self, uid: str, key: Any, item: T) -> None:
        """Add ``item``, or replace the item stored under ``uid`` (re-sorting it by ``key``)."""
        old = self._entries.get(uid)
        if old is not None:
            old[_ALIVE] = False
        entry = [key, next(self._seq), uid, item, True]
        self._entries[uid] = entry
        heapq.heappush(self._heap, entry)
        self._maybe_compact()

    def remove(self, uid: str) -> T | None:
        entry = self._entries.pop(uid, None)
        if entry is None:
            return None
        entry[_ALIVE] = False
        self._maybe_compact()
        item: T = entry[_ITEM]
        return item

    def peek(self) -> T | None:
        heap = self._heap
        while heap and not heap[0][_ALIVE]:
            heapq.heappop(heap)
        return heap[0][_ITEM] if heap else None

    def pop(self) -> T | None:
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            if entry[_ALIVE]:
                del self._entries[entry[_UID]]
                item: T = entry[_ITEM]
                return item
        return None

    def _maybe_compact(self) -> None:
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = [entry for entry in self._heap if entry[_ALIVE]]
            heapq.heapify(self._heap)
