"""NodeAffinity: ``spec.nodeSelector`` and required node affinity filter, preferred terms score.

The profile's ``addedAffinity`` applies to every pod on top of its own rules. Selectors are
compiled once per pod in PreFilter/PreScore; a pod with nothing to check skips the filter.
The batch forms memoise each node's answer per selector (pods of one workload share theirs)
until the node's labels may have changed, so a cycle matches labels only on changed nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Node, NodeSelectorTerm, Pod, SelectorError
from scheduler.api.selectors import PreferredTerm, parse_preferred_terms
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeLister,
    NodeTable,
    NodeVerdicts,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)
from scheduler.framework.interface import NODE
from scheduler.plugins import names
from scheduler.plugins.helper import NodeMemo, default_normalize_score, per_node

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_PRE_FILTER_KEY = "PreFilter" + names.NODE_AFFINITY
_PRE_SCORE_KEY = "PreScore" + names.NODE_AFFINITY
_POD_MISMATCH = Status.unresolvable(ERR_REASON_POD)
_ENFORCED_MISMATCH = Status.unresolvable(ERR_REASON_ENFORCED)


def _parse_terms_leniently(terms: Sequence[Mapping]) -> tuple[tuple[NodeSelectorTerm, ...], bool]:
    """The terms that parse, and whether any did not. A term that fails to parse selects nothing,
    as upstream ignores its error when filtering."""
    parsed = []
    for term in terms:
        try:
            parsed.append(NodeSelectorTerm.parse(term))
        except SelectorError:
            continue
    return tuple(parsed), len(parsed) < len(terms)


@dataclass(slots=True, frozen=True)
class RequiredNodeAffinity:
    """``nodeSelector`` labels AND (any of the required terms, when there are required terms)."""

    labels: tuple[tuple[str, str], ...]
    terms: tuple[NodeSelectorTerm, ...] | None
    # some required term failed to parse: upstream's match then fails with an error
    has_invalid_terms: bool = False

    @classmethod
    def of(cls, pod: Pod) -> RequiredNodeAffinity:
        required = _required_selector(pod.affinity)
        if required is None:
            return cls(tuple(pod.node_selector.items()), None)
        terms, has_invalid = _parse_terms_leniently(required.get("nodeSelectorTerms") or ())
        return cls(tuple(pod.node_selector.items()), terms, has_invalid)

    def matches_labels(self, node: Node) -> bool:
        get = node.labels.get
        return all(get(key) == value for key, value in self.labels)

    def matches(self, node: Node) -> bool:
        labels = node.labels
        get = labels.get
        for key, value in self.labels:
            if get(key) != value:
                return False
        terms = self.terms
        if terms is None:
            return True
        name = node.name
        return any(term.matches(labels, name) for term in terms)

    def fails_with_error(self, node: Node) -> bool:
        """Upstream's match reports the parse error when the labels match but no valid term does."""
        return self.has_invalid_terms and self.matches_labels(node) and not self.matches(node)


def _node_affinity(affinity: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (affinity or {}).get("nodeAffinity") or {}


def _required_selector(affinity: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return _node_affinity(affinity).get("requiredDuringSchedulingIgnoredDuringExecution")


def preferred_score(terms: tuple[PreferredTerm, ...], node: Node) -> int:
    return sum(p.weight for p in terms if p.term.matches(node.labels, node.name))


def _names_from_match_fields(required: Mapping[str, Any]) -> frozenset[str] | None:
    """Nodes the required terms can select by ``metadata.name In``; None when some term is unbounded."""
    names_: set[str] = set()
    for term in required.get("nodeSelectorTerms") or ():
        term_names: set[str] | None = None
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                values = {str(v) for v in field.get("values") or ()}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names_ |= term_names
    return frozenset(names_)


class NodeAffinity:
    name: ClassVar[str] = names.NODE_AFFINITY

    __slots__ = ("_added_preferred", "_added_required", "_filter_memo", "_score_memo")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        added = getattr(args, "added_affinity", None) or {}
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        try:
            self._added_required = (
                None
                if required is None
                else tuple(NodeSelectorTerm.parse(t) for t in required.get("nodeSelectorTerms") or ())
            )
            self._added_preferred = parse_preferred_terms(
                added.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            )
        except SelectorError as exc:
            raise ValueError(f"NodeAffinityArgs.addedAffinity: {exc}") from exc
        self._filter_memo = NodeMemo(np.int8)
        self._score_memo = NodeMemo(np.int64)

    def _added_matches(self, node: Node) -> bool:
        terms = self._added_required
        return terms is None or any(term.matches(node.labels, node.name) for term in terms)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering and scoring depend on the pod's node affinity and node selector (the
        profile's addedAffinity is the same for every pod)."""
        return (
            SignFragment(signers.NODE_AFFINITY, signers.node_affinity(pod)),
            SignFragment(signers.NODE_SELECTOR, signers.node_selector(pod)),
        ), None

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._after_node_change
            ),
        )

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        if not self._added_matches(new):
            return QueueingHint.SKIP
        required = RequiredNodeAffinity.of(pod)
        if required.fails_with_error(new):
            return QueueingHint.QUEUE  # upstream's hint queues on the error
        if not required.matches(new):
            return QueueingHint.SKIP
        if old is not None and required.matches(old):
            return QueueingHint.SKIP  # it matched before, so this update changes nothing for the pod
        return QueueingHint.QUEUE

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = _required_selector(pod.affinity)
        if required is None and self._added_required is None and not pod.node_selector:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, RequiredNodeAffinity.of(pod))
        if required is None or not required.get("nodeSelectorTerms"):
            return None, None
        node_names = _names_from_match_fields(required)
        if node_names is None:
            return None, None
        if not node_names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(node_names), None

    def _required(self, state: CycleState, pod: Pod) -> RequiredNodeAffinity:
        required = state.get(_PRE_FILTER_KEY)
        return RequiredNodeAffinity.of(pod) if required is None else required

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if not self._added_matches(node):
            return _ENFORCED_MISMATCH
        if not self._required(state, pod).matches(node):
            return _POD_MISMATCH
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        required = self._required(state, pod)
        matches = required.matches
        added = self._added_matches

        def code(info: NodeInfo) -> int:
            # 0 passes, 1 fails the added affinity (checked first), 2 fails the pod's own
            node = info.node
            return 1 if not added(node) else 0 if matches(node) else 2

        codes = self._filter_memo.values(table, required, slots, per_node(table, code))
        rejected = codes != 0
        if not rejected.any():
            return None
        return NodeVerdicts(rejected, (codes == 2).astype(np.int32), [_ENFORCED_MISMATCH, _POD_MISMATCH])

    # ------------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        try:
            preferred = parse_preferred_terms(
                _node_affinity(pod.affinity).get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            )
        except SelectorError as exc:
            return Status.from_error(exc)
        if not preferred and not self._added_preferred:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, preferred + self._added_preferred)
        return None

    def _preferred(self, state: CycleState, pod: Pod) -> tuple[PreferredTerm, ...]:
        terms = state.get(_PRE_SCORE_KEY)
        if terms is None:
            own = _node_affinity(pod.affinity).get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            terms = parse_preferred_terms(own) + self._added_preferred
        return terms

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return preferred_score(self._preferred(state, pod), node_info.node)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        terms = self._preferred(state, pod)
        return self._score_memo.values(
            table, terms, slots, per_node(table, lambda info: preferred_score(terms, info.node))
        )

    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        default_normalize_score(scores, reverse=False)
