"""Compact views of Pods and Nodes, decoded once from watch JSON.

Only what scheduling needs is kept (docs/architecture.md, Principles: "Keep only what scheduling
reads"). Structures that few plugins read (affinity, volumes, topology spread constraints) stay as
the API's plain dicts and are parsed by the plugin that needs them; their types are checked here,
with everything else the scheduler reads (scheduler.api.kinds), so a plugin never meets a string
where it reads an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from scheduler.api import kinds
from scheduler.api.quantity import QuantityError
from scheduler.api.resources import Resource, pod_resources
from scheduler.api.schema import MalformedObject
from scheduler.api.taints import Taint, Toleration

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(slots=True, frozen=True)
class HostPort:
    """A container port that claims a port on the node."""

    ip: str
    protocol: str
    port: int


@dataclass(slots=True, frozen=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int


@dataclass(slots=True, frozen=True)
class ContainerRequests:
    """A container's spec requests, kept for the containers asking for a domain-prefixed
    resource: DRA serves such extended resources per container (DRAExtendedResource)."""

    index: int  # position among the init containers followed by the containers
    name: str
    long_lived: bool  # a container or a sidecar; a plain init container runs before them
    requests: Mapping[str, Any]  # the API's ResourceList


@dataclass(slots=True, eq=False)
class Pod:
    uid: str
    namespace: str
    name: str
    resource_version: str = ""
    generation: int = 0  # metadata.generation; conditions the scheduler writes observe it
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_references: tuple[Mapping[str, Any], ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    node_name: str = ""
    nominated_node_name: str = ""
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    phase: str = "Pending"
    creation_timestamp: str = ""
    start_time: str = ""  # status.startTime, set by the kubelet; "" until the pod has started
    deletion_timestamp: str | None = None
    # What the pod asks of a node (a resize in progress included), what it adds to the node's
    # non-zero totals, and what the resource scorers compare when it is the pod being scheduled:
    # see scheduler.api.resources.PodResources.
    requests: Resource = field(default_factory=Resource)
    non_zero_requests: Resource = field(default_factory=Resource)
    scoring_requests: Resource = field(default_factory=Resource)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] | None = None
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    # spec.schedulingGroup.podGroupName: the scheduling.k8s.io/v1alpha2 PodGroup the pod belongs to
    pod_group: str = ""
    volumes: tuple[Mapping[str, Any], ...] = ()
    topology_spread_constraints: tuple[Mapping[str, Any], ...] = ()
    images: tuple[str, ...] = ()
    resource_claims: tuple[Mapping[str, Any], ...] = ()
    # status.resourceClaimStatuses: the claims generated from templates, by pod claim name
    resource_claim_statuses: tuple[Mapping[str, Any], ...] = ()
    # the containers requesting domain-prefixed resources (DRA may serve them)
    container_requests: tuple[ContainerRequests, ...] = ()
    conditions: tuple[Mapping[str, Any], ...] = ()
    # spec facts NodeDeclaredFeatures infers node feature requirements from
    host_network: bool = False
    host_users: bool | None = None  # None: unset (the pod shares the host's user namespace)
    restart_rule_actions: frozenset[str] = frozenset()  # actions of (init) containers' restartPolicyRules

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def on_node(self, node_name: str) -> Pod:
        """A copy placed on ``node_name`` (what the cache assumes); much cheaper than
        ``dataclasses.replace``, which re-runs ``__init__`` over every field."""
        copy = object.__new__(Pod)
        for name in _POD_FIELDS:
            object.__setattr__(copy, name, getattr(self, name))
        copy.node_name = node_name
        return copy

    def condition(self, condition_type: str) -> Mapping[str, Any] | None:
        return next((c for c in self.conditions if c.get("type") == condition_type), None)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Pod:
        """Decode a Pod from its API JSON; raises MalformedObject, naming the field, on anything
        unusable (see scheduler.api.kinds for what is checked)."""
        kinds.check("Pod", kinds.POD, obj)
        meta = obj["metadata"]
        try:
            spec = obj["spec"]
            status = obj.get("status") or {}
            containers = spec["containers"]
            init_containers = spec.get("initContainers") or []
            resources = pod_resources(spec, status)
            # Only sidecars (restartable init containers) keep their ports while the pod runs.
            sidecars = [c for c in init_containers if c.get("restartPolicy") == "Always"]
            host_ports = tuple(
                HostPort(
                    str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP"), int(p["hostPort"])
                )
                for c in (*sidecars, *containers)
                for p in c.get("ports") or ()
                if p.get("hostPort")
            )
            return cls(
                uid=meta["uid"],
                namespace=meta.get("namespace") or "default",
                name=meta["name"],
                resource_version=str(meta.get("resourceVersion", "")),
                generation=int(meta.get("generation") or 0),
                labels=meta.get("labels") or {},
                annotations=meta.get("annotations") or {},
                owner_references=tuple(meta.get("ownerReferences") or ()),
                scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
                node_name=spec.get("nodeName") or "",
                nominated_node_name=status.get("nominatedNodeName") or "",
                priority=int(spec.get("priority") or 0),
                preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
                phase=status.get("phase") or "Pending",
                creation_timestamp=meta.get("creationTimestamp") or "",
                start_time=status.get("startTime") or "",
                deletion_timestamp=meta.get("deletionTimestamp"),
                requests=resources.requests,
                non_zero_requests=resources.non_zero,
                scoring_requests=resources.scoring,
                node_selector=spec.get("nodeSelector") or {},
                affinity=spec.get("affinity") or None,
                tolerations=tuple(Toleration.parse(t) for t in spec.get("tolerations") or ()),
                host_ports=host_ports,
                scheduling_gates=tuple(g["name"] for g in spec.get("schedulingGates") or ()),
                pod_group=str((spec.get("schedulingGroup") or {}).get("podGroupName") or ""),
                volumes=tuple(spec.get("volumes") or ()),
                topology_spread_constraints=tuple(spec.get("topologySpreadConstraints") or ()),
                images=tuple(c["image"] for c in (*init_containers, *containers) if c.get("image")),
                resource_claims=tuple(spec.get("resourceClaims") or ()),
                resource_claim_statuses=tuple(status.get("resourceClaimStatuses") or ()),
                container_requests=_container_requests(init_containers, containers),
                conditions=tuple(status.get("conditions") or ()),
                host_network=bool(spec.get("hostNetwork")),
                host_users=spec.get("hostUsers"),
                restart_rule_actions=frozenset(
                    str(rule["action"])
                    for c in (*init_containers, *containers)
                    for rule in c.get("restartPolicyRules") or ()
                    if rule.get("action")
                ),
            )
        except (QuantityError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MalformedObject("Pod", kinds.display_key(obj), str(exc)) from exc


_POD_FIELDS = tuple(f.name for f in fields(Pod))


def _container_requests(init_containers: list[Any], containers: list[Any]) -> tuple[ContainerRequests, ...]:
    found = []
    for index, container in enumerate((*init_containers, *containers)):
        requests = (container.get("resources") or {}).get("requests") or {}
        if any("/" in name for name in requests):
            long_lived = index >= len(init_containers) or container.get("restartPolicy") == "Always"
            found.append(ContainerRequests(index, str(container.get("name", "")), long_lived, requests))
    return tuple(found)


@dataclass(slots=True, eq=False)
class Node:
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    allocatable: Resource = field(default_factory=Resource)
    images: tuple[ContainerImage, ...] = ()
    # status.declaredFeatures: what the kubelet says this node supports (NodeDeclaredFeatures)
    declared_features: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Node:
        """Decode a Node from its API JSON; raises MalformedObject, naming the field, on anything
        unusable. A node without a status is fine: nothing fits on it until its kubelet reports."""
        kinds.check("Node", kinds.NODE, obj)
        meta = obj["metadata"]
        name = meta["name"]
        try:
            spec = obj.get("spec") or {}
            status = obj.get("status") or {}
            allocatable = status.get("allocatable") or status.get("capacity") or {}
            return cls(
                name=name,
                uid=meta.get("uid") or "",
                resource_version=str(meta.get("resourceVersion", "")),
                labels=meta.get("labels") or {},
                unschedulable=bool(spec.get("unschedulable")),
                taints=tuple(Taint.parse(t) for t in spec.get("taints") or ()),
                allocatable=Resource.from_list(allocatable),
                images=tuple(
                    ContainerImage(tuple(i.get("names") or ()), int(i.get("sizeBytes") or 0))
                    for i in status.get("images") or ()
                ),
                declared_features=frozenset(status.get("declaredFeatures") or ()),
            )
        except (QuantityError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MalformedObject("Node", name, str(exc)) from exc
