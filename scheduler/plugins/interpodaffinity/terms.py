"""Pod (anti-)affinity terms compiled once per pod and matched against other pods.

Namespace rules follow upstream: a term with neither ``namespaces`` nor ``namespaceSelector``
means the owning pod's namespace; a ``namespaceSelector`` of ``{}`` means every namespace; a
missing ``labelSelector`` matches no pod. ``matchLabelKeys`` / ``mismatchLabelKeys`` are left
alone, as upstream's scheduler does: the API server folds them into ``labelSelector`` when it
creates the pod, with the label values the pod had then.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api import LabelSelector, Pod

# Every namespace carries this label (set by the API server), so it is known without a lister.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(slots=True, frozen=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector | None
    topology_key: str
    namespace_selector: LabelSelector | None

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """Does ``pod`` (whose namespace carries ``namespace_labels``) fall under this term?"""
        if pod.namespace not in self.namespaces and not (
            self.namespace_selector is not None and self.namespace_selector.matches(namespace_labels)
        ):
            return False
        return self.selector is not None and self.selector.matches(pod.labels)


@dataclass(slots=True, frozen=True)
class WeightedTerm:
    weight: int
    term: AffinityTerm


@dataclass(slots=True, frozen=True)
class PodTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


def parse_term(pod: Pod, term: Mapping[str, Any]) -> AffinityTerm:
    """One v1.PodAffinityTerm of ``pod``; raises SelectorError when a selector is invalid."""
    selector = LabelSelector.parse(term.get("labelSelector"))
    raw_namespaces = term.get("namespaces") or ()
    raw_ns_selector = term.get("namespaceSelector")
    if not raw_namespaces and raw_ns_selector is None:
        namespaces = frozenset({pod.namespace})
    else:
        namespaces = frozenset(str(n) for n in raw_namespaces)
    return AffinityTerm(
        namespaces=namespaces,
        selector=selector,
        topology_key=str(term.get("topologyKey") or ""),
        namespace_selector=LabelSelector.parse(raw_ns_selector),
    )


def _required(pod: Pod, section: Mapping[str, Any]) -> tuple[AffinityTerm, ...]:
    return tuple(
        parse_term(pod, t) for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    )


def _preferred(pod: Pod, section: Mapping[str, Any]) -> tuple[WeightedTerm, ...]:
    return tuple(
        WeightedTerm(int(t.get("weight") or 0), parse_term(pod, t.get("podAffinityTerm") or {}))
        for t in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )


_NO_TERMS = PodTerms()


def parse_pod_terms(pod: Pod) -> PodTerms:
    affinity = pod.affinity or {}
    pod_affinity = affinity.get("podAffinity") or {}
    anti = affinity.get("podAntiAffinity") or {}
    if not pod_affinity and not anti:
        return _NO_TERMS
    return PodTerms(
        _required(pod, pod_affinity),
        _required(pod, anti),
        _preferred(pod, pod_affinity),
        _preferred(pod, anti),
    )


class TermsCache:
    """Parsed terms of existing pods, reused across cycles.

    Pod views are immutable and replaced on every update, so an entry is valid while it holds
    the very same object; the cache is dropped wholesale when it grows past ``limit``.
    """

    __slots__ = ("_entries", "_limit")

    def __init__(self, limit: int = 65536) -> None:
        self._entries: dict[str, tuple[Pod, PodTerms]] = {}
        self._limit = limit

    def terms(self, pod: Pod) -> PodTerms:
        entry = self._entries.get(pod.uid)
        if entry is not None and entry[0] is pod:
            return entry[1]
        terms = parse_pod_terms(pod)
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[pod.uid] = (pod, terms)
        return terms


def matches_all(terms: Sequence[AffinityTerm], pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
    """True iff there are terms and ``pod`` matches every one (upstream's podMatchesAllAffinityTerms)."""
    return bool(terms) and all(t.matches(pod, namespace_labels) for t in terms)


def term_namespaces(
    term: AffinityTerm, known: Collection[str], namespace_labels: Callable[[str], Mapping[str, str]]
) -> Collection[str] | None:
    """The namespaces (among ``known``) whose pods ``term`` may select; ``None`` means all.

    Upstream resolves a namespaceSelector into namespace names the same way before matching.
    """
    selector = term.namespace_selector
    if selector is None:
        return term.namespaces
    if selector.is_empty:
        return None
    return term.namespaces | {ns for ns in known if selector.matches(namespace_labels(ns))}
