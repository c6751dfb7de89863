"""Preferred pod (anti-)affinity, both directions, summed per topology pair once in PreScore.

Weights are added to an existing pod's topology pairs when the incoming pod's preferred terms
match it (+/-; those pods are found through the pod index by label), and, for pods with affinity
of their own, when their required affinity terms (hardPodAffinityWeight) or preferred terms (+/-)
match the incoming pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from scheduler.api import Node, Pod
from scheduler.framework import MAX_NODE_SCORE, NodeInfo
from scheduler.framework.interface import PodsByLabel
from scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, WeightedTerm, term_namespaces

# topologyKey -> value -> summed weight
TopologyScores = dict[str, dict[str, int]]


def _add(scores: TopologyScores, term: AffinityTerm, weight: int, node: Node) -> None:
    value = node.labels.get(term.topology_key)
    if value is not None:
        per_value = scores.setdefault(term.topology_key, {})
        per_value[value] = per_value.get(value, 0) + weight


def _add_weighted(
    scores: TopologyScores,
    terms: Iterable[WeightedTerm],
    pod: Pod,
    ns_labels: Mapping[str, str],
    node: Node,
    sign: int,
) -> None:
    for w in terms:
        if w.term.matches(pod, ns_labels):
            _add(scores, w.term, w.weight * sign, node)


def compute_topology_scores(
    pod: Pod,
    terms: PodTerms,
    namespace_labels: Callable[[str], Mapping[str, str]],
    terms_of: Callable[[Pod], PodTerms],
    lookup: Callable[[str], NodeInfo | None],
    index: PodsByLabel,
    nodes_with_affinity: Iterable[NodeInfo],
    hard_pod_affinity_weight: int,
) -> TopologyScores:
    scores: TopologyScores = {}
    known = index.namespaces()
    for sign, weighted_terms in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
        for w in weighted_terms:
            for existing in index.matching(term_namespaces(w.term, known, namespace_labels), w.term.selector):
                info = lookup(existing.node_name)
                if info is not None and info.node.labels:
                    _add(scores, w.term, w.weight * sign, info.node)
    own_ns_labels = namespace_labels(pod.namespace)
    for info in nodes_with_affinity:
        node = info.node
        if not node.labels:
            continue
        for existing in info.pods_with_affinity.values():
            theirs = terms_of(existing)
            if hard_pod_affinity_weight > 0:
                for t in theirs.required_affinity:
                    if t.matches(pod, own_ns_labels):
                        _add(scores, t, hard_pod_affinity_weight, node)
            _add_weighted(scores, theirs.preferred_affinity, pod, own_ns_labels, node, 1)
            _add_weighted(scores, theirs.preferred_anti_affinity, pod, own_ns_labels, node, -1)
    return scores


def score_node(scores: TopologyScores, node: Node) -> int:
    labels = node.labels
    total = 0
    for key, per_value in scores.items():
        value = labels.get(key)
        if value is not None:
            total += per_value.get(value, 0)
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
