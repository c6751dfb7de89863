"""VolumeBinding: a pod goes only where its PersistentVolumeClaims can be (or already are) bound.

PreFilter sorts the pod's claims (bound, delayed, immediate) and never narrows the nodes (v1.36
has no GetEligibleNodes any more), Filter finds per node the PVs to bind or the claims to
provision, Reserve assumes that choice in the plugin's own caches (the next pod already sees the
PV as taken), PreBind writes it and waits for the PV controller, Unreserve takes it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.api.volumes import volume_claims
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeLister,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)
from scheduler.framework.interface import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
)
from scheduler.plugins import names
from scheduler.plugins.volumebinding.binder import (
    ERR_UNBOUND_IMMEDIATE,
    BindingError,
    BindingModeUnset,
    ClaimProblem,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    capacity_limit,
    claims_of,
    pod_volume_claims,
)
from scheduler.plugins.volumebinding.storage import Obj, meta, spec

_STATE_KEY = names.VOLUME_BINDING
DEFAULT_BIND_TIMEOUT_SECONDS = 600
# Upstream polls once a second; the informer usually has the answer much sooner.
POLL_INTERVAL_SECONDS = 0.1
_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"


@dataclass(slots=True)
class _State:
    claims: PodVolumeClaims
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = True

    def clone(self) -> _State:
        return self  # shared on purpose, as upstream: Filter results stay valid in dry runs


def _uses_claims(pod: Pod) -> bool:
    return any("persistentVolumeClaim" in v or "ephemeral" in v for v in pod.volumes)


class VolumeBinding:
    name: ClassVar[str] = names.VOLUME_BINDING

    __slots__ = ("_handle", "binder")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if handle is None:
            raise ValueError("VolumeBinding needs a framework handle")
        timeout = getattr(args, "bind_timeout_seconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        self._handle = handle
        self.binder = VolumeBinder(handle.lister, float(timeout), POLL_INTERVAL_SECONDS)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the pod's volumes (their claims and classes)."""
        return (SignFragment(signers.VOLUMES, signers.volumes(pod)),), None

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        # queueing hints are on (GA), so no UpdateNodeTaint, as upstream drops it then
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        return (
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, add_update), self._after_storage_class_change),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, add_update), self._after_claim_change),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, add_update)),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, add_update), self._after_csi_node_change),
            ClusterEventWithHint(ClusterEvent(CSI_DRIVER, ActionType.UPDATE), self._after_csi_driver_change),
            ClusterEventWithHint(ClusterEvent(CSI_STORAGE_CAPACITY, add_update), self._after_capacity_change),
        )

    @staticmethod
    def _after_claim_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.SKIP
        wanted = {claim for claim, _ in volume_claims(pod)}
        return QueueingHint.QUEUE if meta(new).get("name") in wanted else QueueingHint.SKIP

    @staticmethod
    def _after_storage_class_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        # semantic equality, as upstream: a missing list equals an empty one
        changed = (old.get("allowedTopologies") or []) != (new.get("allowedTopologies") or [])
        return QueueingHint.QUEUE if changed else QueueingHint.SKIP

    @staticmethod
    def _after_csi_node_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        before = (meta(old).get("annotations") or {}).get(_MIGRATED_PLUGINS)
        after = (meta(new).get("annotations") or {}).get(_MIGRATED_PLUGINS)
        return QueueingHint.QUEUE if before != after else QueueingHint.SKIP

    @staticmethod
    def _after_csi_driver_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        driver = meta(new).get("name")
        uses = any((v.get("csi") or {}).get("driver") == driver for v in pod.volumes)
        disabled = bool(spec(old).get("storageCapacity")) and not spec(new).get("storageCapacity")
        return QueueingHint.QUEUE if uses and disabled else QueueingHint.SKIP

    @staticmethod
    def _after_capacity_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        before, after = capacity_limit(old), capacity_limit(new)
        # as upstream: only a limit that appeared or grew queues (one that went away does not)
        grew = after is not None and (before is None or after > before)
        return QueueingHint.QUEUE if grew else QueueingHint.SKIP

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes or not _uses_claims(pod):
            return None, Status.skip()
        try:
            claims = claims_of(pod, self.binder.listers, self.binder.pvc_cache)
        except ClaimProblem as problem:
            return None, Status.unresolvable(str(problem))
        try:
            sorted_claims = pod_volume_claims(
                claims, self.binder.listers, self.binder.pv_index, self.binder.pv_cache
            )
        except BindingModeUnset as problem:
            return None, Status(Code.ERROR, (str(problem),))
        if sorted_claims.immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(_STATE_KEY, _State(sorted_claims))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return None
        verdict = self.binder.find_pod_volumes(data.claims, node_info.node)
        if verdict.reasons:
            return Status.unresolvable(*verdict.reasons)
        data.by_node[node_info.name] = verdict.volumes
        return None

    # ------------------------------------------------------------------ reserve / bind

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            data.all_bound = True
            return None
        try:
            data.all_bound = self.binder.assume(volumes, node_name)
        except KeyError as exc:
            return Status.from_error(exc)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return
        volumes = data.by_node.get(node_name)
        if volumes is not None:
            self.binder.revert(volumes)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Skip when every claim is bound already: then PreBind has nothing to write."""
        data: _State | None = state.get(_STATE_KEY)
        if data is None or data.all_bound:
            return Status.skip()
        if node_name not in data.by_node:
            return Status.from_error(BindingError(f'no pod volumes found for node "{node_name}"'))
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None or data.all_bound:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            return Status.from_error(BindingError(f'no pod volumes found for node "{node_name}"'))
        info = self._handle.snapshot.get(node_name)
        try:
            await self.binder.bind(self._handle.client, volumes, info.node if info else None, node_name)
        except BindingError as exc:
            return Status.from_error(exc)
        return None
