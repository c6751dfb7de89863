"""ScheduleAnyway constraints: fewer matching pods in a node's domains scores higher.

Counts per non-hostname domain are gathered once in PreScore over all nodes; per-host counts are
read from the scored node itself in Score. Domain sizes weight the counts (log(size + 2)) so a
small topology (zones) is not drowned by a big one (hosts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Pod
from scheduler.framework import MAX_NODE_SCORE, NodeInfo
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SpreadConstraint,
    count_matching,
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
    weights: list[float] = field(default_factory=list)


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def compute_pre_score_state(
    pod: Pod,
    constraints: Sequence[SpreadConstraint],
    candidates: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    require_all_topologies: bool,
) -> PreScoreState:
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
            if c.topology_key != LABEL_HOSTNAME:  # per-host counts are taken in Score
                state.counts[i].setdefault(labels.get(c.topology_key, ""), 0)
    state.ignored_mask = mask
    scored = len(candidates) - len(state.ignored)
    state.weights = [
        topology_normalizing_weight(scored if c.topology_key == LABEL_HOSTNAME else len(state.counts[i]))
        for i, c in enumerate(constraints)
    ]

    required = RequiredNodeAffinity.of(pod)
    namespace = pod.namespace
    for info in all_nodes:
        node = info.node
        labels = node.labels
        if require_all_topologies and not node_has_all_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            counts = state.counts[i]
            value = labels.get(c.topology_key, "")
            # only domains some candidate belongs to matter (hostname domains are never listed)
            if value not in counts or not c.includes_node(pod, node, required):
                continue
            counts[value] += count_matching(info.pods.values(), c.selector, namespace)
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
            count = count_matching(info.pods.values(), c.selector, pod.namespace)
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
