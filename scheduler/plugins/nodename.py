"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node.

Upstream v1.36 has no PreFilter here (a narrowing PreFilterResult would change the diagnosis
message), so neither do we; the batch form is a cheap name comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Pod
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    NodeVerdicts,
    SignFragment,
    Status,
    signers,
)
from scheduler.framework.interface import NODE
from scheduler.plugins import names
from scheduler.plugins.helper import verdicts_from_mask

ERR_REASON = "node(s) didn't match the requested node name"

_REJECTED = Status.unresolvable(ERR_REASON)


class NodeName:
    name: ClassVar[str] = names.NODE_NAME

    __slots__ = ()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """Takes no args."""

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on ``spec.nodeName`` only."""
        return (SignFragment(signers.NODE_NAME, pod.node_name),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        # no hint: a new node is always worth a retry (the named node may just have appeared)
        return (ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if pod.node_name and pod.node_name != node_info.node.name:
            return _REJECTED
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        wanted = pod.node_name
        if not wanted:
            return None
        infos = table.infos
        rejected = np.fromiter(
            (infos[slot].node.name != wanted for slot in slots.tolist()),
            dtype=bool,
            count=len(slots),
        )
        return verdicts_from_mask(rejected, _REJECTED)
