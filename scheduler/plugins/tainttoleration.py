"""TaintToleration: hard taints (NoSchedule, NoExecute) filter, soft ones (PreferNoSchedule) score.

Verdicts depend only on (taints, tolerations), both immutable tuples of frozen values, so they
are memoised by content: pods of one workload share tolerations, and nodes share taint sets.
The batch forms also memoise each node's verdict per toleration list, so a cycle looks only at
the nodes that changed since the previous pod with the same tolerations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Node, Pod, Taint, Toleration
from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    NodeVerdicts,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)
from scheduler.framework.interface import NODE, POD
from scheduler.plugins import names
from scheduler.plugins.helper import NodeMemo, default_normalize_score, per_node, verdicts_from_mask

# v1.36 no longer names the taint in the reason (so reasons aggregate across nodes).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

_REJECTED = Status.unresolvable(ERR_REASON_UNTOLERATED)
_PRE_SCORE_KEY = "PreScore" + names.TAINT_TOLERATION
_MEMO_LIMIT = 4096

Taints = tuple[Taint, ...]
Tolerations = tuple[Toleration, ...]


def has_untolerated_hard_taint(taints: Taints, tolerations: Tolerations) -> bool:
    return any(
        taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not any(t.tolerates(taint) for t in tolerations)
        for taint in taints
    )


def count_untolerated_soft_taints(taints: Taints, tolerations: Tolerations) -> int:
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in tolerations)
    )


def prefer_no_schedule_tolerations(pod: Pod) -> Tolerations:
    """Tolerations that can tolerate a PreferNoSchedule taint (an empty effect tolerates all)."""
    return tuple(t for t in pod.tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


class TaintToleration:
    name: ClassVar[str] = names.TAINT_TOLERATION

    __slots__ = ("_hard", "_hard_by_node", "_soft", "_soft_by_node")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._hard: dict[tuple[Taints, Tolerations], bool] = {}
        self._soft: dict[tuple[Taints, Tolerations], int] = {}
        self._hard_by_node = NodeMemo(bool)
        self._soft_by_node = NodeMemo(np.int64)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering and scoring depend on the pod's tolerations only."""
        return (SignFragment(signers.TOLERATIONS, signers.tolerations(pod)),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self._after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS), self._after_pod_toleration_change
            ),
        )

    @staticmethod
    def _after_node_change(pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        was_untolerated = old is None or has_untolerated_hard_taint(old.taints, pod.tolerations)
        if was_untolerated and not has_untolerated_hard_taint(new.taints, pod.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_pod_toleration_change(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.SKIP

    # ------------------------------------------------------------------ filter

    def _untolerated(self, taints: Taints, tolerations: Tolerations) -> bool:
        key = (taints, tolerations)
        verdict = self._hard.get(key)
        if verdict is None:
            if len(self._hard) >= _MEMO_LIMIT:
                self._hard.clear()
            verdict = self._hard[key] = has_untolerated_hard_taint(taints, tolerations)
        return verdict

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        taints = node_info.node.taints
        if taints and self._untolerated(taints, pod.tolerations):
            return _REJECTED
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        if not table.has_hard_taints.any():
            return None
        tolerations = pod.tolerations
        rejected = self._hard_by_node.values(
            table,
            tolerations,
            slots,
            per_node(
                table,
                lambda info: bool(info.node.taints) and self._untolerated(info.node.taints, tolerations),
            ),
        )
        return verdicts_from_mask(rejected, _REJECTED)

    # ------------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        state.write(_PRE_SCORE_KEY, prefer_no_schedule_tolerations(pod))
        return None

    def _tolerations_for_score(self, state: CycleState, pod: Pod) -> Tolerations:
        tolerations = state.get(_PRE_SCORE_KEY)
        return prefer_no_schedule_tolerations(pod) if tolerations is None else tolerations

    def _soft_count(self, taints: Taints, tolerations: Tolerations) -> int:
        key = (taints, tolerations)
        count = self._soft.get(key)
        if count is None:
            if len(self._soft) >= _MEMO_LIMIT:
                self._soft.clear()
            count = self._soft[key] = count_untolerated_soft_taints(taints, tolerations)
        return count

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        taints = node_info.node.taints
        if not taints:
            return 0
        return self._soft_count(taints, self._tolerations_for_score(state, pod))

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        if not table.has_soft_taints.any():
            return np.zeros(len(slots), dtype=np.int64)
        tolerations = self._tolerations_for_score(state, pod)
        return self._soft_by_node.values(
            table,
            tolerations,
            slots,
            per_node(
                table, lambda info: self._soft_count(info.node.taints, tolerations) if info.node.taints else 0
            ),
        )

    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        default_normalize_score(scores, reverse=True)
