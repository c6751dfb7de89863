"""NodeVolumeLimits (CSI): per CSI driver, the node's unique attached volumes plus the pod's new ones
must stay within ``CSINode.spec.drivers[].allocatable.count``.

Volumes are told apart by ``driver/volumeHandle``; a claim not bound yet counts against its
StorageClass's provisioner under a handle made from the claim's name, as upstream does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from scheduler.api import Pod
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
    Status,
)
from scheduler.framework.interface import CSI_NODE, PERSISTENT_VOLUME_CLAIM, POD
from scheduler.plugins import names
from scheduler.plugins.volumebinding.storage import Obj, claim_class, meta, pod_claim_names, spec

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


def volume_limits(csi_node: Obj | None) -> dict[str, int]:
    """Driver name -> attachable volume count, for drivers that publish one."""
    limits: dict[str, int] = {}
    for driver in spec(csi_node or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name"))] = int(count)
    return limits


class _MissingClaim(Exception):
    pass


class NodeVolumeLimits:
    name: ClassVar[str] = names.NODE_VOLUME_LIMITS

    __slots__ = ("_handle", "_unbound_prefix")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        # keeps handles of not-yet-bound claims apart from real volume handles
        self._unbound_prefix = uuid.uuid4().hex

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self._after_claim_added
            ),
        )

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: Pod | None, new: Any) -> QueueingHint:
        if old is None or not old.node_name:
            return QueueingHint.SKIP
        counted = any("persistentVolumeClaim" in v or "ephemeral" in v or "csi" in v for v in old.volumes)
        return QueueingHint.QUEUE if counted else QueueingHint.SKIP

    @staticmethod
    def _after_claim_added(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.SKIP
        wanted = {claim for claim, _ in pod_claim_names(pod.name, pod.volumes)}
        return QueueingHint.QUEUE if meta(new).get("name") in wanted else QueueingHint.SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        for volume in pod.volumes:
            if "persistentVolumeClaim" in volume or "ephemeral" in volume or "csi" in volume:
                return None, None
        return None, Status.skip()

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        assert self._handle is not None
        new_volumes: dict[str, str] = {}
        try:
            self._attachable(pod, new_volumes, new_pod=True)
        except _MissingClaim as missing:
            return Status.unresolvable(str(missing))
        if not new_volumes:
            return None
        limits = volume_limits(self._handle.lister("csinodes").get(node_info.name))
        if not limits:
            return None
        attached: dict[str, str] = {}
        for existing in node_info.pods.values():
            if existing.volumes:
                self._attachable(existing, attached, new_pod=False)
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # one volume shared by several pods counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return _EXCEEDED
        return None

    def _attachable(self, pod: Pod, out: dict[str, str], *, new_pod: bool) -> None:
        """Add ``driver/handle`` -> driver for each CSI volume of ``pod`` to ``out``."""
        assert self._handle is not None
        claims = self._handle.lister("persistentvolumeclaims")
        for volume in pod.volumes:
            inline = volume.get("csi")
            if inline is not None:
                continue  # inline ephemeral CSI volumes are not attached
            for claim_name, _ in pod_claim_names(pod.name, (volume,)):
                pvc = claims.get(f"{pod.namespace}/{claim_name}")
                if pvc is None:
                    if new_pod:
                        raise _MissingClaim(f'persistentvolumeclaim "{claim_name}" not found')
                    continue
                driver, handle = self._driver_and_handle(pvc)
                if driver and handle:
                    out[f"{driver}/{handle}"] = driver

    def _driver_and_handle(self, pvc: Mapping[str, Any]) -> tuple[str, str]:
        assert self._handle is not None
        pv_name = spec(pvc).get("volumeName")
        pv = self._handle.lister("persistentvolumes").get(str(pv_name)) if pv_name else None
        if pv is not None:
            source = spec(pv).get("csi")
            if source is None:
                return "", ""
            return str(source.get("driver") or ""), str(source.get("volumeHandle") or "")
        class_name = claim_class(pvc)
        storage_class = self._handle.lister("storageclasses").get(class_name) if class_name else None
        if storage_class is None:
            return "", ""
        handle = f"{self._unbound_prefix}-{meta(pvc).get('namespace')}/{meta(pvc).get('name')}"
        return str(storage_class.get("provisioner") or ""), handle
