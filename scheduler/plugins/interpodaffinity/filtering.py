"""Required pod (anti-)affinity: matches counted per topology domain once in PreFilter.

Three counters, per topology key an int64 array indexed by the domain ids of
``topology_columns``: existing pods whose required anti-affinity matches the incoming pod
(symmetry; each distinct term of the placed pods is matched once, see counting.py), and existing
pods matching the incoming pod's required affinity and anti-affinity terms (per-slot tallies kept
from the pod index and the table's change log). Filter then looks a node's domains up in them:
per node for preemption's what-if runs (AddPod/RemovePod patch a cloned state), or for a whole
vector of slots at once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Node, Pod
from scheduler.framework import NodeTable, NodeVerdicts, Status
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.interpodaffinity.counting import (
    REQUIRED_ANTI_AFFINITY,
    Condition,
    ExistingTerms,
    PlacedMatches,
    add_to,
    padded,
)
from scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, matches_all, term_namespaces
from scheduler.plugins.topology_columns import DomainColumns, by_domain, lookup

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_AFFINITY_FAILED = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
_ANTI_AFFINITY_FAILED = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
_EXISTING_ANTI_AFFINITY_FAILED = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
_STATUSES = [_AFFINITY_FAILED, _ANTI_AFFINITY_FAILED, _EXISTING_ANTI_AFFINITY_FAILED]

# topologyKey -> matching pods per domain id
DomainCounts = dict[str, np.ndarray]
NamespaceLabels = Callable[[str], Mapping[str, str]]


@dataclass(slots=True)
class PreFilterState:
    pod: Pod
    terms: PodTerms
    namespace_labels: Mapping[str, str]
    columns: DomainColumns
    existing_anti_affinity: DomainCounts = field(default_factory=dict)
    affinity: DomainCounts = field(default_factory=dict)
    anti_affinity: DomainCounts = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        """A copy sharing the count arrays: :meth:`_bump` replaces an array rather than writing
        into it, so preemption's many dry runs (one clone per candidate node) copy only what they
        change."""
        return PreFilterState(
            self.pod,
            self.terms,
            self.namespace_labels,
            self.columns,
            dict(self.existing_anti_affinity),
            dict(self.affinity),
            dict(self.anti_affinity),
        )

    def count(self, counts: DomainCounts, key: str, value: str) -> int:
        array = counts.get(key)
        if array is None:
            return 0
        domain = self.columns.key(key).id_of.get(value)
        return int(array[domain]) if domain is not None and domain < len(array) else 0

    def _bump(self, counts: DomainCounts, node: Node, key: str, delta: int) -> None:
        value = node.labels.get(key)
        if value is None:
            return
        domain = self.columns.key(key).intern(value)
        found = counts.get(key)
        array = np.zeros(domain + 1, dtype=np.int64) if found is None else padded(found, domain + 1)
        if array is found:
            array = found.copy()  # clones may share it
        array[domain] += delta
        counts[key] = array

    def update_with_pod(
        self, other: Pod, other_terms: PodTerms, other_ns_labels: Mapping[str, str], node: Node, delta: int
    ) -> None:
        """Account ``other`` being added to / removed from ``node`` (preemption what-ifs)."""
        for t in other_terms.required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                self._bump(self.existing_anti_affinity, node, t.topology_key, delta)
        if matches_all(self.terms.required_affinity, other, other_ns_labels):
            for t in self.terms.required_affinity:
                self._bump(self.affinity, node, t.topology_key, delta)
        for t in self.terms.required_anti_affinity:
            if t.matches(other, other_ns_labels):
                self._bump(self.anti_affinity, node, t.topology_key, delta)

    def no_affinity_match(self) -> bool:
        """No placed pod anywhere matches all the required affinity terms."""
        return not any(array.any() for array in self.affinity.values())

    def may_start_group(self) -> bool:
        """The first pod of a group with affinity to itself: allowed while no pod matches yet."""
        return self.no_affinity_match() and matches_all(
            self.terms.required_affinity, self.pod, self.namespace_labels
        )


def conditions_of(
    terms: Sequence[AffinityTerm], known: Collection[str], namespace_labels: NamespaceLabels
) -> tuple[Condition, ...] | None:
    """The terms as conditions on placed pods (all must hold); None when they match no pod."""
    conditions = []
    for t in terms:
        if t.selector is None:
            return None  # a term without a selector matches no pod
        namespaces = term_namespaces(t, known, namespace_labels)
        conditions.append((None if namespaces is None else frozenset(namespaces), t.selector))
    return tuple(conditions)


def compute_pre_filter_state(
    pod: Pod,
    terms: PodTerms,
    namespace_labels: NamespaceLabels,
    table: NodeTable,
    columns: DomainColumns,
    existing: ExistingTerms,
    placed: PlacedMatches,
    index: PodsByLabel,
) -> PreFilterState:
    """Counts over the nodes of ``table`` (a pod on a node it does not hold is not counted);
    raises SelectorError for an invalid term of a placed pod with required anti-affinity."""
    columns.refresh(table)
    existing.refresh(table)
    error = existing.first_error(required_anti_only=True)
    if error is not None:
        raise error
    own_ns_labels = namespace_labels(pod.namespace)
    state = PreFilterState(pod, terms, own_ns_labels, columns)
    for t, _, counts in existing.terms(REQUIRED_ANTI_AFFINITY):
        if t.matches(pod, own_ns_labels):
            add_to(
                state.existing_anti_affinity, t.topology_key, counts.by_domain(columns.key(t.topology_key))
            )
    known = index.namespaces()
    if terms.required_affinity:
        # A pod must match every term: one tally of the pods matching all of them.
        conditions = conditions_of(terms.required_affinity, known, namespace_labels)
        if conditions is not None:
            per_slot = placed.per_slot(table, conditions, index, columns.slot_of)
            for t in terms.required_affinity:
                add_to(state.affinity, t.topology_key, by_domain(columns.key(t.topology_key), per_slot))
    for t in terms.required_anti_affinity:
        conditions = conditions_of((t,), known, namespace_labels)
        if conditions is not None:
            per_slot = placed.per_slot(table, conditions, index, columns.slot_of)
            add_to(state.anti_affinity, t.topology_key, by_domain(columns.key(t.topology_key), per_slot))
    return state


def satisfies_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in state.terms.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False  # the node must carry every topology key
        if state.count(state.affinity, t.topology_key, value) <= 0:
            pods_exist = False
    return pods_exist or state.may_start_group()


def satisfies_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    for t in state.terms.required_anti_affinity:
        value = labels.get(t.topology_key)
        if value is not None and state.count(state.anti_affinity, t.topology_key, value) > 0:
            return False
    return True


def satisfies_existing_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    for key in state.existing_anti_affinity:
        value = labels.get(key)
        if value is not None and state.count(state.existing_anti_affinity, key, value) > 0:
            return False
    return True


def check_node(state: PreFilterState, node: Node) -> Status | None:
    labels = node.labels
    if not satisfies_affinity(state, labels):
        return _AFFINITY_FAILED
    if not satisfies_anti_affinity(state, labels):
        return _ANTI_AFFINITY_FAILED
    if not satisfies_existing_anti_affinity(state, labels):
        return _EXISTING_ANTI_AFFINITY_FAILED
    return None


def check_nodes(state: PreFilterState, slots: np.ndarray) -> NodeVerdicts | None:
    """:func:`check_node` for every slot at once (the state's columns refreshed against the
    slots' table); the first failing check names the reason."""
    columns = state.columns
    # affinity: every key present, and either matching pods in every domain or a new group
    affinity_failed = np.zeros(len(slots), dtype=bool)
    if state.terms.required_affinity:
        missing = np.zeros(len(slots), dtype=bool)
        pods_exist = np.ones(len(slots), dtype=bool)
        for t in state.terms.required_affinity:
            domains = columns.key(t.topology_key).ids[slots]
            missing |= domains < 0
            pods_exist &= lookup(state.affinity.get(t.topology_key, _NONE), domains) > 0
        affinity_failed = missing if state.may_start_group() else missing | ~pods_exist
    anti_failed = np.zeros(len(slots), dtype=bool)
    for t in state.terms.required_anti_affinity:
        counts = state.anti_affinity.get(t.topology_key, _NONE)
        anti_failed |= lookup(counts, columns.key(t.topology_key).ids[slots]) > 0
    existing_failed = np.zeros(len(slots), dtype=bool)
    for key, counts in state.existing_anti_affinity.items():
        if counts.any():
            existing_failed |= lookup(counts, columns.key(key).ids[slots]) > 0
    rejected = affinity_failed | anti_failed | existing_failed
    if not rejected.any():
        return None
    status_ids = np.where(affinity_failed, 0, np.where(anti_failed, 1, 2)).astype(np.int32)
    return NodeVerdicts(rejected, status_ids, _STATUSES)


_NONE = np.zeros(0, dtype=np.int64)
