"""Builders for tests of plugins (and of anything that runs plugins).

``make_pod`` / ``make_node`` return API views (``pod_dict`` / ``node_dict`` the raw JSON);
``table_of`` lays nodes and pods out exactly as the cache does (NodeTable.add, NodeInfo.add_pod,
NodeTable.sync_row); ``FakeHandle`` is a complete framework Handle over such a table, with a
scripted ApiClient, recorded events, plain-dict listers and a fake clock.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api import Node, Pod
from scheduler.cache.pod_groups import PodGroupMembers
from scheduler.framework import (
    ApiResponse,
    CycleState,
    Extender,
    ImageStateSummary,
    NodeInfo,
    NodeTable,
    NodeVerdicts,
    PluginsRunner,
    Status,
    WaitingPods,
)
from scheduler.framework.changes import ChangeLog
from scheduler.framework.pod_index import PodIndex
from scheduler.runtime.waiting import WaitingPodMap
from scheduler.testing.clock import FakeClock

if TYPE_CHECKING:
    from scheduler.runtime.framework import Framework

_uids = itertools.count(1)

TaintSpec = tuple[str, str, str] | Mapping[str, Any]
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"


def _taint(spec: TaintSpec) -> dict[str, Any]:
    if isinstance(spec, Mapping):
        return dict(spec)
    key, value, effect = spec
    return {"key": key, "value": value, "effect": effect}


def pod_dict(
    name: str = "pod",
    *,
    namespace: str = "default",
    uid: str | None = None,
    requests: Mapping[str, str | int] | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] | None = None,
    images: Sequence[str] = (),
    node_name: str = "",
    nominated_node_name: str = "",
    priority: int | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    host_ports: Sequence[tuple[int, str] | tuple[int, str, str]] = (),
    scheduling_gates: Sequence[str] = (),
    overhead: Mapping[str, str] | None = None,
    scheduler_name: str = "pyscheduler",
    pvcs: Sequence[str] = (),
    phase: str = "Pending",
    deletion_timestamp: str = "",
) -> dict[str, Any]:
    """A Pod as the API serves it. ``requests`` go on one container (named ``c0``) unless
    ``containers`` is given; ``host_ports`` are ``(port, protocol[, hostIP])``; ``images`` add one
    container per image; ``pvcs`` are the claims of its persistentVolumeClaim volumes; a
    ``deletion_timestamp`` makes it terminating."""
    if containers is None:
        container: dict[str, Any] = {
            "name": "c0",
            "image": images[0] if images else "registry.k8s.io/pause:3.10",
        }
        if requests:
            container["resources"] = {"requests": dict(requests)}
        if host_ports:
            container["ports"] = [
                {
                    "containerPort": p[0],
                    "hostPort": p[0],
                    "protocol": p[1],
                    **({"hostIP": p[2]} if len(p) > 2 else {}),
                }
                for p in host_ports
            ]
        containers = [container] + [
            {"name": f"c{i}", "image": image} for i, image in enumerate(images[1:], 1)
        ]
    spec: dict[str, Any] = {"containers": [dict(c) for c in containers], "schedulerName": scheduler_name}
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if overhead:
        spec["overhead"] = dict(overhead)
    if pvcs:
        spec["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}} for i, claim in enumerate(pvcs)
        ]
    status: dict[str, Any] = {"phase": phase}
    if nominated_node_name:
        status["nominatedNodeName"] = nominated_node_name
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}-{next(_uids)}",
        "labels": dict(labels or {}),
    }
    if deletion_timestamp:
        metadata["deletionTimestamp"] = deletion_timestamp
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def required_pod_affinity(
    labels: Mapping[str, str], topology_key: str = "kubernetes.io/hostname", *, anti: bool = False
) -> dict[str, Any]:
    """A pod's ``affinity`` with one required term: with (``anti``: away from) the pods labelled
    ``labels``, in the same ``topology_key`` domain."""
    term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": topology_key}
    kind = "podAntiAffinity" if anti else "podAffinity"
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def deployment_dict(
    name: str,
    replicas: int,
    *,
    requests: Mapping[str, str] | None = None,
    namespace: str = "default",
    scheduler_name: str | None = "pyscheduler",
    image: str = "x",
    container: str = "c",
    **pod_spec: Any,
) -> dict[str, Any]:
    """An apps/v1 Deployment of ``replicas`` pods labelled ``app: name``, one container asking for
    ``requests``; ``pod_spec`` adds fields to the pod template's spec. ``scheduler_name=None``
    leaves the template without one (the API server's default scheduler)."""
    container_spec: dict[str, Any] = {"name": container, "image": image}
    if requests:
        container_spec["resources"] = {"requests": dict(requests)}
    template_spec: dict[str, Any] = {"containers": [container_spec], **pod_spec}
    if scheduler_name is not None:
        template_spec["schedulerName"] = scheduler_name
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
        },
    }


def make_pod(name: str = "pod", **kwargs: Any) -> Pod:
    return Pod.from_dict(pod_dict(name, **kwargs))


def node_dict(
    name: str = "node",
    *,
    cpu: str | int = "4",
    memory: str | int = "8Gi",
    pods: int = 110,
    ephemeral_storage: str | None = None,
    extra: Mapping[str, str | int] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[TaintSpec] = (),
    unschedulable: bool = False,
    images: Iterable[tuple[Sequence[str], int]] = (),
    zone: str = "",
    region: str = "",
) -> dict[str, Any]:
    """A Node as the API serves it; ``extra`` adds allocatable scalar resources, ``images`` are
    ``(names, sizeBytes)``, ``zone`` and ``region`` its topology.kubernetes.io labels."""
    allocatable: dict[str, Any] = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods)}
    if ephemeral_storage is not None:
        allocatable["ephemeral-storage"] = ephemeral_storage
    allocatable.update({k: str(v) for k, v in (extra or {}).items()})
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    taint_list = [_taint(t) for t in taints]
    if taint_list:
        spec["taints"] = taint_list
    topology = {key: value for key, value in ((ZONE_LABEL, zone), (REGION_LABEL, region)) if value}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-node-{name}",
            "labels": {"kubernetes.io/hostname": name, **topology, **(labels or {})},
        },
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "images": [{"names": list(names), "sizeBytes": size} for names, size in images],
        },
    }


def make_node(name: str = "node", **kwargs: Any) -> Node:
    return Node.from_dict(node_dict(name, **kwargs))


def _node_view(obj: Node | Mapping[str, Any]) -> Node:
    return obj if isinstance(obj, Node) else Node.from_dict(obj)


def _pod_view(obj: Pod | Mapping[str, Any]) -> Pod:
    return obj if isinstance(obj, Pod) else Pod.from_dict(obj)


@dataclass(slots=True)
class Cluster:
    """Nodes laid out in a NodeTable; ``infos[i]`` is the i-th node given to :func:`table_of`."""

    table: NodeTable
    infos: list[NodeInfo]

    @property
    def slots(self) -> np.ndarray:
        return np.array([info.slot for info in self.infos], dtype=np.int64)

    def info(self, name: str) -> NodeInfo:
        return next(info for info in self.infos if info.name == name)


def image_states(nodes: Sequence[Node]) -> list[dict[str, ImageStateSummary]]:
    """Per node, image name -> summary with ``num_nodes`` counted over all ``nodes`` (as the cache keeps)."""
    counts: dict[str, int] = {}
    for node in nodes:
        for name in {n for image in node.images for n in image.names}:
            counts[name] = counts.get(name, 0) + 1
    return [
        {
            name: ImageStateSummary(image.size_bytes, counts[name])
            for image in node.images
            for name in image.names
        }
        for node in nodes
    ]


def table_of(
    nodes: Iterable[Node | Mapping[str, Any]],
    pods: Iterable[Pod | Mapping[str, Any]] = (),
    *,
    capacity: int = 4,
) -> Cluster:
    """NodeInfos plus the NodeTable the cache would keep for them; pods land on ``spec.nodeName``."""
    node_views = [_node_view(n) for n in nodes]
    table = NodeTable(capacity)
    infos = []
    for node, states in zip(node_views, image_states(node_views), strict=True):
        info = NodeInfo(node, image_states=states)
        table.add(info)
        infos.append(info)
    by_name = {info.name: info for info in infos}
    for pod in (_pod_view(p) for p in pods):
        info = by_name[pod.node_name]
        info.add_pod(pod)
        table.sync_row(info)
    return Cluster(table, infos)


class FakeSnapshot:
    """A NodeLister over a :class:`Cluster`."""

    def __init__(self, cluster: Cluster) -> None:
        self.table = cluster.table
        self._infos = list(cluster.infos)
        self._by_name = {info.name: info for info in self._infos}
        self.order = cluster.slots

    def pod_index(self) -> PodIndex:
        return PodIndex.of(self._infos)

    def node_infos(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, node_name: str) -> NodeInfo | None:
        return self._by_name.get(node_name)

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return [info for info in self._infos if info.pods_with_affinity]

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]:
        return [info for info in self._infos if info.pods_with_required_anti_affinity]

    def __len__(self) -> int:
        return len(self._infos)


@dataclass(slots=True)
class Request:
    method: str
    path: str
    body: Any
    params: Mapping[str, str] | None
    content_type: str


@dataclass(slots=True)
class FakeClient:
    """An ApiClient that records requests and answers from ``responses`` (FIFO), then ``default``.

    A response that is an exception instance is raised instead of returned.
    """

    responses: list[ApiResponse | BaseException] = field(default_factory=list)
    default: ApiResponse = field(
        default_factory=lambda: ApiResponse(201, {"kind": "Status", "status": "Success"})
    )
    requests: list[Request] = field(default_factory=list)

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> ApiResponse:
        self.requests.append(Request(method, path, body, params, content_type))
        answer = self.responses.pop(0) if self.responses else self.default
        if isinstance(answer, BaseException):
            raise answer
        return answer


@dataclass(slots=True)
class RecordedEvent:
    pod: Pod
    event_type: str
    reason: str
    action: str
    message: str


class FakeLister:
    """An informer store over plain API dicts, keyed ``namespace/name`` (or ``name``)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._changes = ChangeLog()  # a RevisionedLister
        self._objects: dict[str, Mapping[str, Any]] = {}
        for obj in objects:
            self.put(obj)

    @staticmethod
    def key(obj: Mapping[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))

    def put(self, obj: Mapping[str, Any]) -> None:
        key = self.key(obj)
        self._objects[key] = obj
        self._changes.changed(key)

    def delete(self, key: str) -> None:
        if self._objects.pop(key, None) is not None:
            self._changes.changed(key)

    @property
    def revision(self) -> int:
        return self._changes.revision

    def changed_since(self, revision: int) -> builtins.list[str] | None:
        return self._changes.since(revision)

    def get(self, key: str) -> Mapping[str, Any] | None:
        return self._objects.get(key)

    def list(self) -> list[Mapping[str, Any]]:
        return list(self._objects.values())

    def with_label(self, namespace: str, key: str, value: str) -> builtins.list[Mapping[str, Any]]:
        return [
            obj
            for obj in self._objects.values()
            if ((obj.get("metadata") or {}).get("namespace") or "") == namespace
            and ((obj.get("metadata") or {}).get("labels") or {}).get(key) == value
        ]


class RecordedMetrics:
    """The plugin metrics a FakeHandle records."""

    def __init__(self) -> None:
        self.preemptions: list[int | None] = []
        self.deferred_victims: list[int] = []  # victims of pod groups' preemptions, when evicted
        self.claim_creates: list[str] = []  # ResourceClaim creations by status
        # PreBind's waits for binding conditions: (profile, status, seconds, drivers, with conditions)
        self.binding_waits: list[tuple[str, str, float, list[str], list[str]]] = []
        self.groups = RecordedGroupMetrics()

    def observe_preemption(self, victims: int | None) -> None:
        self.preemptions.append(victims)

    def observe_preemption_victims(self, victims: int) -> None:
        self.deferred_victims.append(victims)

    def resource_claim_created(self, status: str) -> None:
        self.claim_creates.append(status)

    def binding_conditions_waited(
        self,
        profile: str,
        status: str,
        seconds: float,
        allocated_drivers: Iterable[str],
        conditioned_drivers: Iterable[str],
    ) -> None:
        self.binding_waits.append(
            (profile, status, seconds, list(allocated_drivers), list(conditioned_drivers))
        )

    def pod_groups(self) -> RecordedGroupMetrics:
        return self.groups


class RecordedGroupMetrics:
    """The pod-group metrics a FakeHandle records: (result, profile) per attempt, pending counts."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, str]] = []
        self.pending: dict[str, int] = {}

    def observe_attempt(self, result: str, profile: str, duration: float) -> None:
        self.attempts.append((result, profile))

    def set_pending(self, profile: str, count: int) -> None:
        self.pending[profile] = count


class FakeHandle:
    """A framework Handle for tests: a snapshot over a Cluster, a FakeClient, recorded events and
    metrics, listers of plain API dicts (``listers={"persistentvolumes": [...]}``; other kinds
    empty) and a FakeClock. ``plugins_runner`` and ``waiting_pods`` come from the Framework the
    handle is attached to (``attach``), as in the scheduler."""

    def __init__(
        self,
        cluster: Cluster | None = None,
        client: FakeClient | None = None,
        scheduler_name: str = "pyscheduler",
        nominated: Mapping[str, Sequence[Pod]] | None = None,
        listers: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
        clock: FakeClock | None = None,
        extenders: Sequence[Extender] = (),
        pods: Iterable[Pod] = (),
    ) -> None:
        """``pods``: the pods the scheduler knows besides the cluster's, for ``pod_groups`` (members
        of scheduling.k8s.io/v1alpha2 pod groups); ``pod_groups.add(pod)`` adds more."""
        self._snapshot = FakeSnapshot(cluster or table_of([]))
        self._client = client or FakeClient()
        self._scheduler_name = scheduler_name
        self._nominated = dict(nominated or {})
        self._clock = clock or FakeClock()
        self._runner: PluginsRunner | None = None
        self._waiting: WaitingPods = WaitingPodMap()
        self.events: list[RecordedEvent] = []
        self.activated: list[Pod] = []
        self.recorded_metrics = RecordedMetrics()
        self.listers = {kind: FakeLister(objects) for kind, objects in (listers or {}).items()}
        self.extenders = tuple(extenders)
        self.pod_groups = PodGroupMembers(self)
        for pod in [*(p for info in self._snapshot.node_infos() for p in info.pods.values()), *pods]:
            self.pod_groups.add(pod)

    # Pods held at Permit count as placed, as assumed pods do in the scheduler (``AssumedPods``).
    def assumed_uids(self) -> Set[str]:
        return {waiting.pod.uid for waiting in self._waiting}

    def assumed_node(self, uid: str) -> str:
        waiting = self._waiting.get(uid)
        return waiting.node_name if waiting is not None else ""

    def attach(self, framework: Framework) -> None:
        """Take ``plugins_runner`` and ``waiting_pods`` from a built Framework."""
        self._runner = framework
        self._waiting = framework.waiting_pods

    @property
    def clock(self) -> FakeClock:
        return self._clock

    @property
    def metrics(self) -> RecordedMetrics:
        return self.recorded_metrics

    @property
    def plugins_runner(self) -> PluginsRunner:
        if self._runner is None:
            raise RuntimeError("attach() the handle to a Framework first")
        return self._runner

    @property
    def waiting_pods(self) -> WaitingPods:
        return self._waiting

    @property
    def snapshot(self) -> FakeSnapshot:
        return self._snapshot

    @property
    def client(self) -> FakeClient:
        return self._client

    @property
    def scheduler_name(self) -> str:
        return self._scheduler_name

    def record_event(self, obj: Pod, event_type: str, reason: str, action: str, message: str) -> None:
        self.events.append(RecordedEvent(obj, event_type, reason, action, message))

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self._nominated.get(node_name, ())

    def activate_pods(self, pods: Iterable[Pod]) -> None:
        self.activated.extend(pods)

    def lister(self, resource: str) -> FakeLister:
        return self.listers.setdefault(resource, FakeLister())


def expand_verdicts(verdicts: NodeVerdicts | None, count: int) -> list[Status | None]:
    """A batch filter's answer as one Status-or-None per slot, like the per-node form gives."""
    if verdicts is None:
        return [None] * count
    return [
        verdicts.statuses[int(verdicts.status_ids[i])] if verdicts.rejected[i] else None for i in range(count)
    ]


def per_node_and_batch_filter(
    plugin: Any, state: CycleState, pod: Pod, cluster: Cluster
) -> tuple[list[Status | None], list[Status | None]]:
    """Both forms of a filter plugin over every node of ``cluster``, in node order."""
    per_node = [plugin.filter(state, pod, info) for info in cluster.infos]
    batch = expand_verdicts(plugin.filter_nodes(state, pod, cluster.table, cluster.slots), len(cluster.infos))
    return per_node, batch


def per_node_and_batch_score(
    plugin: Any, state: CycleState, pod: Pod, cluster: Cluster
) -> tuple[list[int], list[int]]:
    """Both forms of a score plugin over every node of ``cluster``, in node order."""
    per_node = [int(plugin.score(state, pod, info)) for info in cluster.infos]
    batch = [int(s) for s in plugin.score_nodes(state, pod, cluster.table, cluster.slots)]
    return per_node, batch
