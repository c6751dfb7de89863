"""ScheduleAnyway constraints: fewer matching pods in a node's domains scores higher.

Counts per non-hostname domain are gathered once in PreScore from the pod index's per-node counts
(visiting only nodes that hold matching pods); per-host counts are those per-node counts as is.
Domain sizes weight the counts (log(size + 2)) so a small topology (zones) is not drowned by a
big one (hosts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Pod
from scheduler.framework import MAX_NODE_SCORE, NodeInfo
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SpreadConstraint,
    node_has_all_keys,
)


@dataclass(slots=True)
class PreScoreState:
    constraints: Sequence[SpreadConstraint]
    # names of candidate nodes lacking some topology key: they score 0 after normalising
    ignored: set[str] = field(default_factory=set)
    # aligned with the candidate list PreScore saw (the order NormalizeScore gets scores in)
    ignored_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    counts: list[dict[str, int]] = field(default_factory=list)
    # per constraint: matching pods per node name (read for hostname constraints only)
    node_counts: list[Mapping[str, int]] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def compute_pre_score_state(
    pod: Pod,
    constraints: Sequence[SpreadConstraint],
    candidates: Sequence[NodeInfo],
    lookup: Callable[[str], NodeInfo | None],
    index: PodsByLabel,
    require_all_topologies: bool,
) -> PreScoreState:
    """``lookup`` finds any node of the cluster by name (not only candidates)."""
    state = PreScoreState(constraints)
    state.counts = [{} for _ in constraints]
    mask = np.zeros(len(candidates), dtype=bool)
    for n, info in enumerate(candidates):
        labels = info.node.labels
        if require_all_topologies and not node_has_all_keys(labels, constraints):
            state.ignored.add(info.name)
            mask[n] = True
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != LABEL_HOSTNAME:  # per-host counts are read in Score
                state.counts[i].setdefault(labels.get(c.topology_key, ""), 0)
    state.ignored_mask = mask
    scored = len(candidates) - len(state.ignored)
    state.weights = [
        topology_normalizing_weight(scored if c.topology_key == LABEL_HOSTNAME else len(state.counts[i]))
        for i, c in enumerate(constraints)
    ]

    required = RequiredNodeAffinity.of(pod)
    for i, c in enumerate(constraints):
        matching = index.count_by_node(pod.namespace, c.selector)
        state.node_counts.append(matching)
        counts = state.counts[i]
        if not counts:
            continue
        for node_name, found in matching.items():
            info = lookup(node_name)
            if info is None:
                continue
            node = info.node
            if require_all_topologies and not node_has_all_keys(node.labels, constraints):
                continue
            value = node.labels.get(c.topology_key, "")
            # only domains some candidate belongs to matter
            if value in counts and c.includes_node(pod, node, required):
                counts[value] += found
    return state


def score_node(state: PreScoreState, pod: Pod, info: NodeInfo) -> int:
    if info.name in state.ignored:
        return 0
    labels = info.node.labels
    total = 0.0
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            count = state.node_counts[i].get(info.name, 0)
        else:
            count = state.counts[i].get(value, 0)
        total += count * state.weights[i] + (c.max_skew - 1)
    return math.floor(total + 0.5)  # Go's math.Round on a non-negative value


def normalize(state: PreScoreState, scores: np.ndarray) -> None:
    """Invert into [0, 100]: the least crowded node gets 100; ignored nodes get 0."""
    if len(scores) == 0:
        return
    ignored = state.ignored_mask if len(state.ignored_mask) == len(scores) else np.zeros(len(scores), bool)
    valid = scores[~ignored]
    if valid.size == 0:
        scores[:] = 0
        return
    lowest, highest = int(valid.min()), int(valid.max())
    if highest == 0:
        scores[:] = MAX_NODE_SCORE
    else:
        scores[:] = MAX_NODE_SCORE * (highest + lowest - scores) // highest
    scores[ignored] = 0
