"""NodeUnschedulable: keeps pods off cordoned nodes unless they tolerate the cordon taint.

``kubectl cordon`` sets ``spec.unschedulable``; the node lifecycle controller mirrors it as the
``node.kubernetes.io/unschedulable:NoSchedule`` taint, so a pod tolerating that taint may also
ignore the flag (DaemonSet pods do).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Node, Pod, Taint
from scheduler.api.taints import NO_SCHEDULE
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
from scheduler.plugins.helper import verdicts_from_mask

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)
_REJECTED = Status.unresolvable(ERR_REASON_UNSCHEDULABLE)


def tolerates_unschedulable(pod: Pod) -> bool:
    return any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable:
    name: ClassVar[str] = names.NODE_UNSCHEDULABLE

    __slots__ = ()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """Takes no args."""

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the pod's tolerations only."""
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
        # an added schedulable node, or a node that was uncordoned
        if not new.unschedulable and (old is None or old.unschedulable):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_pod_toleration_change(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
        # tolerations can only be added, so only the rejected pod itself gaining this one matters
        if new.uid == pod.uid and tolerates_unschedulable(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node.unschedulable and not tolerates_unschedulable(pod):
            return _REJECTED
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        if tolerates_unschedulable(pod) or not table.unschedulable.any():
            return None
        return verdicts_from_mask(table.unschedulable[slots], _REJECTED)
