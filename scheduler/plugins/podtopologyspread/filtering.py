"""DoNotSchedule constraints: matching pods counted per domain once in PreFilter, skew checked per node.

The Filter check is O(constraints) per node: the per-domain counts and each constraint's global
minimum are computed once per cycle from the pod index's per-node counts (and patched by
AddPod/RemovePod during preemption).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scheduler.api import Node, Pod
from scheduler.framework import NodeInfo, Status
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    SpreadConstraint,
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


def eligible_domains(
    pod: Pod,
    required: RequiredNodeAffinity,
    constraints: Sequence[SpreadConstraint],
    nodes: Iterable[NodeInfo],
) -> list[dict[str, str]]:
    """Per constraint: node name -> its domain, for every node counting as a member of one."""
    domains: list[dict[str, str]] = [{} for _ in constraints]
    keys = tuple(c.topology_key for c in constraints)
    no_affinity = not required.labels and required.terms is None
    # Constraints whose policies admit every node skip the per-node check (the common case).
    checked = [not (no_affinity or not c.honor_node_affinity) or c.honor_node_taints for c in constraints]
    plan = list(zip(keys, domains, checked, constraints, strict=True))
    for info in nodes:
        node = info.node
        labels = node.labels
        if not all(key in labels for key in keys):
            continue
        name = info.name
        for key, domain_of, check, c in plan:
            if not check or c.includes_node(pod, node, required):
                domain_of[name] = labels[key]
    return domains


def compute_pre_filter_state(
    pod: Pod, constraints: Sequence[SpreadConstraint], nodes: Sequence[NodeInfo], index: PodsByLabel
) -> PreFilterState:
    """Counts per domain from the index's per-node counts: O(nodes + nodes with matching pods)."""
    required = RequiredNodeAffinity.of(pod)
    state = PreFilterState(pod, required, constraints)
    for c, domain_of in zip(constraints, eligible_domains(pod, required, constraints, nodes), strict=True):
        counts = dict.fromkeys(domain_of.values(), 0)
        for node_name, matching in index.count_by_node(pod.namespace, c.selector).items():
            value = domain_of.get(node_name)
            if value is not None:
                counts[value] += matching
        state.counts.append(counts)
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
