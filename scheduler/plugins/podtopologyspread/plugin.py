"""PodTopologySpread: spread a workload's pods evenly over topology domains (zones, hosts, ...).

DoNotSchedule constraints filter (PreFilter counts, Filter checks skew); ScheduleAnyway
constraints score (PreScore counts, Score weighs, NormalizeScore inverts). A pod without
constraints of its own gets the profile's default constraints (``System``: upstream's soft zone
and host spread; ``List``: the configured ones), with the selector of the workloads (Services,
ReplicaSets, ...) selecting the pod (see defaults.py); a pod no workload selects gets none.
Matching pods are counted from the cache's pod index, not by scanning every node's pods, into
arrays indexed by domain id (topology_columns.py keeps every node's domain per topology key), so Filter
and Score also come in batch form over the NodeTable; the per-node forms serve preemption.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
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
    PodsByLabel,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
)
from scheduler.framework.interface import NODE, POD
from scheduler.framework.pod_index import PodIndex
from scheduler.plugins import names
from scheduler.plugins.helper import PreFilterVerdicts
from scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SpreadConstraint,
    node_has_all_keys,
    parse_constraints,
    selector_matches,
)
from scheduler.plugins.podtopologyspread.defaults import default_selector
from scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    check_node,
    check_nodes,
    compute_pre_filter_state,
)
from scheduler.plugins.podtopologyspread.scoring import (
    PreScoreState,
    compute_pre_score_state,
    normalize,
    score_node,
    score_nodes,
)
from scheduler.plugins.topology_columns import DomainColumns

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

_PRE_FILTER_KEY = "PreFilter" + names.POD_TOPOLOGY_SPREAD
_PRE_SCORE_KEY = "PreScore" + names.POD_TOPOLOGY_SPREAD
NOT_SIGNABLE = "pods with topology constraints are not signable"
NOT_SIGNABLE_DEFAULTS = "pods with default topology constraints are not signable"


def _involved(changed: Pod, pod: Pod) -> bool:
    """Can ``changed`` alter ``pod``'s spreading? The pod itself, or a pod of its namespace that
    is bound or nominated to a node (upstream counts nominated pods as placed here)."""
    if changed.uid == pod.uid:
        return True
    placed = bool(changed.node_name or changed.nominated_node_name)
    return placed and changed.namespace == pod.namespace


class PodTopologySpread:
    name: ClassVar[str] = names.POD_TOPOLOGY_SPREAD

    __slots__ = ("_columns", "_default_constraints", "_handle", "_system_defaulted", "_verdicts")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        defaulting = getattr(args, "defaulting_type", SYSTEM_DEFAULTING) or SYSTEM_DEFAULTING
        self._system_defaulted = defaulting == SYSTEM_DEFAULTING
        self._default_constraints: tuple[Mapping[str, Any], ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS
            if self._system_defaulted
            else tuple(getattr(args, "default_constraints", None) or ())
        )
        self._handle = handle
        self._columns = DomainColumns()
        self._verdicts = PreFilterVerdicts(_PRE_FILTER_KEY, self._columns, check_node, check_nodes)

    # ------------------------------------------------------------------ constraints

    def _constraints(self, pod: Pod, action: str) -> list[SpreadConstraint]:
        """The pod's own constraints for ``action``, else the defaults with the workload's selector."""
        if pod.topology_spread_constraints:
            return parse_constraints(pod.topology_spread_constraints, pod.labels, action)
        if not self._default_constraints:
            return []
        constraints = parse_constraints(self._default_constraints, pod.labels, action)
        if not constraints:
            return []
        selector = default_selector(self._handle, pod)
        if selector.is_empty:
            return []
        return [c.with_selector(selector) for c in constraints]

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Spreading depends on where other pods are, so no pod with constraints is signed, and
        as upstream none at all when the profile has default constraints (System defaulting
        has), whether or not a workload selects the pod."""
        if pod.topology_spread_constraints:
            return (), Status.unschedulable(NOT_SIGNABLE)
        if self._default_constraints:
            return (), Status.unschedulable(NOT_SIGNABLE_DEFAULTS)
        return (), None

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATIONS
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return (
            ClusterEventWithHint(ClusterEvent(POD, pod_actions | ActionType.DELETE), self._after_pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), self._after_node_change),
        )

    def _after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        if any(changed is not None and not _involved(changed, pod) for changed in (old, new)):
            return QueueingHint.SKIP
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            if (
                pod.uid == new.uid
                and old.tolerations != new.tolerations
                and any(c.honor_node_taints for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(old.labels) == dict(new.labels):
                return QueueingHint.SKIP
            flipped = any(
                selector_matches(c.selector, old.labels) != selector_matches(c.selector, new.labels)
                for c in constraints
            )
            return QueueingHint.QUEUE if flipped else QueueingHint.SKIP
        changed = new if new is not None else old
        if changed is not None and any(selector_matches(c.selector, changed.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        old_ok = old is not None and node_has_all_keys(old.labels, constraints)
        new_ok = new is not None and node_has_all_keys(new.labels, constraints)
        if old is not None and new is not None:
            if old_ok != new_ok:
                return QueueingHint.QUEUE
            moved = any(old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints)
            if new_ok and (moved or old.taints != new.taints):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if (old_ok or new_ok) else QueueingHint.SKIP

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            return None, Status.from_error(exc)
        if not constraints:
            return None, Status.skip()
        state.write(
            _PRE_FILTER_KEY,
            compute_pre_filter_state(pod, constraints, nodes, nodes.pod_index(), self._columns),
        )
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        found: PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if found is not None:  # None: PreFilter skipped, nothing to keep up to date
            found.update_with_pod(pod_to_add, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        found: PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if found is not None:
            found.update_with_pod(pod_to_remove, node_info.node, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self._verdicts.filter(state, node_info)

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        return self._verdicts.filter_nodes(state, table, slots)

    # ------------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        snapshot = self._handle.snapshot if self._handle is not None else None
        if not nodes or (snapshot is not None and not len(snapshot)):
            return Status.skip()
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            return Status.from_error(exc)
        if not constraints:
            return Status.skip()
        index: PodsByLabel
        lookup: Callable[[str], NodeInfo | None]
        table: NodeTable | None
        if snapshot is None:  # no cluster view: the candidates are all there is
            index, lookup, table = PodIndex.of(nodes), {info.name: info for info in nodes}.get, None
        else:
            index, lookup, table = snapshot.pod_index(), snapshot.get, snapshot.table
        # System defaults spread over hosts even on nodes without a zone label.
        require_all = bool(pod.topology_spread_constraints) or not self._system_defaulted
        found = compute_pre_score_state(
            pod, constraints, nodes, table, lookup, index, require_all, self._columns
        )
        state.write(_PRE_SCORE_KEY, found)
        return None

    def _pre_score_state(self, state: CycleState) -> PreScoreState:
        found = state.get(_PRE_SCORE_KEY)
        if found is None:
            raise KeyError(f"reading {_PRE_SCORE_KEY!r} from cycleState: not found")
        return found

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return score_node(self._pre_score_state(state), pod, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        found = self._pre_score_state(state)
        self._columns.refresh(table)
        return score_nodes(found, table, slots, self._columns)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        normalize(self._pre_score_state(state), scores)
