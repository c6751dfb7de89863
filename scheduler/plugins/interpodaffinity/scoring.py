"""Preferred pod (anti-)affinity, both directions, summed per topology domain once in PreScore.

Weights are added to the domains of existing pods matching the incoming pod's preferred terms
(+/-; per-slot tallies kept from the pod index and the table's change log), and, for pods with
affinity of their own, of those whose required affinity terms (hardPodAffinityWeight) or
preferred terms (+/-) match the incoming pod (each distinct term matched once, see counting.py).
Per topology key the sums are an int64 array over domain ids, so Score is a lookup per key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Node, Pod
from scheduler.framework import MAX_NODE_SCORE, NodeTable
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.interpodaffinity.counting import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI_AFFINITY,
    REQUIRED_AFFINITY,
    ExistingTerms,
    PlacedMatches,
    add_to,
)
from scheduler.plugins.interpodaffinity.filtering import conditions_of
from scheduler.plugins.interpodaffinity.terms import PodTerms
from scheduler.plugins.topology_columns import DomainColumns, by_domain, lookup


@dataclass(slots=True)
class TopologyScores:
    """Summed weight per domain id, per topology key."""

    columns: DomainColumns
    per_key: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, key: str, counts: np.ndarray, weight: int) -> bool:
        """Add ``weight`` per matching pod; False when no pod lies in any domain of ``key``."""
        if not counts.any():
            return False
        add_to(self.per_key, key, counts * weight)
        return True


def compute_topology_scores(
    pod: Pod,
    terms: PodTerms,
    namespace_labels: Callable[[str], Mapping[str, str]],
    table: NodeTable,
    columns: DomainColumns,
    existing: ExistingTerms,
    placed: PlacedMatches,
    index: PodsByLabel,
    hard_pod_affinity_weight: int,
) -> TopologyScores | None:
    """Scores over the pods of ``table``'s nodes; None when no term matched a pod on a node with
    its topology key. Raises SelectorError for an invalid term of a placed pod with affinity."""
    columns.refresh(table)
    existing.refresh(table)
    error = existing.first_error(required_anti_only=False)
    if error is not None:
        raise error
    scores = TopologyScores(columns)
    touched = False
    known = index.namespaces()
    for sign, weighted_terms in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
        for w in weighted_terms:
            conditions = conditions_of((w.term,), known, namespace_labels)
            if conditions is None:
                continue
            per_slot = placed.per_slot(table, conditions, index, columns.slot_of)
            key = w.term.topology_key
            touched |= scores.add(key, by_domain(columns.key(key), per_slot), w.weight * sign)
    own_ns_labels = namespace_labels(pod.namespace)
    theirs = [(PREFERRED_AFFINITY, 1), (PREFERRED_ANTI_AFFINITY, -1)]
    if hard_pod_affinity_weight > 0:
        theirs.insert(0, (REQUIRED_AFFINITY, 1))
    for kind, sign in theirs:
        for t, weight, counts in existing.terms(kind):
            if t.matches(pod, own_ns_labels):
                key = t.topology_key
                weight = hard_pod_affinity_weight if kind == REQUIRED_AFFINITY else weight
                touched |= scores.add(key, counts.by_domain(columns.key(key)), weight * sign)
    return scores if touched else None


def score_node(scores: TopologyScores, node: Node) -> int:
    labels = node.labels
    total = 0
    for key, per_domain in scores.per_key.items():
        value = labels.get(key)
        if value is None:
            continue
        domain = scores.columns.key(key).id_of.get(value)
        if domain is not None and domain < len(per_domain):
            total += int(per_domain[domain])
    return total


def score_nodes(scores: TopologyScores, slots: np.ndarray) -> np.ndarray:
    """:func:`score_node` for every slot at once (the columns refreshed against the slots' table)."""
    total = np.zeros(len(slots), dtype=np.int64)
    for key, per_domain in scores.per_key.items():
        total += lookup(per_domain, scores.columns.key(key).ids[slots])
    return total


def normalize(scores: np.ndarray) -> None:
    """Min-max scale into [0, 100] (float math truncated, as upstream); all equal gives 0."""
    if len(scores) == 0:
        return
    lowest, highest = int(scores.min()), int(scores.max())
    spread = highest - lowest
    if spread <= 0:
        scores[:] = 0
        return
    scaled = float(MAX_NODE_SCORE) * ((scores - lowest).astype(np.float64) / float(spread))
    scores[:] = scaled.astype(np.int64)
