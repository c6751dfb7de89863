"""VolumeRestrictions: ReadWriteOncePod claims already in use, and in-tree disks that conflict.

A ReadWriteOncePod claim used by any scheduled pod makes every node fail (preemption may evict
that pod, hence Unschedulable and the add/remove extensions); GCE PD, AWS EBS, iSCSI and RBD
volumes conflict with the same disk mounted read-write by a pod on the node, as upstream checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from scheduler.framework.interface import NODE, PERSISTENT_VOLUME_CLAIM, POD
from scheduler.plugins import names
from scheduler.plugins.volumebinding.storage import READ_WRITE_ONCE_POD, Obj, access_modes, meta

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use "
    "by another pod"
)
_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_STATE_KEY = "PreFilter" + names.VOLUME_RESTRICTIONS
_DISK_CONFLICT = Status.unschedulable(ERR_REASON_DISK_CONFLICT)
_RWOP_CONFLICT = Status.unschedulable(ERR_REASON_RWOP_CONFLICT)


@dataclass(slots=True)
class _State:
    rwop_claims: frozenset[str]  # names of the pod's ReadWriteOncePod claims
    conflicts: int  # how many of them scheduled pods already use

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicts)

    def conflicts_of(self, other: Pod) -> int:
        """Volumes of ``other`` naming one of the claims. As upstream, by claim name alone (not
        namespace), once per volume: preemption's add/remove keep the count this way."""
        return sum(1 for name in persistent_claim_names(other) if name in self.rwop_claims)


def _has_disk(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(kind) is not None for kind in _DISKS)


def _read_write(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Not both mounted read-only: then one disk cannot be shared."""
    return not (a.get("readOnly") and b.get("readOnly"))


def volumes_conflict(volume: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    """Would ``volume`` clash with ``existing`` (a volume of a pod on the node)?"""
    gce, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
    if gce is not None and other is not None and gce.get("pdName") == other.get("pdName"):
        return _read_write(gce, other)
    ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
    if ebs is not None and other is not None and ebs.get("volumeID") == other.get("volumeID"):
        return True
    iscsi, other = volume.get("iscsi"), existing.get("iscsi")
    if iscsi is not None and other is not None and iscsi.get("iqn") == other.get("iqn"):
        return _read_write(iscsi, other)
    rbd, other = volume.get("rbd"), existing.get("rbd")
    if rbd is not None and other is not None:
        return (
            bool(set(rbd.get("monitors") or ()) & set(other.get("monitors") or ()))
            and rbd.get("pool") == other.get("pool")
            and rbd.get("image") == other.get("image")
            and _read_write(rbd, other)
        )
    return False


class VolumeRestrictions:
    name: ClassVar[str] = names.VOLUME_RESTRICTIONS

    __slots__ = ("_handle",)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the pod's volumes (disks and ReadWriteOncePod claims)."""
        return (SignFragment(signers.VOLUMES, signers.volumes(pod)),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deleted),
            # queueing hints are on (GA): upstream then registers node additions only
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self._after_claim_added
            ),
        )

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: Pod | None, new: Any) -> QueueingHint:
        # upstream ignores pods of other namespaces, even for (cluster-wide) disks
        if old is None or old.namespace != pod.namespace:
            return QueueingHint.SKIP
        disks = [v for v in pod.volumes if _has_disk(v)]
        if any(volumes_conflict(v, e) for v in disks for e in old.volumes):
            return QueueingHint.QUEUE
        if set(persistent_claim_names(pod)) & set(persistent_claim_names(old)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_claim_added(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if new is None:
            return QueueingHint.SKIP
        if meta(new).get("namespace") != pod.namespace:
            return QueueingHint.SKIP
        return (
            QueueingHint.QUEUE if meta(new).get("name") in persistent_claim_names(pod) else QueueingHint.SKIP
        )

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, Status.skip()
        needs_disk_check = any(_has_disk(v) for v in pod.volumes)
        rwop: set[str] = set()
        claim_names = persistent_claim_names(pod)
        if claim_names:
            assert self._handle is not None
            lister = self._handle.lister("persistentvolumeclaims")
            for name in claim_names:  # the first missing one is reported, as upstream
                pvc = lister.get(f"{pod.namespace}/{name}")
                if pvc is None:
                    return None, Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
                if READ_WRITE_ONCE_POD in access_modes(pvc):
                    rwop.add(name)
        conflicts = 0
        if rwop:
            keys = {f"{pod.namespace}/{name}" for name in rwop}
            in_use: set[str] = set()
            for info in nodes.node_infos():
                if info.pvc_ref_counts:
                    in_use.update(keys.intersection(info.pvc_ref_counts))
            conflicts = len(in_use)
        if not needs_disk_check and conflicts == 0:
            return None, Status.skip()
        state.write(_STATE_KEY, _State(frozenset(rwop), conflicts))
        return None, None

    # Preemption's what-if: a removed pod may free a ReadWriteOncePod claim, an added one take it.
    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is not None:
            data.conflicts += data.conflicts_of(pod_to_add)
        return None

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is not None:
            data.conflicts -= data.conflicts_of(pod_to_remove)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data: _State | None = state.get(_STATE_KEY)
        if data is None:
            return None
        disks = [v for v in pod.volumes if _has_disk(v)]
        if disks:
            for existing in node_info.pods.values():
                if any(volumes_conflict(v, e) for v in disks for e in existing.volumes):
                    return _DISK_CONFLICT
        if data.conflicts > 0:
            return _RWOP_CONFLICT
        return None
