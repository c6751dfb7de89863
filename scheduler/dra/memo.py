"""The answer of each node's last allocation search, for the next pod asking the same there.

From one cycle to the next almost every node is unchanged: only the pools of the node the last
pod went to hold other devices now. The search on a node (``scheduler.dra.allocator``) reads
only the claims' requests and constraints (their *shape*: names, selectors, mode, count, admin
access, tolerations, capacity), the node's pools and devices (the slice index and the node's
labels) and what claims hold in those pools (each pool's allocation version, which changes with
every allocation, pending, assumed or written, of its devices). When all of these are what the
node's last search had, its answer (the devices per request, or that none fit) is the answer
again, with the same device names.

Searches on nodes offering shared devices (DRAConsumableCapacity) are not kept: each share gets
a new ID, and what the shares consume is not part of a pool's version.

The batch Filter does not even look answers up on the nodes nothing changed on since the last
pod of the same shape (``scheduler.dra.settled``, whose records the memo keeps per shape).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from scheduler.dra.model import Device, PoolKey
from scheduler.dra.settled import Settled

# per claim: (the request's place among the claim's requests and alternatives, the device)
Picks = tuple[tuple[tuple[int, Device], ...], ...]

_MAX_SHAPES = 1024  # distinct claim shapes interned before the table starts over
_MAX_ANSWERS = 100_000  # answers kept (per node and shape) before the table starts over
MAX_SETTLED = 32  # shapes whose batch answers are kept (each: a few entries per node)


@dataclass(slots=True, frozen=True, eq=False)
class Answer:
    """One node's search: what it read and what it found (None: the claims do not fit)."""

    shape: Hashable
    labels: Mapping[str, str]
    pools: tuple[PoolKey, ...]  # the node's pools, as the index gave them for these labels
    versions: tuple[Hashable, ...]  # each one's allocation version
    picks: Picks | None


class SearchMemo:
    """The last answer per node and claim shape, for one slice index (a new index drops them all)."""

    def __init__(self) -> None:
        self._index: object = None
        # by the shape's identity (shapes are interned; the answer names its own), then by node:
        # one lookup by the node's name, whose hash the string keeps
        self._answers: dict[int, dict[str, Answer]] = {}
        self._kept = 0
        self._shapes: dict[Hashable, Hashable] = {}
        # by the shape itself, not its id: a record made for a shape no longer interned (by an
        # allocator from before the table started over) keeps that shape, so no new one inherits it
        self._settled: dict[Hashable, Settled] = {}

    def shape(self, shape: Hashable) -> Hashable:
        """The one object standing for an equal shape, so answers compare shapes by identity."""
        found = self._shapes.get(shape)
        if found is None:
            if len(self._shapes) >= _MAX_SHAPES:
                self._shapes.clear()
                self._drop_answers()
                self._settled.clear()
            found = self._shapes[shape] = shape
        return found

    def recall(
        self,
        node_name: str,
        index: object,
        shape: Hashable,
        labels: Mapping[str, str],
        version: Callable[[PoolKey], Hashable],
    ) -> Answer | None:
        """The node's last answer for the shape if it read exactly this (the same labels, and
        each of its pools at the same ``version``); None when there is none. Equal labels give
        the same pools from one index, so the pools are not asked for again."""
        if index is not self._index:
            self._index = index
            self._drop_answers()
            return None
        by_node = self._answers.get(id(shape))
        known = by_node.get(node_name) if by_node is not None else None
        if (
            known is None
            or known.shape is not shape
            or (known.labels is not labels and known.labels != labels)
        ):
            return None
        # a plain loop: most nodes have one pool
        for pool, seen in zip(known.pools, known.versions, strict=True):
            if version(pool) != seen:
                return None
        return known

    def settled(self, shape: Hashable) -> Settled:
        """The batch answers of an interned shape (``scheduler.dra.settled``)."""
        found = self._settled.get(shape)
        if found is None:
            if len(self._settled) >= MAX_SETTLED:
                self._settled.clear()
            found = self._settled[shape] = Settled()
        return found

    def keep(self, node_name: str, index: object, answer: Answer) -> None:
        if index is self._index:
            if self._kept >= _MAX_ANSWERS:
                self._drop_answers()
            by_node = self._answers.setdefault(id(answer.shape), {})
            self._kept += node_name not in by_node
            by_node[node_name] = answer

    def _drop_answers(self) -> None:
        self._answers.clear()
        self._kept = 0
