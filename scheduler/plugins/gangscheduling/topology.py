"""TopologyPlacementGenerator: a group with ``schedulingConstraints.topology[0].key`` goes into one
domain of that node label (one placement per domain; only the domain of members already placed,
when some are). Its PreFilter keeps a trial to the nodes of the placement being tried."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.framework import (
    EVERY_NODE,
    PLACEMENT_KEY,
    CycleState,
    Handle,
    NodeLister,
    Placement,
    PodGroupState,
    PreFilterResult,
    SignFragment,
    Status,
)
from scheduler.plugins.gangscheduling.podgroups import PODGROUPS, topology_key

NAME = "TopologyPlacementGenerator"


class TopologyPlacementGenerator:
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[str, ...]] = (PODGROUPS,)

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def generate_placements(
        self, group: Mapping[str, Any], members: PodGroupState | None, nodes: NodeLister
    ) -> tuple[Sequence[Placement], Status | None]:
        key = topology_key(group)
        if not key:
            return [EVERY_NODE], None
        required = ""
        for pod in members.scheduled_pods() if members is not None else ():
            info = nodes.get(pod.node_name)
            domain = info.node.labels.get(key) if info is not None else None
            if domain is None:
                error = RuntimeError(
                    "cannot determine domain for already scheduled pods: "
                    f"no topology domain found for pod {pod.key}"
                )
                return [], Status.from_error(error, NAME)
            if required and domain != required:
                error = RuntimeError(
                    "cannot determine domain for already scheduled pods: more than 1 domain found for "
                    f"pod group: {required}, {domain}"
                )
                return [], Status.from_error(error, NAME)
            required = domain
        domains: dict[str, set[str]] = {}
        for info in nodes.node_infos():
            domain = info.node.labels.get(key)
            if domain is not None and (not required or domain == required):
                domains.setdefault(domain, set()).add(info.name)
        return [Placement(domain, frozenset(names)) for domain, names in sorted(domains.items())], None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        placement = state.get(PLACEMENT_KEY)
        if not isinstance(placement, Placement) or placement.nodes is None:
            return None, Status.skip()
        return PreFilterResult(placement.nodes), None

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        if pod.pod_group:
            return (), Status.unschedulable("the pod's candidates depend on its pod group's placement")
        return (), None
