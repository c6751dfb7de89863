"""NodePorts: a pod's host ports must be free on the node (0.0.0.0 collides with every IP)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import HostPort, Pod
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
from scheduler.framework.interface import NODE, POD
from scheduler.framework.types import WILDCARD_IP
from scheduler.plugins import names
from scheduler.plugins.helper import verdicts_from_mask

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

_PRE_FILTER_KEY = "PreFilter" + names.NODE_PORTS
_REJECTED = Status.unschedulable(ERR_REASON)


def fits_ports(wanted: Iterable[HostPort], node_info: NodeInfo) -> bool:
    return not any(node_info.port_conflicts(port) for port in wanted)


def _ports_conflict(wanted: Iterable[HostPort], in_use: Iterable[HostPort]) -> bool:
    """Would ``wanted`` collide with ``in_use`` if both sat on one node?"""
    used: dict[tuple[str, int], set[str]] = {}
    for port in in_use:
        used.setdefault((port.protocol, port.port), set()).add(port.ip)
    for port in wanted:
        ips = used.get((port.protocol, port.port))
        if ips and (port.ip == WILDCARD_IP or WILDCARD_IP in ips or port.ip in ips):
            return True
    return False


class NodePorts:
    name: ClassVar[str] = names.NODE_PORTS

    __slots__ = ()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """Takes no args."""

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the pod's host ports; as upstream, the signature holds their
        numbers (not their protocols or host IPs)."""
        return (SignFragment(signers.HOST_PORTS, signers.host_ports(pod)),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            # ports are immutable, so only a deletion can free one
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        )

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: Pod, new: None) -> QueueingHint:
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.SKIP
        if not old.host_ports or not _ports_conflict(pod.host_ports, old.host_ports):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, pod.host_ports)
        return None, None

    def _wanted(self, state: CycleState, pod: Pod) -> tuple[HostPort, ...]:
        wanted = state.get(_PRE_FILTER_KEY)
        return pod.host_ports if wanted is None else wanted

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = self._wanted(state, pod)
        if wanted and node_info.used_ports and not fits_ports(wanted, node_info):
            return _REJECTED
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        wanted = self._wanted(state, pod)
        if not wanted:
            return None
        infos = table.infos
        rejected = np.zeros(len(slots), dtype=bool)
        for i, slot in enumerate(slots.tolist()):
            info = infos[slot]
            if info.used_ports and not fits_ports(wanted, info):
                rejected[i] = True
        return verdicts_from_mask(rejected, _REJECTED)
