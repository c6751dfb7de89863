"""NodeResourcesFit: the node must have room for the pod's requests; scoring by a configured strategy.

An extended resource that a DeviceClass serves (DRAExtendedResource) is left to DynamicResources
on the nodes that do not advertise it in allocatable; a node advertising it is checked here.
Scoring by such a resource (named in ``scoringStrategy.resources``) counts, on a node that does
not advertise it, the class's devices there as allocatable and those some claim holds as
allocated (``scheduler.dra.scoring``), as upstream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Node, Pod, Resource
from scheduler.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from scheduler.config.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
)
from scheduler.dra.claims import AllocatedDevices
from scheduler.dra.extended import DEVICE_CLASS_PREFIX, ClassMaps, dra_backed, is_dra_extended_resource_name
from scheduler.dra.model import SliceIndex
from scheduler.dra.scoring import ClassDevices
from scheduler.dra.shared import shared_dra
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
from scheduler.framework import nodetable as cols
from scheduler.framework.interface import DEVICE_CLASS, NODE, POD
from scheduler.plugins import names
from scheduler.plugins.helper import NodeMemo
from scheduler.plugins.noderesources.resource_allocation import (
    memoised_scores,
    node_lists,
    pod_request_list,
    table_matrices,
)
from scheduler.plugins.noderesources.scorers import (
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
    Scorer,
)

_PRE_FILTER_KEY = "PreFilter" + names.NODE_RESOURCES_FIT
_PRE_SCORE_KEY = "PreScore" + names.NODE_RESOURCES_FIT
_DRA_SCORE_KEY = "PreScoreDRA" + names.NODE_RESOURCES_FIT

REASON_TOO_MANY_PODS = "Too many pods"
NOT_SIGNABLE = "signature disabled when dra extended resources are used in the cluster"
CLASSES = "deviceclasses"
_NEVER_SHORT = np.iinfo(np.int64).max
_FIXED_REASONS = (
    REASON_TOO_MANY_PODS,
    "Insufficient cpu",
    "Insufficient memory",
    "Insufficient ephemeral-storage",
)


def is_extended_resource_name(name: str) -> bool:
    """Domain-prefixed resources outside ``kubernetes.io/`` (only these can be ignored by args)."""
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")


@dataclass(slots=True, frozen=True)
class FitRequest:
    """The pod's requests and the scalar resources that are actually checked, in reason order."""

    requests: Resource
    scalars: tuple[tuple[str, int], ...]
    dra: frozenset[str] = frozenset()  # scalars a DeviceClass serves where the node has none

    @property
    def is_empty(self) -> bool:
        r = self.requests
        return not (r.milli_cpu or r.memory or r.ephemeral_storage or self.scalars)


def make_fit_request(
    requests: Resource,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
    dra: frozenset[str] = frozenset(),
) -> FitRequest:
    scalars = []
    for name in sorted(requests.scalar):
        quantity = requests.scalar[name]
        if quantity == 0:
            continue
        if is_extended_resource_name(name) and (name in ignored or name.split("/", 1)[0] in ignored_groups):
            continue
        scalars.append((name, quantity))
    return FitRequest(requests, tuple(scalars), dra)


def insufficient(request: FitRequest, alloc: Resource, used: Resource, pods: int) -> tuple[list[str], bool]:
    """Reasons the request does not fit (upstream's order) and whether even an empty node is too small."""
    reasons: list[str] = []
    unresolvable = False
    if pods + 1 > alloc.allowed_pod_number:
        reasons.append(REASON_TOO_MANY_PODS)
    if request.is_empty:
        return reasons, unresolvable
    r = request.requests
    for name, label in ((CPU, "cpu"), (MEMORY, "memory"), (EPHEMERAL_STORAGE, "ephemeral-storage")):
        want = r.get(name)
        if want > 0 and want > alloc.get(name) - used.get(name):
            reasons.append(f"Insufficient {label}")
            unresolvable |= want > alloc.get(name)
    for name, want in request.scalars:
        have = alloc.scalar.get(name, 0)
        if have <= 0 and name in request.dra:
            continue  # DynamicResources allocates it from devices on this node
        if want > have - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable |= want > have
    return reasons, unresolvable


def _status(reasons: list[str], unresolvable: bool) -> Status:
    return Status.unresolvable(*reasons) if unresolvable else Status.unschedulable(*reasons)


def _verdicts(
    rejected: np.ndarray,
    failed: np.ndarray,
    free_pods: np.ndarray,
    wanted: list[tuple[np.ndarray, np.ndarray, int, str]],
) -> NodeVerdicts:
    """One status per distinct (shortages, unresolvable) combination among the ``failed`` slots."""
    flags = [free_pods[failed] < 1]
    labels = [REASON_TOO_MANY_PODS]
    unresolvable = np.zeros(len(failed), dtype=bool)
    for alloc_col, free_col, want, label in wanted:
        short = free_col[failed] < want
        flags.append(short)
        labels.append(label)
        unresolvable |= short & (alloc_col[failed] < want)
    keyed = np.stack([*flags, unresolvable], axis=1)
    unique, inverse = np.unique(keyed, axis=0, return_inverse=True)
    status_ids = np.zeros(len(rejected), dtype=np.int32)
    status_ids[rejected] = inverse.reshape(-1)
    statuses = [
        _status([label for label, bad in zip(labels, row[:-1], strict=True) if bad], bool(row[-1]))
        for row in unique
    ]
    return NodeVerdicts(rejected, status_ids, statuses)


def _build_scorer(args: NodeResourcesFitArgs) -> tuple[tuple[str, ...], Scorer]:
    strategy = args.scoring_strategy
    resources = tuple(spec.name for spec in strategy.resources)
    weights = [spec.weight or 1 for spec in strategy.resources]
    if strategy.type == LEAST_ALLOCATED:
        return resources, LeastAllocated(weights)
    if strategy.type == MOST_ALLOCATED:
        return resources, MostAllocated(weights)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        shape = strategy.requested_to_capacity_ratio
        if not shape:
            raise ValueError("scoringStrategy.requestedToCapacityRatio.shape is required")
        return resources, RequestedToCapacityRatio(weights, [(p.utilization, p.score) for p in shape])
    raise ValueError(f"scoring strategy {strategy.type} is not supported")


@dataclass(slots=True, frozen=True)
class _DRAScoring:
    """This cycle's view for scoring DRA-backed extended resources: the classes serving the
    configured resources the pod asks for, the slices and the devices some claim holds."""

    classes: Mapping[str, Mapping[str, Any]]
    index: SliceIndex
    allocated: AllocatedDevices


class Fit:
    name: ClassVar[str] = names.NODE_RESOURCES_FIT

    __slots__ = (
        "_class_devices",
        "_class_maps",
        "_dra_resources",
        "_handle",
        "_ignored",
        "_ignored_groups",
        "_memo",
        "_resources",
        "_scorer",
    )

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeResourcesFitArgs()
        self._ignored = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)
        self._handle = handle
        self._resources, self._scorer = _build_scorer(args)
        self._memo = NodeMemo(np.int64)
        self._class_maps = ClassMaps()
        # the scored resources a DeviceClass may serve: (position in the scoring list, name)
        self._dra_resources = tuple(
            (i, name) for i, name in enumerate(self._resources) if is_dra_extended_resource_name(name)
        )
        self._class_devices: ClassDevices | None = None

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering and scoring depend on the pod's requests only, unless DRA would serve one
        of its extended resources (then, as upstream, the pod is not signed)."""
        if self._dra_backed(pod.requests):
            return (), Status.unschedulable(NOT_SIGNABLE)
        return (SignFragment(signers.RESOURCES, signers.resources(pod)),), None

    def _dra_backed(self, requests: Resource) -> frozenset[str]:
        """The requested scalar resources a DeviceClass serves (none without scalar requests)."""
        if not requests.scalar or self._handle is None:
            return frozenset()
        try:
            classes = self._class_maps.of(self._handle.lister(CLASSES).list())
        except KeyError:  # a handle without the DRA kinds: nothing is served by devices
            return frozenset()
        return frozenset(dra_backed(requests.scalar, classes))

    def _fit_request(self, pod: Pod) -> FitRequest:
        return make_fit_request(
            pod.requests, self._ignored, self._ignored_groups, self._dra_backed(pod.requests)
        )

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN), self._after_pod_event
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self._after_node_change,
            ),
            # a class serving a resource the pod asks for may make it fit (DRAExtendedResource)
            ClusterEventWithHint(
                ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                self._after_device_class_change,
            ),
        )

    @staticmethod
    def _after_device_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        name = (new.get("spec") or {}).get("extendedResourceName")
        if old is not None:
            if (old.get("spec") or {}).get("extendedResourceName") == name:
                return QueueingHint.SKIP
        elif DEVICE_CLASS_PREFIX + str((new.get("metadata") or {}).get("name", "")) in pod.requests.scalar:
            return QueueingHint.QUEUE  # a class's implicit name only comes with the class
        return QueueingHint.QUEUE if name and name in pod.requests.scalar else QueueingHint.SKIP

    def _after_pod_event(self, pod: Pod, old: Pod, new: Pod | None) -> QueueingHint:
        if new is None:
            # only a pod that held (or was about to hold) a node frees anything
            if not old.node_name and not old.nominated_node_name:
                return QueueingHint.SKIP
            return QueueingHint.QUEUE
        if new.uid == pod.uid:
            return QueueingHint.QUEUE
        if not new.node_name:
            return QueueingHint.SKIP
        shrank = _shrank_something_wanted(pod.requests, old.requests, new.requests)
        return QueueingHint.QUEUE if shrank else QueueingHint.SKIP

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        # Upstream's hint checks every requested resource, ignoredResources included: a pod
        # asking for an ignored resource that the node lacks is not requeued by this hint.
        request = make_fit_request(pod.requests, dra=self._dra_backed(pod.requests))
        reasons, _ = insufficient(request, new.allocatable, Resource(), 0)
        if reasons:
            return QueueingHint.SKIP  # it would not fit even on the empty node
        if old is None:
            return QueueingHint.QUEUE
        grew = _grew_something_wanted(request, old.allocatable, new.allocatable)
        return QueueingHint.QUEUE if grew else QueueingHint.SKIP

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_PRE_FILTER_KEY, self._fit_request(pod))
        return None, None

    def request_of(self, state: CycleState, pod: Pod) -> FitRequest:
        """What the pod asks of a node, as PreFilter wrote it (computed now when PreFilter did not
        run, as for a dry run's re-check)."""
        request = state.get(_PRE_FILTER_KEY)
        if request is None:
            request = self._fit_request(pod)
        return request

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        reasons, unresolvable = insufficient(
            self.request_of(state, pod), node_info.node.allocatable, node_info.requested, len(node_info.pods)
        )
        return _status(reasons, unresolvable) if reasons else None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        request = self.request_of(state, pod)
        if not request.scalars:
            # Fits even where the least is free? Then it fits everywhere (the usual case).
            least = table.min_free().tolist()
            r = request.requests
            if (
                least[cols.PODS] >= 1
                and r.milli_cpu <= least[cols.CPU]
                and r.memory <= least[cols.MEMORY]
                and r.ephemeral_storage <= least[cols.EPHEMERAL_STORAGE]
            ):
                return None
        # One comparison per wanted resource over whole contiguous columns of ``free``, then one
        # gather of the boolean result: most pods fit almost everywhere, and only the nodes that
        # fail are looked at again to word their reasons.
        free = table.free
        over = free[:, cols.PODS] < 1
        wanted = []
        if not request.is_empty:
            r = request.requests
            for column, want, label in (
                (cols.CPU, r.milli_cpu, _FIXED_REASONS[1]),
                (cols.MEMORY, r.memory, _FIXED_REASONS[2]),
                (cols.EPHEMERAL_STORAGE, r.ephemeral_storage, _FIXED_REASONS[3]),
            ):
                if want > 0:
                    over |= free[:, column] < want
                    wanted.append((table.alloc[:, column], free[:, column], want, label))
            for name, want in request.scalars:
                alloc_col, used_col = table.scalar(name)
                free_col = alloc_col - used_col
                if name in request.dra:  # left to DynamicResources where the node has none
                    free_col = np.where(alloc_col > 0, free_col, _NEVER_SHORT)
                over |= free_col < want
                wanted.append((alloc_col, free_col, want, f"Insufficient {name}"))
        over &= table.valid  # free rows read as full; they are never candidates
        if not over.any():
            return None
        rejected = over[slots]
        if not rejected.any():
            return None
        return _verdicts(rejected, slots[rejected], free[:, cols.PODS], wanted)

    # ------------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        requests = pod_request_list(pod, self._resources, non_zero=True)
        state.write(_PRE_SCORE_KEY, requests)
        state.write(_DRA_SCORE_KEY, self._dra_scoring(requests))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> tuple[int, ...]:
        requests = state.get(_PRE_SCORE_KEY)
        return pod_request_list(pod, self._resources, non_zero=True) if requests is None else requests

    def _dra_view(self, state: CycleState, requests: Sequence[int]) -> _DRAScoring | None:
        if state.get(_PRE_SCORE_KEY) is None:  # Score without PreScore: as upstream, work it out
            return self._dra_scoring(requests)
        view: _DRAScoring | None = state.get(_DRA_SCORE_KEY)
        return view

    def _dra_scoring(self, requests: Sequence[int]) -> _DRAScoring | None:
        """None unless the pod asks for a scored resource that a DeviceClass serves (a resource
        the pod does not ask for is not scored, so its devices need no counting)."""
        wanted = [name for i, name in self._dra_resources if requests[i]]
        if not wanted or self._handle is None:
            return None
        try:
            classes = self._class_maps.of(self._handle.lister(CLASSES).list())
            served = {name: classes[name] for name in wanted if name in classes}
            if not served:
                return None
            shared = shared_dra(self._handle)
            index = shared.slice_index(self._handle)
        except KeyError:  # a handle without the DRA kinds: nothing is served by devices
            return None
        if self._class_devices is None:
            self._class_devices = ClassDevices(shared.selectors)
        return _DRAScoring(served, index, shared.tracker.allocated_devices())

    def _add_devices(
        self,
        view: _DRAScoring,
        node: Node,
        requests: Sequence[int],
        requested: MutableSequence[int],
        allocatable: MutableSequence[int],
    ) -> None:
        """Where the node does not advertise a DRA-backed resource, its devices stand in."""
        assert self._class_devices is not None
        for i, name in self._dra_resources:
            cls = view.classes.get(name)
            if cls is None or not requests[i] or allocatable[i]:
                continue
            capacity, used = self._class_devices.counts(
                view.index, cls, node.name, node.labels, view.allocated
            )
            if capacity:
                allocatable[i] = capacity
                requested[i] = used + requests[i]

    def _add_device_columns(
        self,
        view: _DRAScoring,
        table: NodeTable,
        slots: np.ndarray,
        requests: Sequence[int],
        requested: np.ndarray,
        allocatable: np.ndarray,
    ) -> None:
        """``_add_devices`` for the columns of many nodes at once."""
        assert self._class_devices is not None
        counts = self._class_devices.counts
        infos = table.infos
        for i, name in self._dra_resources:
            cls = view.classes.get(name)
            if cls is None or not requests[i]:
                continue
            columns = np.flatnonzero(allocatable[i] == 0)
            found = []
            for slot in slots[columns].tolist():
                info = infos[slot]
                assert info is not None  # slots are rows of nodes
                found.append(counts(view.index, cls, info.node.name, info.node.labels, view.allocated))
            if not found:
                continue
            capacity, used = np.array(found, dtype=np.int64).T
            has = capacity > 0
            allocatable[i, columns[has]] = capacity[has]
            requested[i, columns[has]] = used[has] + requests[i]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        requests = self._pod_requests(state, pod)
        requested, allocatable = node_lists(node_info, self._resources, requests, non_zero=True)
        view = self._dra_view(state, requests)
        if view is not None:
            self._add_devices(view, node_info.node, requests, requested, allocatable)
        return self._scorer.score_one(requested, allocatable)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        scorer = self._scorer
        requests = self._pod_requests(state, pod)
        view = self._dra_view(state, requests)
        if view is not None:
            # claims change without the table's rows changing: no memo, each node's devices added
            requested, allocatable = table_matrices(table, slots, self._resources, requests, True)
            self._add_device_columns(view, table, slots, requests, requested, allocatable)
            return scorer.score_many(requested, allocatable)
        return memoised_scores(
            self._memo,
            table,
            slots,
            self._resources,
            requests,
            True,
            scorer.score_one,
            scorer.score_many,
        )


def _shrank_something_wanted(wanted: Resource, old: Resource, new: Resource) -> bool:
    """Did a pod's scale-down free a resource the pending pod asks for?"""
    return any(wanted.get(name) and new.get(name) < old.get(name) for name in wanted.names())


def _grew_something_wanted(request: FitRequest, old: Resource, new: Resource) -> bool:
    """Did the node's allocatable grow in the pod count or in a resource the pod asks for?"""
    if new.allowed_pod_number > old.allowed_pod_number:
        return True
    if request.is_empty:
        return False
    r = request.requests
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        if r.get(name) > 0 and new.get(name) > old.get(name):
            return True
    return any(new.scalar.get(name, 0) > old.scalar.get(name, 0) for name, _ in request.scalars)
