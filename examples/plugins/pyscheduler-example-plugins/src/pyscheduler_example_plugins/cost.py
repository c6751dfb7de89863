"""CostByLabel: prefer the cheapest nodes, priced by one node label (spot before on-demand).

A node's cost is looked up by the value of one label (``node.kubernetes.io/lifecycle`` by
default): ``spot`` costs 10, ``on-demand`` 100, anything else (or no label) ``defaultCost``.
The raw score of a node is its cost; NormalizeScore turns it into the saving against the dearest
feasible node, in percent: with spot at 10 and on-demand at 100, spot nodes score 90 and
on-demand nodes 0. Give it a weight above the default plugins' (e.g. 10) so that price wins
over spreading; Filter plugins still keep pods off full nodes, so pods go to on-demand nodes
once the spot nodes are full.

Both Score forms are here: ``score`` (one node) is all the plugin needs; ``score_nodes`` (a
vector of table slots) keeps one cost per table row and refreshes only the rows rewritten since
the previous cycle, which at thousands of nodes saves a Python call per node per pod.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    Node,
    NodeInfo,
    NodeTable,
    Pod,
    SignFragment,
    Status,
)

# A label key: an optional DNS-subdomain prefix and "/", then a name of at most 63 characters.
_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)


@dataclass
class CostByLabelArgs:
    """``pluginConfig`` args: ``label``, ``cost`` (label value -> cost), ``defaultCost``."""

    label: str = "node.kubernetes.io/lifecycle"
    cost: dict[str, int] = field(default_factory=lambda: {"spot": 10, "on-demand": 100})
    # the cost of nodes whose label is missing or has a value not in `cost`
    default_cost: int = 100

    def validate(self) -> list[str]:
        """Checks beyond the types; each message starts with the field it is about."""
        errors = []
        if not _LABEL_KEY.fullmatch(self.label):
            errors.append(f"label: Invalid value: {self.label!r}: must be a label key, e.g. example.com/tier")
        errors += [
            f"cost.{value}: Invalid value: {cost}: must not be negative"
            for value, cost in self.cost.items()
            if cost < 0
        ]
        if self.default_cost < 0:
            errors.append(f"defaultCost: Invalid value: {self.default_cost}: must not be negative")
        return errors


class CostByLabel:
    """Score plugin: cheaper nodes first (see the module docstring)."""

    name: ClassVar[str] = "CostByLabel"
    args_type: ClassVar[type] = CostByLabelArgs

    def __init__(self, args: CostByLabelArgs, handle: Handle) -> None:
        self.args = args
        self._column = _CostColumn(self.cost_of)

    def cost_of(self, node: Node) -> int:
        value = node.labels.get(self.args.label)
        if value is None:
            return self.args.default_cost
        return self.args.cost.get(value, self.args.default_cost)

    # -- Signing: what of the pod the scores depend on (OpportunisticBatching)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """A node's cost depends on its labels only, never on the pod: nothing to sign, and
        consecutive pods that sign alike may reuse the previous cycle's ranking of the nodes."""
        return (), None

    # -- Score, per node: what the framework calls when there is no batch form

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return self.cost_of(node_info.node)

    # -- Score, batch: every feasible node at once (the framework prefers it when present)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        return self._column.costs(table)[slots]

    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        """Costs (in place) -> the saving against the dearest feasible node, 0..100."""
        if not len(scores):
            return
        dearest = int(scores.max())
        if dearest <= 0:  # every node is free
            scores[:] = MAX_NODE_SCORE
            return
        scores[:] = (dearest - scores) * MAX_NODE_SCORE // dearest


class _CostColumn:
    """Each node's cost by table slot, brought up to date from the table's change log.

    The cache rewrites a row whenever its node or its pods change (``NodeTable.changed_since``
    lists those rows), so between two pods usually only the node that took the previous pod is
    looked at again; a new table, a grown one or a log that no longer reaches back means all.
    """

    def __init__(self, cost_of: Callable[[Node], int]) -> None:
        self._cost_of = cost_of
        self._table: NodeTable | None = None
        self._values = np.zeros(0, dtype=np.int64)
        self._mark = 0

    def costs(self, table: NodeTable) -> np.ndarray:
        changed = None
        if table is self._table and len(self._values) == table.capacity:
            changed = table.changed_since(self._mark)
        if changed is None:
            self._table = table
            self._values = np.zeros(table.capacity, dtype=np.int64)
            changed = np.flatnonzero(table.valid).tolist()
        infos = table.infos
        for slot in set(changed):
            info = infos[slot]
            if info is not None:  # a freed row: nothing scores it
                self._values[slot] = self._cost_of(info.node)
        self._mark = table.change_mark
        return self._values
