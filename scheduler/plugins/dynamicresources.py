"""DynamicResources: pods with ResourceClaims get devices, as kube-scheduler v1.36.2 allocates them.

PreEnqueue holds a pod until its claims exist (generated ones too); PreFilter reads the pod's
claims, checks their device classes and prepares one allocator for the cycle over the
ResourceSlices and every device already allocated (assumed allocations included); Filter
allocates the unallocated claims on each node (and checks the node selector of allocated ones);
Score prefers nodes where firstAvailable requests got an earlier alternative; Reserve assumes the
node's allocation in the claim tracker, so the next pod's cycle already sees those devices taken;
Unreserve takes it back; PreBind writes ``status.allocation`` and adds the pod to
``status.reservedFor`` (shared claims: only the latter); PostFilter deallocates an allocated claim
that kept the pod off every node, when no other pod uses it. Messages are upstream's.

Extended resources backed by DRA (DRAExtendedResource, see scheduler.dra.extended): a pod
requesting a resource a DeviceClass serves gets one more claim, held in memory, whose requests
Filter builds for each node not advertising the resource and allocates with the pod's other
claims; Reserve assumes it under a key of its own; PreBind creates it (owned by the pod), writes
allocation and reservation and records it in the pod's ``status.extendedResourceClaimStatus``;
Unreserve deletes a created one. A special claim left from an earlier cycle is deleted by
PostFilter, and the pod tried anew.

Binding conditions (DRADeviceBindingConditions): PreBind writes the allocation (with an
``allocationTimestamp``) and the reservation, then, when a device has binding conditions, waits
in the binding cycle (the scheduling loop goes on; NominatedNodeName tells where the pod goes)
until the driver sets them all True in the claim's ``status.devices``, looking every 5 s as
upstream, for at most ``bindingTimeout``. A failure condition or the timeout fails PreBind: the
pod is unreserved and retried, and then its claim, failed or allocated too long ago, is not
available on any node, so PostFilter deallocates it for the next attempt.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Pod
from scheduler.api.selectors import NodeSelector, SelectorError
from scheduler.config import DynamicResourcesArgs
from scheduler.dra import binding, extended
from scheduler.dra.allocator import (
    AllocationTimeout,
    Allocator,
    ClaimError,
    NodeAllocation,
    NodeFailure,
    claim_ref,
)
from scheduler.dra.claims import (
    AllocatedDevices,
    ClaimProblem,
    ClaimTracker,
    UnsupportedClaim,
    allocation_of,
    can_be_reserved,
    claim_key,
    claim_name,
    claim_uid,
    is_for_pod,
    is_reserved_for_pod,
    reserved_for,
)
from scheduler.dra.memo import Answer
from scheduler.dra.settled import NO_FIT, UNKNOWN, Settled
from scheduler.dra.shared import SharedDRA, shared_dra
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Handle,
    NodeInfo,
    NodeLister,
    NodeTable,
    NodeVerdicts,
    PostFilterResult,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
)
from scheduler.framework.interface import DEVICE_CLASS, NODE, POD, RESOURCE_CLAIM, RESOURCE_SLICE
from scheduler.plugins import names
from scheduler.plugins.helper import default_normalize_score

log = logging.getLogger(__name__)

NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
NOT_SIGNABLE = "pods with dra resource claims are not signable"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
_CANNOT_ALLOCATE = Status.unresolvable(CANNOT_ALLOCATE)
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"
CANNOT_SCHEDULE_EXTENDED = "cannot schedule extended resource claim"
CANNOT_FIT_RESOURCE = "cannot fit resource"
# how long PreBind waits for the informer to show a special claim it created (upstream's)
CREATED_CLAIM_WAIT = 120.0
CREATED_CLAIM_POLL = 0.05
STILL_NOT_SCHEDULABLE = "still not schedulable"
FINALIZER = "resource.kubernetes.io/delete-protection"
FIRST_AVAILABLE_MAX_SIZE = 8  # upstream's FirstAvailableDeviceRequestMaxSize
CONFLICT_RETRIES = 5
BINDING_CONDITIONS_POLL = 5.0  # how often PreBind looks at the binding conditions (upstream's)

_STATE_KEY = names.DYNAMIC_RESOURCES
CLAIMS = "resourceclaims"
CLASSES = "deviceclasses"


@dataclass(slots=True)
class _State:
    """What PreFilter found out about the pod's claims, for the later extension points."""

    claims: list[Mapping[str, Any]] = field(default_factory=list)
    available_on: list[NodeSelector | None] = field(default_factory=list)
    unready: list[int] = field(default_factory=list)  # allocated claims whose binding failed or timed out
    node_bound: bool = False  # some claim is only usable on some nodes (the two lists above)
    allocator: Allocator | None = None
    by_node: dict[str, NodeAllocation] = field(default_factory=dict)
    # the batch Filter's kept answers of the nodes that fit without a search (``found``)
    settled: Mapping[str, Answer] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[int, dict[str, Any]] = field(default_factory=dict)  # claim index -> Reserve's
    # extended resources backed by DRA: the special claim's index in ``claims``, the tracker key
    # it is assumed under, the pod's DRA-nameable requests and which classes serve them
    special: int | None = None
    pending_key: str = ""
    extended_requests: list[tuple[str, int]] = field(default_factory=list)
    classes: extended.ClassMap = field(default_factory=dict)
    make_allocator: Any = None  # claims -> Allocator over this cycle's slices and devices
    allocated: AllocatedDevices | None = None  # the devices taken, once read this cycle
    # per set of resources left to DRA on a node: the node's special claim, its container
    # mapping and an allocator for it with the user's claims
    variants: dict[tuple[tuple[str, int], ...], _Variant] = field(default_factory=dict)
    extended_by_node: dict[str, _Variant] = field(default_factory=dict)

    def clone(self) -> _State:
        return self  # shared, as upstream's: Filter results stay valid in preemption's dry runs

    def found(self, node_name: str) -> NodeAllocation | None:
        """What Filter found on the node: by a search, or from a settled answer."""
        found = self.by_node.get(node_name)
        if found is None and self.allocator is not None:
            answer = self.settled.get(node_name)
            if answer is not None:
                found = self.by_node[node_name] = self.allocator.from_answer(answer, node_name)
        return found

    def to_allocate(self) -> list[int]:
        return [i for i, claim in enumerate(self.claims) if allocation_of(claim) is None]

    def has_user_claims(self) -> bool:
        return len(self.claims) > (self.special is not None)


@dataclass(slots=True)
class _Variant:
    claim: dict[str, Any]
    mappings: list[dict[str, str]]
    allocator: Allocator


class DynamicResources:
    name: ClassVar[str] = names.DYNAMIC_RESOURCES

    def __init__(self, args: DynamicResourcesArgs | None, handle: Handle) -> None:
        self._handle = handle
        # DRASchedulerFilterTimeout (beta, on): how long one node's allocation may search
        self._filter_timeout = (args or DynamicResourcesArgs()).filter_timeout
        self._binding_timeout = (args or DynamicResourcesArgs()).binding_timeout
        # wall time (for allocation timestamps) as the injectable clock moves
        self._epoch = time.time() - handle.clock.now()
        self._shared: SharedDRA | None = None
        self._reported_slices: set[str] = set()
        self._background: set[asyncio.Task[None]] = set()
        # set when this replica stops scheduling: PreBind stops waiting for binding conditions
        self._stopping = asyncio.Event()

    async def run_in_background(self) -> None:
        """Nothing to do meanwhile; once cancelled (the replica stops scheduling), PreBind's
        waits for binding conditions end, as upstream's end with the scheduler's context."""
        self._stopping.clear()
        try:
            await asyncio.Event().wait()
        finally:
            self._stopping.set()

    def _wall_time(self) -> float:
        return self._epoch + self._handle.clock.now()

    @property
    def shared(self) -> SharedDRA:
        # looked up on first use: the listers exist once the informers do, after the profiles
        if self._shared is None:
            self._shared = shared_dra(self._handle)
        return self._shared

    @property
    def tracker(self) -> ClaimTracker:
        return self.shared.tracker

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """A pod with resource claims is not signed (as upstream, which cannot yet tell which
        claims only depend on the node); any other pod needs nothing of this plugin."""
        if pod.resource_claims:
            return (), Status.unschedulable(NOT_SIGNABLE)
        return (), None

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        # queueing hints are on (GA): no UpdateNodeTaint, as upstream then
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        return (
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_CLAIM, add_update), self._after_claim_change),
            # Not registered upstream, whose claim controller deallocates (an update) before a
            # claim goes: a deleted allocated claim frees its devices all the same.
            ClusterEventWithHint(ClusterEvent(RESOURCE_CLAIM, ActionType.DELETE), self._after_claim_delete),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM), self._after_pod_change
            ),
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, add_update)),
        )

    def _after_claim_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        deallocated = old is not None and allocation_of(old) is not None and allocation_of(new) is None
        try:
            if not deallocated and claim_key(new) not in self._claim_keys(pod):
                return QueueingHint.SKIP  # not the pod's: no need to look its claims up
            uids = {claim_uid(c) for c in self._pod_claims(pod)}
        except ClaimProblem:
            return QueueingHint.SKIP
        if deallocated:
            return QueueingHint.QUEUE  # its devices are free again
        if claim_uid(new) not in uids:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if old.get("status") == new.get("status") else QueueingHint.QUEUE

    @staticmethod
    def _after_claim_delete(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if old is None:
            return QueueingHint.SKIP
        if allocation_of(old) is not None or extended.special_owner(old) == pod.uid:
            return QueueingHint.QUEUE  # devices freed, or the pod's stale special claim is gone
        return QueueingHint.SKIP

    def _after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Pod) or new.uid != pod.uid:
            return QueueingHint.SKIP
        try:
            self._pod_claims(new)
        except ClaimProblem:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # ------------------------------------------------------------------ claims of a pod

    @staticmethod
    def _claim_keys(pod: Pod) -> set[str]:
        """The keys of the claims the pod names; ClaimProblem as ``_pod_claims`` raises it."""
        keys = set()
        for pod_claim in pod.resource_claims:
            name, _ = claim_name(pod, pod_claim)
            if name is not None:
                keys.add(f"{pod.namespace}/{name}")
        return keys

    def _pod_claims(self, pod: Pod) -> list[Mapping[str, Any]]:
        """The pod's claims as the scheduler sees them; ClaimProblem when one cannot be used."""
        claims = []
        for pod_claim in pod.resource_claims:
            name, must_own = claim_name(pod, pod_claim)
            if name is None:
                continue  # deliberately not generated
            claim = self.tracker.get(f"{pod.namespace}/{name}")
            if claim is None:
                raise ClaimProblem(f'resourceclaim.resource.k8s.io "{name}" not found')
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                raise ClaimProblem(f'resourceclaim "{name}" is being deleted')
            if must_own:
                is_for_pod(pod, claim)
            claims.append(claim)
        return claims

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.resource_claims:
            return None
        try:
            self._pod_claims(pod)
        except UnsupportedClaim:
            # Upstream's API server refuses such a pod; held here it would wait in silence, so
            # PreFilter reports it (with the same message) as unschedulable instead.
            return None
        except ClaimProblem as exc:
            return Status.unresolvable(str(exc))
        return None

    # ------------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        data = _State()
        state.write(_STATE_KEY, data)
        special = self._extended_claim(pod, data) if pod.requests.scalar else None
        if not pod.resource_claims and special is None:
            return None, Status.skip()
        try:
            claims = self._pod_claims(pod)
        except ClaimProblem as exc:
            return None, Status.unresolvable(str(exc))
        if special is not None:
            data.special = len(claims)
            data.pending_key = f"{pod.namespace}/{extended.IN_MEMORY_NAME}/{pod.uid}"
            claims.append(special)
        if not claims:
            return None, Status.skip()
        available_on: list[NodeSelector | None] = []
        to_allocate = 0
        for position, claim in enumerate(claims):
            allocation = allocation_of(claim)
            if allocation is not None:
                if not can_be_reserved(claim) and not is_reserved_for_pod(pod, claim):
                    return None, Status.unresolvable("resourceclaim in use")
                try:
                    selector = allocation.get("nodeSelector")
                    available_on.append(NodeSelector.parse(selector) if selector else None)
                except SelectorError as exc:
                    return None, Status.from_error(exc)
                if not self._may_bind(claim):
                    data.unready.append(position)
                continue
            available_on.append(None)
            to_allocate += 1
            if position == data.special:
                continue  # its requests are made per node, by Filter
            if self.tracker.is_pending(claim_key(claim)):
                return None, Status.unresolvable(
                    f"resource claim {claim_ref(claim)} is in the process of being allocated"
                )
            problem = self._check_requests(claim)
            if problem is not None:
                return None, problem
        data.claims, data.available_on = claims, available_on
        data.node_bound = bool(data.unready) or any(s is not None for s in available_on)
        if to_allocate:
            index = self.shared.slice_index(self._handle)
            self._report_bad_slices()
            classes = self._handle.lister(CLASSES)
            allocated = data.allocated if data.allocated is not None else self.tracker.allocated_devices()

            def make_allocator(to_allocate: Sequence[Mapping[str, Any]]) -> Allocator:
                return Allocator(
                    index,
                    allocated,
                    classes.get,
                    self.shared.selectors,
                    to_allocate,
                    timeout=self._filter_timeout,
                    memo=self.shared.memo,
                )

            data.make_allocator = make_allocator
            unallocated = [data.claims[i] for i in data.to_allocate() if i != data.special]
            if unallocated:
                try:
                    data.allocator = make_allocator(unallocated)
                except ClaimError as exc:
                    return None, Status.from_error(exc)
        return None, None

    def _extended_claim(self, pod: Pod, data: _State) -> Mapping[str, Any] | None:
        """The pod's special claim when a DeviceClass serves one of its requests: the one an
        earlier cycle created, else a new one in memory."""
        try:
            classes = self.shared.class_maps.of(self._handle.lister(CLASSES).list())
        except KeyError:  # a handle without the DRA kinds: no resource is served by devices
            return None
        if not extended.dra_backed(pod.requests.scalar, classes):
            return None
        data.classes = classes
        data.extended_requests = [
            (name, quantity)
            for name, quantity in sorted(pod.requests.scalar.items())
            if quantity and extended.is_dra_extended_resource_name(name)
        ]
        data.allocated = self.tracker.allocated_devices()  # which also finds the special claims
        found = self.tracker.special_claim(pod.uid)
        if found is not None and extended.is_special_for(pod, found):
            return found
        return extended.in_memory_claim(pod)

    def _may_bind(self, claim: Mapping[str, Any]) -> bool:
        """An allocated claim can still be bound: its binding neither failed nor timed out."""
        try:
            ready = binding.is_ready(claim)
        except binding.BindingFailed as exc:
            log.debug("claim %s failed binding conditions check: %s", claim_key(claim), exc)
            return False
        if not ready and binding.timed_out(claim, self._binding_timeout, self._wall_time()):
            log.debug("claim %s timed out waiting for binding conditions", claim_key(claim))
            return False
        return True

    def _check_requests(self, claim: Mapping[str, Any]) -> Status | None:
        """Every request names an existing class."""
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            name = str(request.get("name", ""))
            if request.get("exactly"):
                alternatives = [(name, request["exactly"])]
            elif request.get("firstAvailable"):
                alternatives = [(f"{name}/{sub.get('name', '')}", sub) for sub in request["firstAvailable"]]
            else:
                return Status.unresolvable(
                    f"resource claim {claim_ref(claim)}, request {name}: unknown request type"
                )
            for qualified, raw in alternatives:
                class_name = raw.get("deviceClassName")
                if not class_name:
                    return Status.from_error(ValueError(f"request {qualified}: unsupported request type"))
                if self._handle.lister(CLASSES).get(str(class_name)) is None:
                    return Status.unresolvable(
                        f"request {qualified}: device class {class_name} does not exist"
                    )
        return None

    def _report_bad_slices(self) -> None:
        for name, error in self.shared.slices.errors.items():
            if name not in self._reported_slices:
                self._reported_slices.add(name)
                log.warning("ResourceSlice %s left out: %s", name, error)

    # ------------------------------------------------------------------ Filter and Score

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return None
        node = node_info.node
        variant: _Variant | None = None
        if data.special is not None:
            outcome = self._extended_variant(data, pod, node_info)
            if isinstance(outcome, Status):
                return outcome
            variant = outcome
            if variant is None and not data.has_user_claims():
                return None  # the node's own allocatable serves the pod: NodeResourcesFit's part
        if data.node_bound:
            unavailable = [
                i
                for i, selector in enumerate(data.available_on)
                if (selector is not None and not selector.matches(node.labels, node.name))
                or i in data.unready
            ]
            if unavailable:
                data.unavailable.update(unavailable)
                return Status.unresolvable(NOT_AVAILABLE)
        allocator = variant.allocator if variant is not None else data.allocator
        if allocator is None:
            return None
        status = self._allocate_on(data, allocator, node.name, node.labels)
        if status is None and variant is not None:
            data.extended_by_node[node.name] = variant
        return status

    @staticmethod
    def _allocate_on(
        data: _State,
        allocator: Allocator,
        node_name: str,
        labels: Mapping[str, str],
        settled: tuple[Settled, int] | None = None,
    ) -> Status | None:
        """The allocator's search on one node, kept for Reserve when it found devices (and
        settled for the next batch, given the batch answers and the node's slot)."""
        try:
            if settled is None:
                allocations = allocator.allocate(node_name, labels)
            else:
                allocations = allocator.allocate_settled(settled[0], settled[1], node_name, labels)
        except NodeFailure as exc:
            return Status.unresolvable(str(exc))
        except AllocationTimeout:
            # possibly transient: an error, so the pod is retried with backoff
            return Status.from_error(TimeoutError(f"node {node_name}: timed out trying to allocate devices"))
        except ClaimError as exc:
            return Status.from_error(exc)
        if allocations is None:
            return _CANNOT_ALLOCATE
        data.by_node[node_name] = allocations
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        """Filter's answer for every slot, in slot order, without the framework's per-node calls.
        Equal rejections share one status; the first node's Error is raised, as batch filters
        report errors (its message is the per-node form's)."""
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return None
        # the common case (user claims to allocate, none bound to nodes) goes straight to the search
        allocator = data.allocator if data.special is None and not data.node_bound else None
        if allocator is not None:
            return self._filter_settled(data, allocator, allocator.settled(table), table, slots)
        infos = table.infos
        verdicts = _Verdicts(len(slots))
        for i, slot in enumerate(slots.tolist()):
            verdicts.add(i, self.filter(state, pod, infos[slot]))
        return verdicts.result()

    def _filter_settled(
        self, data: _State, allocator: Allocator, settled: Settled, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | None:
        """The common case's batch: nodes whose answer for the claims' shape stands since the
        last batch (``scheduler.dra.settled``) are judged by it, the others searched."""
        infos = table.infos
        known = settled.state[slots]  # as settled before this batch's searches
        verdicts = _Verdicts(len(slots))
        allocate_on = self._allocate_on
        unknown = np.flatnonzero(known == UNKNOWN)
        for i, slot in zip(unknown.tolist(), slots[unknown].tolist(), strict=True):
            node = infos[slot].node
            verdicts.add(i, allocate_on(data, allocator, node.name, node.labels, (settled, slot)))
        verdicts.add_all(known == NO_FIT, _CANNOT_ALLOCATE)
        data.settled = settled.answers
        return verdicts.result()

    def shortages(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> list[str]:
        """For explain, on a node Filter rejected: per request of the pod's claims that no device
        serves alone, the counters or capacity that ran out (``Allocator.shortages``)."""
        data: _State | None = state.get(_STATE_KEY)
        if data is None or data.allocator is None:
            return []
        try:
            return data.allocator.shortages(node_info.node.name, node_info.node.labels)
        except (ClaimError, NodeFailure):
            return []  # Filter reported those itself

    def _extended_variant(self, data: _State, pod: Pod, node_info: NodeInfo) -> Status | _Variant | None:
        """What the special claim asks of this node: the resources a class serves and the node
        does not advertise; None when there are none (or the claim is allocated already)."""
        assert data.special is not None
        claim = data.claims[data.special]
        if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
            # made in an earlier cycle: PostFilter deletes it and the pod is tried anew
            return Status.unresolvable(CANNOT_SCHEDULE_EXTENDED)
        allocatable = node_info.node.allocatable.scalar
        wanted = []
        for name, quantity in data.extended_requests:
            have = allocatable.get(name)
            if name in data.classes and not have:
                wanted.append((name, quantity))
            elif have is None:
                return Status.unresolvable(CANNOT_FIT_RESOURCE)
        if not wanted or allocation_of(claim) is not None:
            return None
        key = tuple(wanted)
        variant = data.variants.get(key)
        if variant is None:
            requests, mappings = extended.requests_and_mappings(
                pod, [name for name, _ in wanted], data.classes
            )
            node_claim = copy.deepcopy(dict(claim))
            node_claim["spec"] = {"devices": {"requests": requests}}
            user = [data.claims[i] for i in data.to_allocate() if i != data.special]
            try:
                allocator = data.make_allocator([*user, node_claim])
            except ClaimError as exc:
                return Status.from_error(exc)
            variant = data.variants[key] = _Variant(node_claim, mappings, allocator)
        return variant

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Only firstAvailable requests score; every other pod skips Score (all zeros)."""
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not any(_has_alternatives(c) for c in data.claims):
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        data: _State = state.read(_STATE_KEY)
        found = data.found(node_info.node.name)
        allocations = iter(found.results() if found is not None else ())
        total = 0
        for claim in data.claims:
            allocation = allocation_of(claim) or next(allocations, None)
            if allocation is None:
                continue
            chosen = {r.get("request") for r in (allocation.get("devices") or {}).get("results") or ()}
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
                for i, sub in enumerate(request.get("firstAvailable") or ()):
                    if f"{request.get('name')}/{sub.get('name')}" in chosen:
                        total += FIRST_AVAILABLE_MAX_SIZE - i
        return total

    def normalize_scores(self, state: CycleState, pod: Pod, scores: np.ndarray) -> None:
        default_normalize_score(scores, reverse=False)

    # ------------------------------------------------------------------ PostFilter

    async def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return None, Status.unschedulable(NO_CLAIMS_TO_DEALLOCATE)
        stale = data.special is not None and not extended.is_in_memory(data.claims[data.special])
        for index in sorted(data.unavailable):
            if index == data.special:
                if stale:
                    break
                continue
            claim = data.claims[index]
            users = reserved_for(claim)
            if not users or (len(users) == 1 and users[0].get("uid") == pod.uid):
                updated = copy.deepcopy(dict(claim))
                status = updated.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                meta = claim.get("metadata") or {}
                path = _claim_path(str(meta.get("namespace", "")), str(meta.get("name", ""))) + "/status"
                response = await self._handle.client.request("PUT", path, updated)
                if response.status >= 300:
                    return None, Status.from_error(RuntimeError(_api_error(response)))
                return None, Status.unschedulable(DEALLOCATED)
        if stale:
            assert data.special is not None
            try:
                await self._delete_claim(data.claims[data.special])
            except BindFailure as exc:
                return None, Status.from_error(exc)
            return None, Status.unschedulable(DELETED)
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)

    # ------------------------------------------------------------------ Reserve / Unreserve

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return None
        variant = data.extended_by_node.get(node_name)
        # the special claim is allocated only where the node left resources to DRA
        indexes = [i for i in data.to_allocate() if i != data.special or variant is not None]
        if not indexes:
            return None
        found = data.found(node_name)
        if found is None:
            return Status.from_error(RuntimeError("claim allocation not found for node"))
        try:
            allocations = found.results()
        except ClaimError as exc:
            return Status.from_error(exc)
        if len(allocations) != len(indexes):
            return Status.from_error(
                RuntimeError(
                    f"internal error, have {len(allocations)} allocations, {len(indexes)} claims to "
                    f"allocate, want {len(indexes)} claims"
                )
            )
        for index, allocation in zip(indexes, allocations, strict=True):
            data.allocations[index] = allocation
            special = index == data.special and variant is not None
            claim = copy.deepcopy(
                variant.claim if special and variant is not None else dict(data.claims[index])
            )
            finalizers = claim.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            claim.setdefault("status", {})["allocation"] = allocation
            self.tracker.reserve(claim, data.pending_key if special else None)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return
        for index, claim in enumerate(data.claims):
            if index == data.special:
                continue
            self.tracker.restore(claim_key(claim))
            current = self.tracker.get(claim_key(claim)) or claim
            if allocation_of(current) is not None and is_reserved_for_pod(pod, current):
                self._spawn(self._remove_reservation(current, pod))
        if data.special is not None:
            self.tracker.restore(data.pending_key)
            special = data.claims[data.special]
            if not extended.is_in_memory(special):  # created by PreBind (or an earlier cycle)
                self._spawn(self._delete_logged(special))

    def _spawn(self, work: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:  # no loop: nothing was written for the pod either
            work.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _remove_reservation(self, claim: Mapping[str, Any], pod: Pod) -> None:
        """Take the pod out of ``reservedFor``. Upstream sends a strategic-merge delete by uid;
        this JSON patch does the same, guarded by tests, so a claim that changed meanwhile
        (another uid, another position) is left alone rather than losing someone else's entry."""
        meta = claim.get("metadata") or {}
        position = next(i for i, r in enumerate(reserved_for(claim)) if r.get("uid") == pod.uid)
        entry = f"/status/reservedFor/{position}"
        patch = [
            {"op": "test", "path": "/metadata/uid", "value": meta.get("uid")},
            {"op": "test", "path": f"{entry}/uid", "value": pod.uid},
            {"op": "remove", "path": entry},
        ]
        path = _claim_path(str(meta.get("namespace", "")), str(meta.get("name", ""))) + "/status"
        try:
            response = await self._handle.client.request(
                "PATCH", path, patch, content_type="application/json-patch+json"
            )
            if response.status >= 300:
                log.error("unreserve %s: %s", claim_key(claim), _api_error(response))
        except Exception as exc:
            log.error("unreserve %s: %s", claim_key(claim), exc)

    # ------------------------------------------------------------------ PreBind

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        return Status.skip() if data is None or not data.claims else None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or not data.claims:
            return None
        for index, claim in enumerate(data.claims):
            if is_reserved_for_pod(pod, claim):
                continue
            if index == data.special:
                if index not in data.allocations:
                    continue  # the node's allocatable served the pod: no claim to write
                try:
                    await self._bind_extended(data, pod, node_name)
                except BindFailure as exc:
                    self.tracker.restore(data.pending_key)
                    return Status.from_error(exc)
                continue
            try:
                data.claims[index] = await self._bind_claim(claim, data.allocations.get(index), pod)
            except BindFailure as exc:
                self.tracker.restore(claim_key(claim))
                return Status.from_error(exc)
        if not any(binding.has_binding_conditions(c) for c in data.claims):
            return None
        return await self._await_binding_conditions(data, pod, node_name)

    async def _await_binding_conditions(self, data: _State, pod: Pod, node_name: str) -> Status | None:
        """Until the drivers set every binding condition True: an error on a failure condition,
        or once ``bindingTimeout`` passed (upstream's messages). The claims are read as the
        scheduler sees them, every 5 s (the first time at once). The wait and its outcome are
        recorded in upstream's binding-conditions metrics."""
        self._handle.record_event(
            pod,
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
        )
        started = self._handle.clock.now()
        outcome, status = await self._wait_for_binding_conditions(data, pod, node_name)
        metrics = self._handle.metrics
        if metrics is not None:
            every, conditioned = binding.device_drivers(data.claims)
            waited = self._handle.clock.now() - started
            metrics.binding_conditions_waited(
                self._handle.scheduler_name, outcome, waited, every, conditioned
            )
        return status

    async def _wait_for_binding_conditions(
        self, data: _State, pod: Pod, node_name: str
    ) -> tuple[str, Status | None]:
        """How the wait ended (upstream's metric status: success, failure, timeout or error) and
        PreBind's answer."""
        clock = self._handle.clock
        deadline = clock.now() + self._binding_timeout
        while True:
            try:
                if self._ready_for_binding(data):
                    log.debug("binding conditions of pod %s on %s are met", pod.key, node_name)
                    return binding.SUCCESS, None
            except binding.BindingFailed as exc:
                return binding.FAILURE, Status.from_error(exc)
            except _ClaimTimedOut as exc:
                return binding.TIMEOUT, Status.from_error(exc)
            except BindFailure as exc:
                return binding.ERROR, Status.from_error(exc)
            if clock.now() + BINDING_CONDITIONS_POLL >= deadline:
                if not await self._sleep(max(0.0, deadline - clock.now())):
                    return binding.ERROR, Status.from_error(RuntimeError("context canceled"))
                pending = "; ".join(filter(None, (binding.summary(c) for c in data.claims)))
                log.info("binding conditions of pod %s on %s timed out: %s", pod.key, node_name, pending)
                return binding.TIMEOUT, Status.from_error(
                    TimeoutError(f"{binding.BINDING_TIMEOUT}: context deadline exceeded")
                )
            if not await self._sleep(BINDING_CONDITIONS_POLL):
                return binding.ERROR, Status.from_error(RuntimeError("context canceled"))

    async def _sleep(self, delay: float) -> bool:
        """Sleep on the clock; False (at once) when the replica stops scheduling meanwhile."""
        if self._stopping.is_set():
            return False
        sleeping = asyncio.ensure_future(self._handle.clock.sleep(delay))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait((sleeping, stopping), return_when=asyncio.FIRST_COMPLETED)
        sleeping.cancel()
        stopping.cancel()
        return not self._stopping.is_set()

    def _ready_for_binding(self, data: _State) -> bool:
        """Every claim of the pod as the scheduler sees it now is ready for binding; raises when
        a binding failed or a claim timed out."""
        for index, claim in enumerate(data.claims):
            if index == data.special and index not in data.allocations:
                continue  # the node's allocatable served the pod: no claim
            current = self.tracker.get(claim_key(claim))
            if current is None:
                raise BindFailure(f"claim {claim_ref(claim)} got deleted in the meantime")
            data.claims[index] = current
            if not binding.is_ready(current):
                if binding.timed_out(current, self._binding_timeout, self._wall_time()):
                    name = (current.get("metadata") or {}).get("name", "")
                    raise _ClaimTimedOut(f"{binding.BINDING_TIMEOUT}: claim={name}")
                return False
        return True

    async def _bind_extended(self, data: _State, pod: Pod, node_name: str) -> None:
        """Create the special claim, record its allocation and reservation, wait until the
        informer shows it (its devices stay assumed meanwhile) and name it in the pod's status.
        ``data.claims`` holds the created claim from then on, so Unreserve deletes it."""
        assert data.special is not None
        variant = data.extended_by_node.get(node_name)
        if variant is None:
            raise BindFailure(f"extended resource claim not found for node {node_name}")
        body = copy.deepcopy(variant.claim)
        meta = body["metadata"]
        for key in ("name", "uid"):
            meta.pop(key, None)
        body.pop("status", None)
        namespace = pod.namespace
        path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
        response = await self._handle.client.request("POST", path, body)
        metrics = self._handle.metrics
        if metrics is not None:
            metrics.resource_claim_created("failure" if response.status >= 300 else "success")
        if response.status >= 300:
            raise BindFailure(f"create claim for extended resources {namespace}/: {_api_error(response)}")
        created: Mapping[str, Any] = response.body
        data.claims[data.special] = created
        bound = await self._bind_claim(created, data.allocations[data.special], pod)
        data.claims[data.special] = bound
        await self._await_informer(bound)
        self.tracker.restore(data.pending_key)
        if not variant.mappings:
            raise BindFailure(
                f"nil or empty request mappings, no update of pod {namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        status = {
            "resourceClaimName": (bound.get("metadata") or {}).get("name"),
            "requestMappings": variant.mappings,
        }
        response = await self._handle.client.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{pod.name}/status",
            {"status": {"extendedResourceClaimStatus": status}},
            content_type="application/merge-patch+json",
        )
        if response.status >= 300:
            raise BindFailure(
                f"update pod {namespace}/{pod.name} ExtendedResourceClaimStatus: {_api_error(response)}"
            )

    async def _await_informer(self, claim: Mapping[str, Any]) -> None:
        """Until the informer shows the created claim allocated, its devices are only known from
        the pending allocation, which the caller keeps till then (bounded, as upstream's wait
        for its assume cache); past the bound the API's answer stands in for it."""
        key = claim_key(claim)
        lister = self._handle.lister(CLAIMS)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CREATED_CLAIM_WAIT
        while allocation_of(lister.get(key) or {}) is None:
            if loop.time() >= deadline:
                log.info("claim %s not seen allocated by the informer after %.0f s", key, CREATED_CLAIM_WAIT)
                self.tracker.written(claim)
                return
            await asyncio.sleep(CREATED_CLAIM_POLL)

    async def _delete_claim(self, claim: Mapping[str, Any]) -> None:
        """Delete a special claim: first drop the delete-protection finalizer (retrying on
        conflicts), then the claim."""
        client = self._handle.client
        meta = claim.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        path = _claim_path(namespace, name)
        for _ in range(CONFLICT_RETRIES):
            response = await client.request("GET", path)
            if response.status == 404:
                return
            if response.status >= 300:
                raise BindFailure(f"get resourceclaim {namespace}/{name}: {_api_error(response)}")
            current = response.body
            finalizers = (current.get("metadata") or {}).get("finalizers") or []
            if FINALIZER not in finalizers:
                break
            current["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
            response = await client.request("PUT", path, current)
            if response.status == 409:
                continue
            if response.status >= 300:
                raise BindFailure(f"update resourceclaim {namespace}/{name}: {_api_error(response)}")
            break
        else:
            raise BindFailure(
                f"update resourceclaim {namespace}/{name}: the object has been modified; please apply "
                "your changes to the latest version"
            )
        response = await client.request("DELETE", path)
        if response.status >= 300 and response.status != 404:
            raise BindFailure(f"delete resourceclaim {namespace}/{name}: {_api_error(response)}")

    async def _delete_logged(self, claim: Mapping[str, Any]) -> None:
        try:
            await self._delete_claim(claim)
        except Exception as exc:
            log.error("delete %s: %s", claim_key(claim), exc)

    async def _bind_claim(
        self, claim: Mapping[str, Any], allocation: Mapping[str, Any] | None, pod: Pod
    ) -> Mapping[str, Any]:
        """Add the allocation (when this cycle made it) and the pod's reservation, retrying on
        conflicts with the claim read afresh, as upstream's RetryOnConflict."""
        client = self._handle.client
        meta = claim.get("metadata") or {}
        path = _claim_path(str(meta.get("namespace", "")), str(meta.get("name", "")))
        current: dict[str, Any] = copy.deepcopy(dict(claim))
        ref = claim_ref(claim)
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                response = await client.request("GET", path)
                if response.status >= 300:
                    raise BindFailure(f"get updated claim {ref} after conflict: {_api_error(response)}")
                current = response.body
            if (current.get("metadata") or {}).get("deletionTimestamp"):
                raise BindFailure(f"claim {ref} got deleted in the meantime")
            status = current.setdefault("status", {})
            if allocation is not None:
                if status.get("allocation") is not None:
                    raise BindFailure(f"claim {ref} got allocated elsewhere in the meantime")
                finalizers = current.setdefault("metadata", {}).setdefault("finalizers", [])
                if FINALIZER not in finalizers:
                    finalizers.append(FINALIZER)
                    response = await client.request("PUT", path, current)
                    if response.status == 409:
                        continue
                    if response.status >= 300:
                        raise BindFailure(f"add finalizer to claim {ref}: {_api_error(response)}")
                    current = response.body
                    status = current.setdefault("status", {})
                status["allocation"] = {
                    **allocation,
                    "allocationTimestamp": binding.timestamp(self._wall_time()),
                }
            elif status.get("allocation") is None:
                raise BindFailure(f"claim {ref} got deallocated elsewhere in the meantime")
            status["reservedFor"] = [
                *(status.get("reservedFor") or ()),
                {"resource": "pods", "name": pod.name, "uid": pod.uid},
            ]
            response = await client.request("PUT", path + "/status", current)
            if response.status == 409:
                continue
            if response.status >= 300:
                what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                raise BindFailure(f"{what} claim {ref}: {_api_error(response)}")
            self.tracker.written(response.body)
            return response.body
        raise BindFailure(
            f"claim {ref}: the object has been modified; please apply your changes to the latest version"
        )


class BindFailure(Exception):
    """A claim write failed (PreBind's, or deleting a special claim); the message is upstream's."""


class _ClaimTimedOut(BindFailure):
    """A claim waited for its binding conditions longer than ``bindingTimeout``."""


class _Verdicts:
    """A batch's rejections by position, equal statuses sharing one id; an Error is raised (the
    first one added)."""

    __slots__ = ("_seen", "rejected", "status_ids", "statuses")

    def __init__(self, count: int) -> None:
        self.rejected = np.zeros(count, dtype=bool)
        self.status_ids = np.zeros(count, dtype=np.int32)
        self.statuses: list[Status] = []
        self._seen: dict[tuple[Code, tuple[str, ...]], int] = {}

    def _id(self, status: Status) -> int:
        found = self._seen.get((status.code, status.reasons))
        if found is None:
            found = self._seen[(status.code, status.reasons)] = len(self.statuses)
            self.statuses.append(status)
        return found

    def add(self, i: int, status: Status | None) -> None:
        if status is None or status.code == Code.SUCCESS:
            return
        if status.code == Code.ERROR and status.error is not None:
            raise status.error
        self.rejected[i] = True
        self.status_ids[i] = self._id(status)

    def add_all(self, rejected: np.ndarray, status: Status) -> None:
        """One rejection for every position ``rejected`` marks."""
        if rejected.any():
            self.rejected |= rejected
            self.status_ids[rejected] = self._id(status)

    def result(self) -> NodeVerdicts | None:
        return NodeVerdicts(self.rejected, self.status_ids, self.statuses) if self.statuses else None


def _has_alternatives(claim: Mapping[str, Any]) -> bool:
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
    return any(r.get("firstAvailable") for r in requests)


def _claim_path(namespace: str, name: str) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"


def _api_error(response: Any) -> str:
    body = response.body if isinstance(response.body, Mapping) else {}
    return str(body.get("message") or f"HTTP {response.status}")
