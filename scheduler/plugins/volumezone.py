"""VolumeZone: a pod's bound PVs carry zone/region labels; the node must be in one of those zones.

Only bound claims count (unbound WaitForFirstConsumer claims are VolumeBinding's business); a node
without any topology label passes, which keeps single-zone clusters without labels working.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.api.volumes import persistent_claim_names
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
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
from scheduler.framework.interface import NODE, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from scheduler.plugins import names
from scheduler.plugins.volumebinding.storage import WAIT_FOR_FIRST_CONSUMER, Obj, claim_class, meta, spec

ERR_REASON_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}

_STATE_KEY = "PreFilter" + names.VOLUME_ZONE
_REJECTED = Status.unresolvable(ERR_REASON_CONFLICT)


@dataclass(slots=True, frozen=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def _zones(value: str) -> frozenset[str] | None:
    """The zones of a ``__``-joined label value; None when one of them is empty (upstream's
    LabelZonesToSet fails then, and the label is ignored as a whole)."""
    zones = [zone.strip() for zone in value.split("__")]
    return None if "" in zones else frozenset(zones)


def pv_topologies(pv: Obj) -> list[PVTopology]:
    """Zone/region labels of a PV; a value may list several zones joined by ``__``."""
    labels = meta(pv).get("labels") or {}
    name = str(meta(pv).get("name", ""))
    topologies = []
    for key in TOPOLOGY_LABELS:
        if key not in labels:
            continue
        values = _zones(str(labels[key]))
        if values is not None:
            topologies.append(PVTopology(name, key, values))
    return topologies


class VolumeZone:
    name: ClassVar[str] = names.VOLUME_ZONE

    __slots__ = ("_handle",)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the pod's volumes (their claims' volumes' zones)."""
        return (SignFragment(signers.VOLUMES, signers.volumes(pod)),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        # queueing hints are on (GA), so no UpdateNodeTaint, as upstream drops it then
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        return (
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, ActionType.ADD), self._after_class_added),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, add_update), self._after_claim_change),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, add_update), self._after_volume_change),
        )

    @staticmethod
    def _after_class_added(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        delayed = new is not None and new.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
        return QueueingHint.QUEUE if delayed else QueueingHint.SKIP

    @staticmethod
    def _after_claim_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.SKIP
        return (
            QueueingHint.QUEUE if meta(new).get("name") in persistent_claim_names(pod) else QueueingHint.SKIP
        )

    @staticmethod
    def _after_volume_change(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.SKIP

    def _topologies(self, pod: Pod) -> list[PVTopology]:
        """The topologies of the pod's bound PVs; a Status (unresolvable) when a claim is unusable."""
        claim_names = persistent_claim_names(pod)
        if not claim_names:
            return []
        assert self._handle is not None
        claims, volumes, classes = (
            self._handle.lister("persistentvolumeclaims"),
            self._handle.lister("persistentvolumes"),
            self._handle.lister("storageclasses"),
        )
        found: list[PVTopology] = []
        for claim_name in claim_names:
            if not claim_name:
                raise _Unusable("PersistentVolumeClaim had no name")
            pvc = claims.get(f"{pod.namespace}/{claim_name}")
            if pvc is None:
                raise _Unusable(f'persistentvolumeclaim "{claim_name}" not found')
            pv_name = spec(pvc).get("volumeName")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    raise _Unusable("PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = classes.get(class_name)
                if storage_class is None:
                    raise _Unusable(f'storageclass.storage.k8s.io "{class_name}" not found')
                mode = storage_class.get("volumeBindingMode")
                if mode is None:
                    raise _Unusable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                raise _Unusable("PersistentVolume had no name")
            pv = volumes.get(str(pv_name))
            if pv is None:
                raise _Unusable(f'persistentvolume "{pv_name}" not found')
            found.extend(pv_topologies(pv))
        return found

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, Status.skip()
        try:
            topologies = self._topologies(pod)
        except _Unusable as problem:
            return None, Status.unresolvable(str(problem))
        if not topologies:
            return None, Status.skip()
        state.write(_STATE_KEY, topologies)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        topologies: list[PVTopology] | None = state.get(_STATE_KEY)
        if not topologies:
            return None
        labels = node_info.node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_GA.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return _REJECTED
        return None


class _Unusable(Exception):
    """A claim or volume the pod cannot use; its message is upstream's."""
