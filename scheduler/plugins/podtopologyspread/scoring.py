"""ScheduleAnyway constraints: fewer matching pods in a node's domains scores higher.

Counts per non-hostname domain are gathered once in PreScore from the pod index's per-node counts
(visiting only nodes that hold matching pods) into arrays indexed by domain id; per-host counts
are those per-node counts as is. Domain sizes weight the counts (log(size + 2)) so a small
topology (zones) is not drowned by a big one (hosts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Pod
from scheduler.framework import MAX_NODE_SCORE, NodeInfo, NodeTable
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SpreadConstraint,
    node_has_all_keys,
    placed_matches,
)
from scheduler.plugins.podtopologyspread.filtering import included
from scheduler.plugins.topology_columns import DomainColumn, DomainColumns, lookup, per_slot


@dataclass(slots=True)
class PreScoreState:
    constraints: Sequence[SpreadConstraint]
    columns: list[DomainColumn] = field(default_factory=list)
    # slots of candidate nodes lacking some topology key: they score 0 after normalising
    ignored: frozenset[int] = frozenset()
    # aligned with the candidate list PreScore saw (the order NormalizeScore gets scores in)
    ignored_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    counts: list[np.ndarray] = field(default_factory=list)  # per constraint: per domain id
    # per constraint: matching pods per node name (read for hostname constraints only)
    node_counts: list[Mapping[str, int]] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def compute_pre_score_state(
    pod: Pod,
    constraints: Sequence[SpreadConstraint],
    candidates: Sequence[NodeInfo],
    table: NodeTable | None,
    lookup_node: Callable[[str], NodeInfo | None],
    index: PodsByLabel,
    require_all_topologies: bool,
    columns: DomainColumns,
) -> PreScoreState:
    """``lookup_node`` finds any node of the cluster by name (not only candidates); ``table`` is
    the candidates' table, or None when they were given without one."""
    cols = [columns.key(c.topology_key) for c in constraints]
    state = PreScoreState(constraints, cols)
    slots = np.fromiter((info.slot for info in candidates), dtype=np.int64, count=len(candidates))
    if table is not None:
        columns.refresh(table)
    candidate_ids = [col.ids[slots] if table is not None else col.ids_of(candidates) for col in cols]
    ignored = np.zeros(len(slots), dtype=bool)
    if require_all_topologies:
        for ids in candidate_ids:
            ignored |= ids < 0
    state.ignored_mask = ignored
    state.ignored = frozenset(slots[ignored].tolist())
    num_scored = int((~ignored).sum())

    required = RequiredNodeAffinity.of(pod)
    has_all = None  # per slot: the node carries every constraint's key (None: no such requirement)
    if table is not None and require_all_topologies:
        has_all = np.logical_and.reduce([col.ids >= 0 for col in cols])
    for c, col, ids in zip(constraints, cols, candidate_ids, strict=True):
        matching = placed_matches(index, pod.namespace, c.selector)
        state.node_counts.append(matching)
        if c.topology_key == LABEL_HOSTNAME:  # per-host counts are read in Score
            state.weights.append(topology_normalizing_weight(num_scored))
            state.counts.append(np.zeros(0, dtype=np.int64))
            continue
        # Domains of the scored candidates; a candidate without the key forms the "" domain.
        scored = ids[~ignored]
        domains = np.unique(np.where(scored < 0, col.intern(""), scored))
        state.weights.append(topology_normalizing_weight(len(domains)))
        if table is not None:
            counts = _count_in_table(pod, required, c, col, table, matching, columns, has_all)
        else:
            counts = _count_by_lookup(
                pod, required, c, col, constraints, lookup_node, matching, require_all_topologies
            )
        # only domains some candidate belongs to are ever read; zero the rest for clarity
        keep = np.zeros(len(counts), dtype=bool)
        keep[domains] = True
        counts[~keep] = 0
        state.counts.append(counts)
    return state


def _count_in_table(
    pod: Pod,
    required: RequiredNodeAffinity,
    c: SpreadConstraint,
    col: DomainColumn,
    table: NodeTable,
    matching: Mapping[str, int],
    columns: DomainColumns,
    has_all: np.ndarray | None,
) -> np.ndarray:
    """Matching pods per domain over the table's nodes (a missing key counts in the "" domain)."""
    weights = per_slot(columns, table.capacity, matching)
    hit = np.flatnonzero(weights)
    if has_all is not None:
        hit = hit[has_all[hit]]
    hit = hit[included(pod, required, c, table, hit, columns)]
    domains = col.ids[hit]
    domains = np.where(domains < 0, col.intern(""), domains)
    size = len(col.values)
    return np.bincount(domains, weights=weights[hit], minlength=size)[:size].astype(np.int64)


def _count_by_lookup(
    pod: Pod,
    required: RequiredNodeAffinity,
    c: SpreadConstraint,
    col: DomainColumn,
    constraints: Sequence[SpreadConstraint],
    lookup_node: Callable[[str], NodeInfo | None],
    matching: Mapping[str, int],
    require_all: bool,
) -> np.ndarray:
    """:func:`_count_in_table` for nodes found by name, without a table."""
    domains: list[int] = []
    found_there: list[int] = []
    for node_name, found in matching.items():
        info = lookup_node(node_name)
        if info is None:
            continue
        node = info.node
        if require_all and not node_has_all_keys(node.labels, constraints):
            continue
        if c.includes_node(pod, node, required):
            domains.append(col.intern(node.labels.get(c.topology_key, "")))
            found_there.append(found)
    counts = np.zeros(len(col.values), dtype=np.int64)
    np.add.at(counts, np.array(domains, dtype=np.int64), np.array(found_there, dtype=np.int64))
    return counts


def score_node(state: PreScoreState, pod: Pod, info: NodeInfo) -> int:
    if info.slot in state.ignored:
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
            domain = state.columns[i].id_of.get(value)
            counts = state.counts[i]
            count = int(counts[domain]) if domain is not None and domain < len(counts) else 0
        total += count * state.weights[i] + (c.max_skew - 1)
    return math.floor(total + 0.5)  # Go's math.Round on a non-negative value


def score_nodes(
    state: PreScoreState, table: NodeTable, slots: np.ndarray, columns: DomainColumns
) -> np.ndarray:
    """:func:`score_node` for every slot at once (same float operations, same order);
    ``columns`` (whose columns the state holds) must be refreshed against ``table``."""
    total = np.zeros(len(slots), dtype=np.float64)
    for i, c in enumerate(state.constraints):
        domains = state.columns[i].ids[slots]
        has_key = domains >= 0
        if c.topology_key == LABEL_HOSTNAME:
            counts = per_slot(columns, table.capacity, state.node_counts[i])[slots]
        else:
            counts = lookup(state.counts[i], domains)
        total = np.where(has_key, total + (counts * state.weights[i] + float(c.max_skew - 1)), total)
    scores = np.floor(total + 0.5).astype(np.int64)
    if state.ignored:
        scores[np.isin(slots, np.fromiter(state.ignored, dtype=np.int64))] = 0
    return scores


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
