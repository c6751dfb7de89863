"""DoNotSchedule constraints: matching pods counted per domain once in PreFilter, skew checked per node.

Counts live in numpy arrays indexed by the domain ids of ``topology_columns``, so PreFilter is a
``bincount`` over the eligible nodes weighted by the pod index's per-node counts, the batch
Filter is one vector expression per constraint, and the per-node Filter (preemption's what-if
runs) is O(constraints). AddPod/RemovePod patch the counts of a cloned state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Node, Pod
from scheduler.framework import NodeLister, NodeTable, NodeVerdicts, Status
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    SpreadConstraint,
    node_has_all_keys,
    placed_matches,
    selector_matches,
)
from scheduler.plugins.topology_columns import DomainColumn, DomainColumns, lookup, per_slot

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_LABEL_MISSING = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
_SKEW_EXCEEDED = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
_STATUSES = [_LABEL_MISSING, _SKEW_EXCEEDED]


@dataclass(slots=True)
class PreFilterState:
    """Per constraint: matching pods per domain id, and which domains hold an eligible node."""

    pod: Pod
    required: RequiredNodeAffinity
    constraints: Sequence[SpreadConstraint]
    columns: list[DomainColumn]
    counts: list[np.ndarray] = field(default_factory=list)  # int64 per domain id
    present: list[np.ndarray] = field(default_factory=list)  # bool per domain id
    # per constraint: smallest count over its domains (None while it has no domain)
    minimums: list[int | None] = field(default_factory=list)
    num_domains: list[int] = field(default_factory=list)
    self_match: list[int] = field(default_factory=list)  # 1 when the pod matches its own selector

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.required,
            self.constraints,
            self.columns,
            [c.copy() for c in self.counts],
            [p.copy() for p in self.present],
            list(self.minimums),
            list(self.num_domains),
            self.self_match,
        )

    def global_minimum(self, i: int) -> int:
        """The skew baseline; 0 while fewer domains than minDomains exist (upstream's rule)."""
        minimum = self.minimums[i]
        if minimum is None or self.num_domains[i] < self.constraints[i].min_domains:
            return 0
        return minimum

    def count(self, i: int, value: str) -> int:
        domain = self.columns[i].id_of.get(value)
        counts = self.counts[i]
        return int(counts[domain]) if domain is not None and domain < len(counts) else 0

    def update_with_pod(self, other: Pod, node: Node, delta: int) -> None:
        """Account ``other`` being added (+1) to / removed (-1) from ``node`` (preemption what-ifs)."""
        if other.namespace != self.pod.namespace or not node_has_all_keys(node.labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not selector_matches(c.selector, other.labels):
                continue
            if not c.includes_node(self.pod, node, self.required):
                continue
            domain = self.columns[i].intern(node.labels[c.topology_key])
            if domain >= len(self.counts[i]):
                grow = domain + 1 - len(self.counts[i])
                self.counts[i] = np.concatenate([self.counts[i], np.zeros(grow, dtype=np.int64)])
                self.present[i] = np.concatenate([self.present[i], np.zeros(grow, dtype=bool)])
            self.counts[i][domain] += delta
            if not self.present[i][domain]:
                self.present[i][domain] = True
                self.num_domains[i] += 1
            self.minimums[i] = int(self.counts[i][self.present[i]].min())


def listed_slots(nodes: NodeLister) -> np.ndarray:
    """The table slots of the lister's nodes: its live rows when they are the same nodes."""
    table = nodes.table
    live = np.flatnonzero(table.valid)
    if len(live) == len(nodes):
        return live
    return np.fromiter((info.slot for info in nodes.node_infos()), dtype=np.int64, count=len(nodes))


def included(
    pod: Pod,
    required: RequiredNodeAffinity,
    c: SpreadConstraint,
    table: NodeTable,
    slots: np.ndarray,
    columns: DomainColumns,
) -> np.ndarray:
    """nodeAffinityPolicy / nodeTaintsPolicy for each of ``slots`` (all True when neither applies)."""
    admitted = np.ones(len(slots), dtype=bool)
    if c.honor_node_affinity and (required.labels or required.terms is not None):
        admitted &= columns.affinity(table, required)[slots]
    if c.honor_node_taints:
        infos = table.infos
        admitted &= np.fromiter(
            (c.includes_node(pod, infos[slot].node, required) for slot in slots.tolist()),
            dtype=bool,
            count=len(slots),
        )
    return admitted


def compute_pre_filter_state(
    pod: Pod,
    constraints: Sequence[SpreadConstraint],
    nodes: NodeLister,
    index: PodsByLabel,
    columns: DomainColumns,
) -> PreFilterState:
    """Counts per domain over the listed nodes carrying every constraint's key and admitted by its
    node inclusion policies: O(nodes) in numpy plus O(nodes holding matching pods) in Python."""
    table = nodes.table
    required = RequiredNodeAffinity.of(pod)
    cols = [columns.column(table, c.topology_key) for c in constraints]
    state = PreFilterState(pod, required, constraints, cols)
    slots = listed_slots(nodes)
    has_all = np.ones(len(slots), dtype=bool)
    for col in cols:
        has_all &= col.ids[slots] >= 0
    slots = slots[has_all]
    weights_of: dict[int, np.ndarray] = {}  # constraints sharing a selector share its counts
    for c, col in zip(constraints, cols, strict=True):
        members = slots[included(pod, required, c, table, slots, columns)]
        weights = weights_of.get(id(c.selector))
        if weights is None:
            matching = placed_matches(index, pod.namespace, c.selector)
            weights = weights_of[id(c.selector)] = per_slot(columns, table.capacity, matching)
        domains = col.ids[members]
        size = len(col.values)
        present = np.bincount(domains, minlength=size)[:size] > 0
        counts = np.bincount(domains, weights=weights[members], minlength=size)[:size].astype(np.int64)
        state.counts.append(counts)
        state.present.append(present)
        state.num_domains.append(int(present.sum()))
        state.minimums.append(int(counts[present].min()) if present.any() else None)
        state.self_match.append(1 if selector_matches(c.selector, pod.labels) else 0)
    return state


def check_node(state: PreFilterState, node: Node) -> Status | None:
    """Every constraint holds: ``matches in the node's domain + self match - global min <= maxSkew``."""
    labels = node.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return _LABEL_MISSING
        skew = state.count(i, value) + state.self_match[i] - state.global_minimum(i)
        if skew > c.max_skew:
            return _SKEW_EXCEEDED
    return None


def check_nodes(state: PreFilterState, slots: np.ndarray) -> NodeVerdicts | None:
    """:func:`check_node` for every slot at once (the state's columns refreshed against the
    slots' table); the first failing constraint names the reason."""
    rejected = np.zeros(len(slots), dtype=bool)
    status_ids = np.zeros(len(slots), dtype=np.int32)
    for i, c in enumerate(state.constraints):
        domains = state.columns[i].ids[slots]
        missing = domains < 0
        skew = lookup(state.counts[i], domains) + state.self_match[i] - state.global_minimum(i)
        exceeded = ~missing & (skew > c.max_skew) & ~rejected
        status_ids[exceeded] = 1
        rejected |= exceeded | missing
    if not rejected.any():
        return None
    return NodeVerdicts(rejected, status_ids, _STATUSES)
