"""InterPodAffinity: required and preferred pod affinity / anti-affinity, in both directions.

Namespace labels (for ``namespaceSelector``) come from the handle's ``namespaces`` lister. A
namespace it does not hold (not watched, or not seen yet) is known by the
``kubernetes.io/metadata.name`` label the API server puts on every namespace; upstream gives it no
labels at all, which only differs for a selector that wants the name and the informer lags.
Existing pods matching the incoming pod's terms are found through the cache's pod index, the
terms of existing pods are grouped by identical term (counting.py), both kept as per-node tallies
refreshed from the NodeTable's change log; counts per topology domain are numpy arrays over the
domain ids of ``topology_columns``, so Filter and Score also come in batch form over the table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Node, Pod, SelectorError
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
    ObjectLister,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)
from scheduler.framework.interface import NODE, POD, PodsByLabel
from scheduler.framework.pod_index import PodIndex
from scheduler.plugins import names
from scheduler.plugins.helper import PreFilterVerdicts
from scheduler.plugins.interpodaffinity.counting import ExistingTerms, PlacedMatches
from scheduler.plugins.interpodaffinity.filtering import (
    check_node,
    check_nodes,
    compute_pre_filter_state,
)
from scheduler.plugins.interpodaffinity.scoring import (
    TopologyScores,
    compute_topology_scores,
    normalize,
    score_node,
    score_nodes,
)
from scheduler.plugins.interpodaffinity.terms import (
    NAMESPACE_NAME_LABEL,
    TermsCache,
    matches_all,
    parse_pod_terms,
)
from scheduler.plugins.topology_columns import DomainColumns

_PRE_FILTER_KEY = "PreFilter" + names.INTER_POD_AFFINITY
_PRE_SCORE_KEY = "PreScore" + names.INTER_POD_AFFINITY
NOT_SIGNABLE = "pods with InterPodAffinity are not signable"
# Upstream's queueing hints match terms against no namespace labels at all.
_NO_LABELS: Mapping[str, str] = {}


class _NamespaceLabels:
    """Namespace labels memoised for one cycle (a namespace's labels do not change mid-cycle)."""

    __slots__ = ("_memo", "_namespaces")

    def __init__(self, handle: Handle | None) -> None:
        self._namespaces: ObjectLister | None = None
        if handle is not None:
            with contextlib.suppress(KeyError):  # KeyError: not watched
                self._namespaces = handle.lister("namespaces")
        self._memo: dict[str, Mapping[str, str]] = {}

    def __call__(self, namespace: str) -> Mapping[str, str]:
        found = self._memo.get(namespace)
        if found is None:
            obj = self._namespaces.get(namespace) if self._namespaces is not None else None
            if obj is None:  # not watched, or not seen yet: it has at least the name label
                found = {NAMESPACE_NAME_LABEL: namespace}
            else:
                found = (obj.get("metadata") or {}).get("labels") or {}
            self._memo[namespace] = found
        return found


class InterPodAffinity:
    name: ClassVar[str] = names.INTER_POD_AFFINITY

    __slots__ = (
        "_columns",
        "_existing",
        "_handle",
        "_hard_weight",
        "_ignore_existing_preferred",
        "_placed",
        "_terms",
        "_verdicts",
    )

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._hard_weight = int(getattr(args, "hard_pod_affinity_weight", 1))
        self._ignore_existing_preferred = bool(
            getattr(args, "ignore_preferred_terms_of_existing_pods", False)
        )
        if not 0 <= self._hard_weight <= 100:
            raise ValueError("InterPodAffinityArgs.hardPodAffinityWeight: must be in the range 0-100")
        self._handle = handle
        self._terms = TermsCache()
        self._columns = DomainColumns()
        self._verdicts = PreFilterVerdicts(_PRE_FILTER_KEY, self._columns, check_node, check_nodes)
        self._existing = ExistingTerms(self._terms.terms)
        self._placed = PlacedMatches()

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """A pod with pod (anti-)affinity is not signed: its answers depend on where other pods
        are. Another pod's answers depend on its labels, which existing pods' terms may select.
        As upstream, ignorePreferredTermsOfExistingPods leaves them out (no fragment), although
        existing pods' required anti-affinity still reads them; nor is the namespace signed."""
        affinity = pod.affinity or {}
        if affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None:
            return (), Status.unschedulable(NOT_SIGNABLE)
        if self._ignore_existing_preferred:
            return (), None
        return (SignFragment(signers.LABELS, signers.labels(pod)),), None

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        return (
            ClusterEventWithHint(ClusterEvent(POD, pod_actions), self._after_pod_change),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._after_node_change
            ),
        )

    def _after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Upstream's hint: terms are matched with no namespace labels (a namespaceSelector
        counts only when it selects a namespace without labels, e.g. ``{}``)."""
        if old is not None and new is not None and new.uid == pod.uid:
            return QueueingHint.QUEUE  # its own labels changed: other pods may hate it no more
        if any(p is not None and not (p.node_name or p.nominated_node_name) for p in (old, new)):
            return QueueingHint.SKIP  # only placed (or nominated) pods take part
        try:
            terms = parse_pod_terms(pod)
        except SelectorError:
            return QueueingHint.QUEUE

        def all_affinity(p: Pod) -> bool:
            return matches_all(terms.required_affinity, p, _NO_LABELS)

        def all_anti(p: Pod) -> bool:
            return matches_all(terms.required_anti_affinity, p, _NO_LABELS)

        if old is not None and new is not None:
            if not all_affinity(old) and all_affinity(new):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE if all_anti(old) and not all_anti(new) else QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if all_affinity(new) else QueueingHint.SKIP
        if old is None:
            return QueueingHint.SKIP
        if all_anti(old):
            return QueueingHint.QUEUE
        try:  # the deleted pod may have been the one whose anti-affinity kept this pod away
            theirs = self._terms.terms(old)
        except SelectorError:
            return QueueingHint.QUEUE
        hated = matches_all(theirs.required_anti_affinity, pod, _NO_LABELS)
        return QueueingHint.QUEUE if hated else QueueingHint.SKIP

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """A node may help when it joins, enters or moves between an affinity term's domains,
        or (for anti-affinity) joins at all, leaves a term's domains or moves between them."""
        if new is None:
            return QueueingHint.SKIP
        try:
            terms = parse_pod_terms(pod)
        except SelectorError:
            return QueueingHint.QUEUE
        for t in terms.required_affinity:
            now = new.labels.get(t.topology_key)
            if now is not None and (old is None or old.labels.get(t.topology_key) != now):
                return QueueingHint.QUEUE
        for t in terms.required_anti_affinity:
            if old is None:
                return QueueingHint.QUEUE
            was = old.labels.get(t.topology_key)
            if was is not None and new.labels.get(t.topology_key) != was:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            terms = parse_pod_terms(pod)
        except SelectorError as exc:
            return None, Status.unresolvable(f"parsing pod: {exc}")
        try:
            computed = compute_pre_filter_state(
                pod,
                terms,
                _NamespaceLabels(self._handle),
                nodes.table,
                self._columns,
                self._existing,
                self._placed,
                nodes.pod_index(),
            )
        except SelectorError as exc:  # an existing pod's invalid term
            return None, Status.from_error(exc)
        if (
            not any(counts.any() for counts in computed.existing_anti_affinity.values())
            and not terms.required_affinity
            and not terms.required_anti_affinity
        ):
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, computed)
        return None, None

    def _update(self, state: CycleState, other: Pod, node_info: NodeInfo, delta: int) -> Status | None:
        found = state.get(_PRE_FILTER_KEY)
        if found is None:  # PreFilter skipped: nothing to keep up to date
            return None
        ns_labels = _NamespaceLabels(self._handle)(other.namespace)
        found.update_with_pod(other, self._terms.terms(other), ns_labels, node_info.node, delta)
        return None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_remove, node_info, -1)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self._verdicts.filter(state, node_info)

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        return self._verdicts.filter_nodes(state, table, slots)

    # ------------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return Status.skip()
        try:
            terms = parse_pod_terms(pod)
        except SelectorError as exc:
            return Status.from_error(exc)
        if self._ignore_existing_preferred and not terms.has_preferred:
            return Status.skip()
        snapshot = self._handle.snapshot if self._handle is not None else None
        if snapshot is None:  # no cluster view: the candidates are all there is
            table = NodeTable(len(nodes))
            for info in nodes:
                table.add(info.clone())  # the clone takes a slot of its own table
            index: PodsByLabel = PodIndex.of(nodes)
        else:
            table, index = snapshot.table, snapshot.pod_index()
        try:
            scores = compute_topology_scores(
                pod,
                terms,
                _NamespaceLabels(self._handle),
                table,
                self._columns,
                self._existing,
                self._placed,
                index,
                self._hard_weight,
            )
        except SelectorError as exc:
            return Status.from_error(exc)
        if scores is None:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, scores)
        return None

    def _pre_score_state(self, state: CycleState) -> TopologyScores:
        found = state.get(_PRE_SCORE_KEY)
        if found is None:
            raise KeyError(f"reading {_PRE_SCORE_KEY!r} from cycleState: not found")
        return found

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return score_node(self._pre_score_state(state), node_info.node)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        found = self._pre_score_state(state)
        self._columns.refresh(table)
        return score_nodes(found, slots)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        if state.get(_PRE_SCORE_KEY) is not None:
            normalize(scores)
