"""What plugins see of the cluster: NodeInfo per node and QueuedPodInfo per pending pod."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from scheduler.api import HostPort, Node, Pod, Resource
from scheduler.api.volumes import persistent_claim_names

WILDCARD_IP = "0.0.0.0"


@dataclass(slots=True)
class ImageStateSummary:
    """An image present on a node; ``num_nodes`` counts the nodes that have it (kept by the cache)."""

    size: int
    num_nodes: int


def has_required_anti_affinity(pod: Pod) -> bool:
    anti = (pod.affinity or {}).get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


def has_affinity(pod: Pod) -> bool:
    affinity = pod.affinity or {}
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


@dataclass(slots=True, eq=False)
class NodeInfo:
    """A node plus everything placed on it (bound, binding and assumed pods).

    ``generation`` changes on every mutation, so snapshots can tell what changed. ``slot`` is the
    node's row in the cache's :class:`~scheduler.framework.nodetable.NodeTable`.
    """

    node: Node
    pods: dict[str, Pod] = field(default_factory=dict)  # by uid
    requested: Resource = field(default_factory=Resource)
    non_zero_requested: Resource = field(default_factory=Resource)
    # (protocol, port) -> host IPs in use
    used_ports: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    pods_with_affinity: dict[str, Pod] = field(default_factory=dict)
    pods_with_required_anti_affinity: dict[str, Pod] = field(default_factory=dict)
    # "namespace/claimName" -> number of pods on this node using it
    pvc_ref_counts: dict[str, int] = field(default_factory=dict)
    image_states: dict[str, ImageStateSummary] = field(default_factory=dict)
    generation: int = 0
    slot: int = -1

    @property
    def name(self) -> str:
        return self.node.name

    def add_pod(self, pod: Pod) -> None:
        if pod.uid in self.pods:
            self.remove_pod(pod.uid)
        self.pods[pod.uid] = pod
        self._account(pod, 1)

    def remove_pod(self, uid: str) -> Pod | None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            self._account(pod, -1)
        return pod

    def _account(self, pod: Pod, sign: int) -> None:
        # Preemption's dry runs call this several times per candidate node: the optional parts
        # (ports, affinity, volumes) are tested once each, as most pods have none of them.
        self.requested.add(pod.requests, sign)
        non_zero, own = self.non_zero_requested, pod.non_zero_requests
        non_zero.milli_cpu += sign * own.milli_cpu
        non_zero.memory += sign * own.memory
        for port in pod.host_ports:
            ips = self.used_ports.setdefault((port.protocol, port.port), set())
            if sign > 0:
                ips.add(port.ip)
            else:
                ips.discard(port.ip)
                if not ips:
                    del self.used_ports[(port.protocol, port.port)]
        if pod.affinity:
            self._account_affinity(pod, sign)
        for claim in persistent_claim_names(pod) if pod.volumes else ():
            if claim:
                key = f"{pod.namespace}/{claim}"
                count = self.pvc_ref_counts.get(key, 0) + sign
                if count > 0:
                    self.pvc_ref_counts[key] = count
                else:
                    self.pvc_ref_counts.pop(key, None)
        self.generation += 1

    def _account_affinity(self, pod: Pod, sign: int) -> None:
        if has_affinity(pod):
            if sign > 0:
                self.pods_with_affinity[pod.uid] = pod
            else:
                self.pods_with_affinity.pop(pod.uid, None)
        if has_required_anti_affinity(pod):
            if sign > 0:
                self.pods_with_required_anti_affinity[pod.uid] = pod
            else:
                self.pods_with_required_anti_affinity.pop(pod.uid, None)

    def port_conflicts(self, wanted: HostPort) -> bool:
        """True when ``wanted`` collides with a port in use (0.0.0.0 collides with every IP)."""
        ips = self.used_ports.get((wanted.protocol, wanted.port))
        if not ips:
            return False
        return wanted.ip == WILDCARD_IP or WILDCARD_IP in ips or wanted.ip in ips

    def clone(self) -> NodeInfo:
        """An independent copy (pods are shared: they are never mutated in place)."""
        return NodeInfo(
            node=self.node,
            pods=dict(self.pods),
            requested=self.requested.copy(),
            non_zero_requested=self.non_zero_requested.copy(),
            used_ports={key: set(ips) for key, ips in self.used_ports.items()},
            pods_with_affinity=dict(self.pods_with_affinity),
            pods_with_required_anti_affinity=dict(self.pods_with_required_anti_affinity),
            pvc_ref_counts=dict(self.pvc_ref_counts),
            image_states=self.image_states,
            generation=self.generation,
            slot=self.slot,
        )


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pending pod as the queue tracks it."""

    pod: Pod
    # when the pod was (re-)added to the queue; PrioritySort's tie-breaker
    timestamp: float = field(default_factory=time.time)
    # when the pod first entered the queue; the SLI metric measures from here
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    # plugins that rejected the pod in its last attempt; events for them may make it schedulable
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    # set while a PreEnqueue plugin (e.g. SchedulingGates) keeps the pod out of the queue
    gated_by: str = ""
    # attempts that ended unschedulable, and consecutive ones that ended in an internal error:
    # backoff grows with the errors while there are any, else with the rejections
    unschedulable_count: int = 0
    consecutive_errors: int = 0

    @property
    def key(self) -> str:
        return self.pod.key
