"""PreScore and Score over a set of feasible nodes, each plugin's weighted score kept per node.

Normalization (NormalizeScore) is over the nodes given: scoring every feasible node and scoring
the ones a cycle would find give different numbers, which is why explain shows both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from scheduler.api import Pod
from scheduler.explain.model import NodeScore
from scheduler.framework import CycleState, NodeTable, Status
from scheduler.runtime import Framework


@dataclass(slots=True)
class Scored:
    plugins: list[str]  # the Score plugins that ran (not skipped at PreScore), in order
    rows: list[NodeScore]  # one per node, in the order of the slots given
    totals: np.ndarray  # the rows' totals, in the same order

    def ranked(self) -> list[NodeScore]:
        """Highest total first, then by name."""
        return sorted(self.rows, key=lambda row: (-row.total, row.node))

    def top(self) -> list[str]:
        """The nodes sharing the highest total, by name."""
        best = int(self.totals.max())
        return sorted(row.node for row in self.rows if row.total == best)


def score_nodes(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    slots: np.ndarray,
    extender_scores: Mapping[str, int],
) -> Scored | Status:
    """``slots`` scored as a cycle scores them (untimed); ``extender_scores`` is the extenders'
    part per node name (absent: 0). An Error status when a plugin fails."""
    with fwk.unobserved():
        plugins, weighted, status = fwk.weighted_scores(state, pod, table, slots)
    if status is not None:
        return status
    names = [table.info(slot).name for slot in slots.tolist()]
    extenders = np.fromiter((extender_scores.get(n, 0) for n in names), dtype=np.int64, count=len(names))
    totals = weighted.sum(axis=0) + extenders if plugins else extenders
    by_plugin, by_extenders, by_node = weighted.tolist(), extenders.tolist(), totals.tolist()
    rows = [
        NodeScore(
            name,
            {plugin: by_plugin[row][column] for row, plugin in enumerate(plugins)},
            by_extenders[column],
            by_node[column],
        )
        for column, name in enumerate(names)
    ]
    return Scored(plugins, rows, totals)
