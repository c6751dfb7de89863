"""The extension points, as Protocols a plugin class implements any subset of.

A plugin is a class with a ``name`` and a constructor ``Plugin(args, handle)``; it takes part in
every extension point whose method it defines (that is how ``multiPoint`` is expanded).
Success is ``None``; anything else is a :class:`~scheduler.framework.status.Status`.

Filter and Score each come in two forms. The per-node form (``filter`` / ``score``) is all a
custom plugin needs. Hot built-in plugins also implement the batch form (``filter_nodes`` /
``score_nodes``), which sees the whole :class:`NodeTable` and a vector of slots; the framework
prefers it when present. Both forms must agree (tests check that).
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from enum import Enum, IntFlag
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import orjson

from scheduler.api import LabelSelector, Pod
from scheduler.framework.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.nodetable import NodeTable
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, QueuedPodInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


# ---------------------------------------------------------------------------- results


@dataclass(slots=True)
class PreFilterResult:
    """PreFilter may narrow the candidate nodes; ``None`` names means every node."""

    node_names: frozenset[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class NodeVerdicts:
    """What a batch filter decided for a vector of slots.

    ``rejected[i]`` tells whether ``slots[i]`` failed; ``status_ids[i]`` indexes ``statuses``
    for the failed ones (several statuses let one plugin give per-node reasons, e.g.
    "Insufficient cpu" on some nodes and "Insufficient cpu, Insufficient memory" on others).
    """

    rejected: np.ndarray
    status_ids: np.ndarray
    statuses: list[Status]

    @classmethod
    def uniform(cls, rejected: np.ndarray, status: Status) -> NodeVerdicts:
        return cls(rejected, np.zeros(len(rejected), dtype=np.int32), [status])


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits nowhere: the input of PostFilter and of the FailedScheduling message."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    # status for nodes PreFilter excluded (not in node_to_status), or None
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def status_of(self, node_name: str) -> Status | None:
        return self.node_to_status.get(node_name, self.absent_nodes_status)


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


@dataclass(slots=True)
class Victims:
    """The pods preemption would evict from one node, most important first, and how many of
    them a PodDisruptionBudget protects (upstream's extenderv1.Victims)."""

    pods: list[Pod]
    num_pdb_violations: int = 0


# ---------------------------------------------------------------------------- cluster events


class ActionType(IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    # any other update
    UPDATE_OTHER = 4096
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


# Resource names of cluster events, as upstream's EventResource.
POD = "Pod"
ASSIGNED_POD = "AssignedPod"
UNSCHEDULED_POD = "UnscheduledPod"
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "storage.k8s.io/StorageClass"
CSI_NODE = "storage.k8s.io/CSINode"
CSI_DRIVER = "storage.k8s.io/CSIDriver"
CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
DEVICE_CLASS = "resource.k8s.io/DeviceClass"
WILDCARD = "*"


@dataclass(slots=True, frozen=True)
class ClusterEvent:
    resource: str
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """Does this (concrete) event fall under what a plugin registered for?"""
        # int's & on the flags: IntFlag's own builds a flag member each time (8x slower), and the
        # queue asks this for every parked pod on every event
        if registered.resource == WILDCARD:
            return bool(int.__and__(registered.action, self.action))
        resource_ok = registered.resource == self.resource or (
            registered.resource == POD and self.resource in (ASSIGNED_POD, UNSCHEDULED_POD)
        )
        return resource_ok and bool(int.__and__(registered.action, self.action))


class QueueingHint(Enum):
    SKIP = 0
    QUEUE = 1


# hint(pod, old_object, new_object) -> QueueingHint; objects are API views (Pod, Node) or dicts
QueueingHintFn = Callable[[Pod, Any, Any], QueueingHint]


@dataclass(slots=True, frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always queue


# ---------------------------------------------------------------------------- what plugins call


class ApiResponse:
    """An API answer: its HTTP status and its JSON body.

    ``from_bytes`` keeps the body encoded until it is read: most writes' answers (a Binding's
    Status, an Event's echo) are only ever looked at for their status.
    """

    __slots__ = ("_body", "_encoded", "status")

    def __init__(self, status: int, body: Any = None) -> None:
        self.status = status
        self._body = body
        self._encoded: bytes | None = None

    @classmethod
    def from_bytes(cls, status: int, data: bytes) -> ApiResponse:
        response = cls(status)
        response._encoded = data
        return response

    @property
    def body(self) -> Any:
        """The decoded body: JSON, else the text of a non-JSON body, None for an empty one."""
        if self._encoded is not None:
            self._body = _decode_body(self._encoded)
            self._encoded = None
        return self._body

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApiResponse):
            return NotImplemented
        return (self.status, self.body) == (other.status, other.body)

    def __repr__(self) -> str:
        return f"ApiResponse(status={self.status!r}, body={self.body!r})"


def _decode_body(data: bytes) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", errors="replace")


class ApiClient(Protocol):
    """Plain-JSON requests to the Kubernetes API (see scheduler.client)."""

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> ApiResponse: ...


class NodeLister(Protocol):
    """The cluster as of this scheduling cycle (the cache's snapshot)."""

    table: NodeTable
    # the NodeTable slots of ``node_infos()``, in the same (scheduling) order
    order: np.ndarray

    def node_infos(self) -> Sequence[NodeInfo]:
        """Every node, in scheduling order (zones interleaved)."""

    def get(self, node_name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]: ...

    def __len__(self) -> int: ...

    def pod_index(self) -> PodsByLabel:
        """The placed pods by namespace and label (kept up to date by the cache)."""


class PodsByLabel(Protocol):
    """Placed pods (bound and assumed) by namespace and label, kept up to date by the cache."""

    def namespaces(self) -> Collection[str]: ...

    def matching(self, namespaces: Iterable[str] | None, selector: LabelSelector | None) -> Iterator[Pod]:
        """Pods in ``namespaces`` (``None``: all) matching ``selector`` (``None`` matches none)."""

    def count_by_node(self, namespace: str, selector: LabelSelector | None) -> Mapping[str, int]:
        """Non-terminating pods of ``namespace`` matching ``selector``, per node name."""

    def uids_with_label(self, namespace: str, key: str, value: str) -> Set[str]:
        """The uids of the pods of ``namespace`` labelled ``key=value`` (read only)."""


class ObjectLister(Protocol):
    """Read access to the objects of one watched kind, as the informer last saw them.

    Keys are ``namespace/name`` (namespaced kinds) or ``name``. Pods and Nodes are API views
    (``Pod``/``Node``); every other kind is its plain API dict, never to be mutated.
    """

    def get(self, key: str) -> Any | None: ...

    def list(self) -> list[Any]: ...

    def with_label(self, namespace: str, key: str, value: str) -> builtins.list[Any]:
        """The objects of ``namespace`` ("" for cluster-scoped kinds) labelled ``key=value``,
        from an index: what a plugin asks every cycle costs the matches, not a scan."""


@runtime_checkable
class RevisionedLister(ObjectLister, Protocol):
    """A lister that says when and where its objects changed: ``revision`` differs after every
    change (an add, update or delete), and ``changed_since`` names the keys changed after a
    revision, so state derived from all of the objects is brought up to date key by key."""

    @property
    def revision(self) -> int: ...

    def changed_since(self, revision: int) -> list[str] | None:
        """The keys changed after ``revision``; None when that is not known any more: then
        look at every object."""


class PluginsRunner(Protocol):
    """A profile's plugins, run outside the scheduling cycle's own search: what preemption's dry
    runs (and tools such as explain) need. ``Handle.plugins_runner`` gives the profile's."""

    @property
    def pre_filter_plugins(self) -> Sequence[Plugin]: ...

    @property
    def filter_plugins(self) -> Sequence[Plugin]: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Every Filter on one node, leaving room for the pods nominated there (upstream's
        RunFilterPluginsWithNominatedPods); None when the pod fits."""

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


class WaitingPod(Protocol):
    """A pod some Permit plugins hold; each of them calls ``allow`` or ``reject``."""

    @property
    def pod(self) -> Pod: ...

    @property
    def node_name(self) -> str: ...

    @property
    def pending_plugins(self) -> frozenset[str]: ...

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; it is bound once every waiting plugin has allowed it."""

    def reject(self, plugin: str, message: str) -> None:
        """The pod goes back to the queue as unschedulable, with ``message``."""


class WaitingPods(Protocol):
    """The pods held at Permit in a profile, by uid."""

    def get(self, uid: str) -> WaitingPod | None: ...

    def __iter__(self) -> Iterator[WaitingPod]: ...

    def __len__(self) -> int: ...


class PodGroupState(Protocol):
    """The known pods of one scheduling.k8s.io/v1alpha2 PodGroup (members name it in
    ``spec.schedulingGroup.podGroupName``), as the scheduler sees them right now."""

    @property
    def all_count(self) -> int:
        """Every member the scheduler knows: pending, assumed and bound."""

    def scheduled_uids(self) -> set[str]:
        """The uids of the members bound or assumed (cheaper than ``scheduled_pods``)."""

    def scheduled_pods(self) -> list[Pod]:
        """Members bound or assumed (each with the node it is placed on)."""

    def unscheduled_pods(self) -> list[Pod]:
        """Members neither bound nor assumed."""


class PodGroups(Protocol):
    """Pod group membership (upstream's PodGroupManager); empty unless GenericWorkload is on."""

    def get(self, namespace: str, name: str) -> PodGroupState | None: ...


class GroupMetrics(Protocol):
    """Pod-group metrics (``scheduler_podgroup_*`` and ``pyscheduler_pending_podgroups``), fed by
    the pod-group cycle and by gang plugins such as Coscheduling."""

    def observe_attempt(self, result: str, profile: str, duration: float) -> None: ...

    def set_pending(self, profile: str, count: int) -> None: ...


class PluginMetrics(Protocol):
    """What plugins report beyond their own latency (upstream's plugin-specific metrics)."""

    def pod_groups(self) -> GroupMetrics:
        """The pod-group metrics, registered on first use (upstream has them only with groups)."""

    def observe_preemption(self, victims: int | None) -> None:
        """One preemption attempt; ``victims``: the chosen candidate's count, None without one."""

    def observe_preemption_victims(self, victims: int) -> None:
        """The victims of a preemption decided earlier and carried out now (a pod group's)."""

    def resource_claim_created(self, status: str) -> None:
        """One ResourceClaim creation request (``success``/``failure``): DRAExtendedResource's."""

    def binding_conditions_waited(
        self,
        profile: str,
        status: str,
        seconds: float,
        allocated_drivers: Iterable[str],
        conditioned_drivers: Iterable[str],
    ) -> None:
        """DynamicResources' PreBind waited ``seconds`` for binding conditions (DRADeviceBinding-
        Conditions) with ``status`` success, failure, timeout or error: the drivers of every
        device the pod's claims got, and of those that have binding conditions."""


class ExtenderFilterResult(Protocol):
    """What an extender's filter call decided."""

    @property
    def nodes(self) -> Sequence[NodeInfo]:
        """The nodes that pass, in the extender's order."""

    @property
    def failed(self) -> Mapping[str, str]:
        """Node name -> message, for nodes rejected as Unschedulable."""

    @property
    def failed_and_unresolvable(self) -> Mapping[str, str]:
        """Node name -> message, for nodes where preemption would not help either."""


class Extender(Protocol):
    """A scheduler extender (upstream's framework.Extender): a service consulted after the Filter
    plugins, next to the Score plugins, by preemption and to bind. The async calls raise an
    exception whose message is upstream's error when they fail. ``scheduler.extender`` has the
    HTTP one; ``Handle.extenders`` gives the configured ones."""

    @property
    def name(self) -> str:
        """The extender's URL prefix."""

    def is_ignorable(self) -> bool:
        """A failure skips this extender instead of failing the scheduling attempt."""

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    def is_interested(self, pod: Pod) -> bool:
        """Does the pod request (or limit) one of the extender's managed resources? (All pods
        interest an extender without managed resources.)"""

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ExtenderFilterResult: ...

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]:
        """(node name, score in [0, 10]) pairs, and the extender's weight."""

    async def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], nodes: NodeLister
    ) -> dict[str, Victims]:
        """The candidates (node name -> victims) the extender keeps, possibly with other victims."""

    async def bind(self, pod: Pod, node_name: str) -> None: ...


class Handle(Protocol):
    """Services the framework offers to plugins, given to every plugin's constructor."""

    @property
    def snapshot(self) -> NodeLister: ...

    @property
    def client(self) -> ApiClient: ...

    @property
    def scheduler_name(self) -> str: ...

    @property
    def clock(self) -> Clock:
        """Time for timeouts and delays (injectable: tests move it by hand)."""

    @property
    def metrics(self) -> PluginMetrics | None: ...

    @property
    def plugins_runner(self) -> PluginsRunner:
        """This profile's plugins (available once the profile is built, not in constructors)."""

    @property
    def waiting_pods(self) -> WaitingPods: ...

    @property
    def extenders(self) -> Sequence[Extender]:
        """The configured extenders, shared by every profile, the ignorable ones last."""

    def record_event(self, obj: Pod, event_type: str, reason: str, action: str, message: str) -> None:
        """Write an events.k8s.io/v1 Event about ``obj`` (fire and forget; retried until it lands)."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        """Pods nominated to run on ``node_name`` (by preemption) and not yet bound."""

    def activate_pods(self, pods: Iterable[Pod]) -> None:
        """Move these pending pods to the active queue now (e.g. once a preemption is done)."""

    @property
    def pod_groups(self) -> PodGroups:
        """Members of scheduling.k8s.io/v1alpha2 pod groups, by namespace and group name."""

    def lister(self, resource: str) -> ObjectLister:
        """The watched objects of a kind: a built-in by plural name ("persistentvolumeclaims",
        "configmaps", ...) or any kind as "group/version/plural" ("example.com/v1/widgets").
        A plugin declares what it reads in its ``watches``; KeyError names a kind not watched."""


# ---------------------------------------------------------------------------- extension points


class Plugin(Protocol):
    """A plugin class has a ``name`` and is built as ``Plugin(args, handle)``.

    Optional class attributes:

    - ``args_type``: a dataclass its ``pluginConfig`` args are decoded into (field ``foo_bar`` reads
      the key ``fooBar``; unknown keys and wrong types stop start-up naming the field; a
      ``validate(self) -> list[str]`` method may add its own checks). Without it the plugin gets
      its args as a plain dict (or None).
    - ``watches``: the kinds it reads through ``handle.lister`` beyond the built-in ones, as
      "group/version/plural" (core kinds: "v1/configmaps"). The scheduler watches them and is ready
      only once they are listed; a kind the cluster does not serve stops start-up.
    """

    name: ClassVar[str]


# A plugin class: constructed as Factory(args, handle); args is the profile's pluginConfig entry
# (its args_type, a built-in args dataclass, a plain mapping, or None).
PluginFactory = Callable[[Any, Handle], Plugin]


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, pod_info: QueuedPodInfo) -> Any:
        """Smaller keys pop first (upstream's Less(a, b) is sort_key(a) < sort_key(b))."""


@runtime_checkable
class GangPlugin(Plugin, Protocol):
    """A plugin that schedules groups of pods all or nothing (GangScheduling, Coscheduling).

    The queue treats a gang as one unit: an event that may help any member's own rejection moves
    every member waiting in the unschedulable pool, and a member rejected only because of its gang
    (by this plugin, e.g. at Permit when a sibling failed) keeps the reasons of its own earlier
    failure, so what the gang waits for is never forgotten. Its PreEnqueue verdict is the gang's
    (the same for every member): when an event re-runs it for one gated member and the plugin
    still gates it, the siblings it gates stay gated without asking again (a gang of n members
    arriving one by one costs n PreEnqueue runs, not n²/2)."""

    def gang_of(self, pod: Pod) -> str:
        """The gang ``pod`` belongs to, as a key unique within the plugin ("" for none)."""


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        """Cluster events that may make a pod this plugin rejected schedulable."""


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """Lets preemption ask "what if this pod were added/removed" without a new PreFilter."""

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        """Filter all ``slots`` at once; ``None`` means every one passes."""


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> (
        tuple[PostFilterResult | None, Status | None]
        | Awaitable[tuple[PostFilterResult | None, Status | None]]
    ):
        """May be a coroutine (DefaultPreemption's asks the extenders): the cycle then waits for
        it with the cache held as the cycle found it, so its snapshot stays consistent."""


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Raw score of one node; raising an exception fails the cycle with an Error status."""


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        """Raw scores (int64) of all ``slots`` at once."""


@runtime_checkable
class ScoreNormalizer(Plugin, Protocol):
    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        """Rescale raw scores in place into [MIN_NODE_SCORE, MAX_NODE_SCORE]."""


@dataclass(slots=True, frozen=True)
class SignFragment:
    """One part of a pod's signature (OpportunisticBatching, KEP-5598): what a plugin's Filter
    and Score answers for the pod depend on. Plugins reading the same part of a pod use the same
    ``key`` (``scheduler.framework.signers``); the framework keeps one fragment per key.
    ``value`` must encode to JSON, with lists whose order does not matter sorted."""

    key: str
    value: Any


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """(fragments, None), or ((), a status saying why the pod cannot be signed: its answers
        depend on more than the pod itself, e.g. on where other pods are).

        Two pods with equal signatures must get the same Filter and Score answers on the same
        nodes in the same state. Every PreFilter, Filter, PreScore and Score plugin of a profile
        must sign for the profile to batch pods; one that does not turns batching off."""


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """(status, timeout in seconds); a WAIT status holds the pod until allowed or timed out."""


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PreBindPreFlightPlugin(PreBindPlugin, Protocol):
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Will ``pre_bind`` have work for this pod? Success (None) or Skip (then it is not
        called; when no PreBind plugin has work the binding starts at once) or an Error.
        A PreBind plugin without this method is taken to always have work."""


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the pod; a SKIP status hands it to the next bind plugin."""


@runtime_checkable
class BackgroundPlugin(Plugin, Protocol):
    async def run_in_background(self) -> None:
        """Work outside the scheduling cycles (e.g. allowing pods held at Permit once a window
        opens): started when this replica starts scheduling, cancelled when it stops. Sleep with
        ``handle.clock.sleep`` so tests can move time; an exception is logged and ends only it."""


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...
