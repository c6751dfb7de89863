"""DoNotSchedule constraints: matching pods counted per domain once in PreFilter, skew checked per node.

The Filter check is O(constraints) per node: the per-domain counts and each constraint's global
minimum are computed once per cycle (and patched by AddPod/RemovePod during preemption).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api import Node, Pod
from scheduler.framework import NodeInfo, Status
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    SpreadConstraint,
    count_matching,
    node_has_all_keys,
    selector_matches,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_LABEL_MISSING = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
_SKEW_EXCEEDED = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


@dataclass(slots=True)
class PreFilterState:
    """Per constraint: matching pods per topology value (every eligible domain present, maybe 0)."""

    pod: Pod
    required: RequiredNodeAffinity
    constraints: Sequence[SpreadConstraint]
    counts: list[dict[str, int]] = field(default_factory=list)
    # per constraint: smallest count over its domains (None while it has no domain)
    minimums: list[int | None] = field(default_factory=list)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod, self.required, self.constraints, [dict(c) for c in self.counts], list(self.minimums)
        )

    def global_minimum(self, i: int) -> int:
        """The skew baseline; 0 while fewer domains than minDomains exist (upstream's rule)."""
        minimum = self.minimums[i]
        if minimum is None or len(self.counts[i]) < self.constraints[i].min_domains:
            return 0
        return minimum

    def update_with_pod(self, other: Pod, node: Node, delta: int) -> None:
        """Account ``other`` being added (+1) to / removed (-1) from ``node`` (preemption what-ifs)."""
        if other.namespace != self.pod.namespace or not node_has_all_keys(node.labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not selector_matches(c.selector, other.labels):
                continue
            if not c.includes_node(self.pod, node, self.required):
                continue
            value = node.labels[c.topology_key]
            counts = self.counts[i]
            counts[value] = counts.get(value, 0) + delta
            self.minimums[i] = min(counts.values())


def compute_pre_filter_state(
    pod: Pod, constraints: Sequence[SpreadConstraint], nodes: Sequence[NodeInfo]
) -> PreFilterState:
    required = RequiredNodeAffinity.of(pod)
    state = PreFilterState(pod, required, constraints)
    state.counts = [{} for _ in constraints]
    namespace = pod.namespace
    for info in nodes:
        node = info.node
        labels = node.labels
        if not node_has_all_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not c.includes_node(pod, node, required):
                continue
            value = labels[c.topology_key]
            counts = state.counts[i]
            counts[value] = counts.get(value, 0) + count_matching(info.pods.values(), c.selector, namespace)
    state.minimums = [min(c.values()) if c else None for c in state.counts]
    return state


def check_node(state: PreFilterState, pod: Pod, node: Node) -> Status | None:
    """Every constraint holds: ``matches in the node's domain + self match - global min <= maxSkew``."""
    labels = node.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return _LABEL_MISSING
        self_match = 1 if selector_matches(c.selector, pod.labels) else 0
        skew = state.counts[i].get(value, 0) + self_match - state.global_minimum(i)
        if skew > c.max_skew:
            return _SKEW_EXCEEDED
    return None
