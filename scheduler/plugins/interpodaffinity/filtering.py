"""Required pod (anti-)affinity: matches counted per topology pair once in PreFilter.

Three counters, keyed by (topologyKey, value): existing pods whose required anti-affinity
matches the incoming pod (symmetry; only nodes holding such pods are visited), and existing pods
matching the incoming pod's required affinity and anti-affinity terms (found through the pod
index by label, not by scanning every pod). Filter then only looks a node's labels up in them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api import Node, Pod
from scheduler.framework import NodeInfo, Status
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, matches_all, term_namespaces

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_AFFINITY_FAILED = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
_ANTI_AFFINITY_FAILED = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
_EXISTING_ANTI_AFFINITY_FAILED = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

TopologyCounts = dict[tuple[str, str], int]
NamespaceLabels = Callable[[str], Mapping[str, str]]


def _bump(counts: TopologyCounts, node: Node, key: str, delta: int) -> None:
    value = node.labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + delta
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)  # emptiness matters: see satisfies_affinity


def add_affinity_matches(
    counts: TopologyCounts,
    terms: Sequence[AffinityTerm],
    pod: Pod,
    ns_labels: Mapping[str, str],
    node: Node,
    delta: int,
) -> None:
    """Affinity needs one pod matching *all* terms: count it once per term's topology pair."""
    if matches_all(terms, pod, ns_labels):
        for t in terms:
            _bump(counts, node, t.topology_key, delta)


def add_anti_affinity_matches(
    counts: TopologyCounts,
    terms: Sequence[AffinityTerm],
    pod: Pod,
    ns_labels: Mapping[str, str],
    node: Node,
    delta: int,
) -> None:
    for t in terms:
        if t.matches(pod, ns_labels):
            _bump(counts, node, t.topology_key, delta)


@dataclass(slots=True)
class PreFilterState:
    pod: Pod
    terms: PodTerms
    namespace_labels: Mapping[str, str]
    existing_anti_affinity: TopologyCounts = field(default_factory=dict)
    affinity: TopologyCounts = field(default_factory=dict)
    anti_affinity: TopologyCounts = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.terms,
            self.namespace_labels,
            dict(self.existing_anti_affinity),
            dict(self.affinity),
            dict(self.anti_affinity),
        )

    def update_with_pod(
        self, other: Pod, other_terms: PodTerms, other_ns_labels: Mapping[str, str], node: Node, delta: int
    ) -> None:
        """Account ``other`` being added to / removed from ``node`` (preemption what-ifs)."""
        add_anti_affinity_matches(
            self.existing_anti_affinity,
            other_terms.required_anti_affinity,
            self.pod,
            self.namespace_labels,
            node,
            delta,
        )
        add_affinity_matches(self.affinity, self.terms.required_affinity, other, other_ns_labels, node, delta)
        add_anti_affinity_matches(
            self.anti_affinity, self.terms.required_anti_affinity, other, other_ns_labels, node, delta
        )


def compute_pre_filter_state(
    pod: Pod,
    terms: PodTerms,
    namespace_labels: NamespaceLabels,
    terms_of: Callable[[Pod], PodTerms],
    lookup: Callable[[str], NodeInfo | None],
    nodes_with_required_anti_affinity: Sequence[NodeInfo],
    index: PodsByLabel,
) -> PreFilterState:
    """Existing pods matching the incoming pod's terms come from ``index`` (placed pods by label);
    ``lookup`` finds their nodes (a pod on a node it does not know is not counted)."""
    own_ns_labels = namespace_labels(pod.namespace)
    state = PreFilterState(pod, terms, own_ns_labels)
    for info in nodes_with_required_anti_affinity:
        node = info.node
        for existing in info.pods_with_required_anti_affinity.values():
            add_anti_affinity_matches(
                state.existing_anti_affinity,
                terms_of(existing).required_anti_affinity,
                pod,
                own_ns_labels,
                node,
                1,
            )
    known = index.namespaces()
    if terms.required_affinity:
        # A pod must match every term: the first term's matches are the only candidates.
        first = terms.required_affinity[0]
        for existing in index.matching(term_namespaces(first, known, namespace_labels), first.selector):
            info = lookup(existing.node_name)
            if info is not None:
                ns_labels = namespace_labels(existing.namespace)
                add_affinity_matches(
                    state.affinity, terms.required_affinity, existing, ns_labels, info.node, 1
                )
    for t in terms.required_anti_affinity:
        for existing in index.matching(term_namespaces(t, known, namespace_labels), t.selector):
            info = lookup(existing.node_name)
            if info is not None:
                _bump(state.anti_affinity, info.node, t.topology_key, 1)
    return state


def satisfies_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in state.terms.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False  # the node must carry every topology key
        if state.affinity.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: allowed when no pod anywhere matches yet.
    return not state.affinity and matches_all(
        state.terms.required_affinity, state.pod, state.namespace_labels
    )


def satisfies_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    if not state.anti_affinity:
        return True
    for t in state.terms.required_anti_affinity:
        value = labels.get(t.topology_key)
        if value is not None and state.anti_affinity.get((t.topology_key, value), 0) > 0:
            return False
    return True


def satisfies_existing_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti_affinity
    if not counts:
        return True
    return not any(counts.get(pair, 0) > 0 for pair in labels.items())


def check_node(state: PreFilterState, node: Node) -> Status | None:
    labels = node.labels
    if not satisfies_affinity(state, labels):
        return _AFFINITY_FAILED
    if not satisfies_anti_affinity(state, labels):
        return _ANTI_AFFINITY_FAILED
    if not satisfies_existing_anti_affinity(state, labels):
        return _EXISTING_ANTI_AFFINITY_FAILED
    return None
