"""Which nodes' kept answers still stand for a claim shape, so the batch Filter searches only the rest.

From one pod to the next of the same claim shape, a node's kept answer (``scheduler.dra.memo``)
stands unless the node changed (its row of the node table was rewritten: new labels, a pod
placed, another node in its slot), a pool the answer read changed hands
(``AllocatedDevices.pools_changed_since``: an allocation pending, assumed, written or gone) or
the slice index is another one (a ResourceSlice or DeviceTaintRule changed). ``Settled`` holds,
per slot of one node table, whether the shape fits the node (with the answer) or not, and brings
that up to date from what was logged since the last batch, without looking at the other nodes:
those are exactly the nodes whose memo lookup would have found their answer again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from scheduler.dra.claims import PoolsMark
from scheduler.dra.model import PoolKey
from scheduler.framework import NodeTable

if TYPE_CHECKING:  # the memo keeps these records
    from scheduler.dra.memo import Answer

UNKNOWN, FITS, NO_FIT = 0, 1, 2


class ChangeView(Protocol):
    """What a view of the allocations tells about its changes (``claims.AllocatedDevices``)."""

    def mark(self) -> PoolsMark:
        """Where the allocations stand now, to ask later what changed since."""
        ...

    def pools_changed_since(self, mark: PoolsMark) -> set[PoolKey] | None:
        """The pools whose holdings may have changed since ``mark`` (every one a kept answer
        read must then be searched again); None when that is not known."""
        ...


class Settled:
    """One claim shape's answers per slot of one node table, as of the last ``update``.

    ``answers`` (node name -> answer, for the nodes the shape fits) is never emptied nor has an
    answer dropped in place: ``update`` starts a new dict, or a copy when some answer no longer
    stands, so a cycle that took it still finds every answer its Filter judged by (readers do not
    change it). ``settle`` adds in place, only for nodes that were unknown: nodes the cycles
    holding this dict searched themselves (their own answers come first), found no fit on or
    did not judge."""

    __slots__ = ("_by_pool", "_index", "_mark", "_names", "_table", "_table_mark", "answers", "state")

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._index: object = None
        self._mark: PoolsMark | None = None
        self._table_mark = 0
        self.state = np.zeros(0, dtype=np.int8)  # per slot: UNKNOWN, FITS or NO_FIT
        self._names: list[str] = []
        self.answers: dict[str, Answer] = {}
        self._by_pool: dict[PoolKey, set[int]] = {}  # the slots whose answers read each pool

    def update(self, table: NodeTable, index: object, view: ChangeView) -> None:
        """Forget the answers that may not stand any more (all of them when that is not known)."""
        stale: set[int] | None = None
        if (
            self._mark is not None
            and table is self._table
            and index is self._index
            and len(self.state) == table.capacity
        ):
            rows = table.changed_since(self._table_mark)
            pools = view.pools_changed_since(self._mark)
            if rows is not None and pools is not None:
                stale = set(rows)
                by_pool = self._by_pool
                for pool in pools:
                    stale.update(by_pool.get(pool, ()))
        if stale is None:
            self._table, self._index = table, index
            self.state = np.zeros(table.capacity, dtype=np.int8)
            self._names = [""] * table.capacity
            self._by_pool = {}
            self.answers = {}
        else:
            state, names = self.state, self._names
            dropped = []
            for slot in stale:
                if state[slot] == FITS:
                    dropped.append(names[slot])
                state[slot] = UNKNOWN
            if dropped:  # from a copy: the cycles that took ``answers`` keep theirs
                answers = dict(self.answers)
                for name in dropped:
                    answers.pop(name, None)
                self.answers = answers
        self._table_mark = table.change_mark
        self._mark = view.mark()

    def settle(self, slot: int, node_name: str, answer: Answer) -> None:
        """The answer the search (or the memo) gave on the node in ``slot`` just now."""
        self.state[slot] = NO_FIT if answer.picks is None else FITS
        self._names[slot] = node_name
        if answer.picks is not None:
            self.answers[node_name] = answer
        by_pool = self._by_pool
        for pool in answer.pools:
            found = by_pool.get(pool)
            if found is None:
                found = by_pool[pool] = set()
            found.add(slot)
