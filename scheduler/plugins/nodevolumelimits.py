"""NodeVolumeLimits (CSI): per CSI driver, the node's unique attached volumes plus the pod's new ones
must stay within ``CSINode.spec.drivers[].allocatable.count``.

Volumes are told apart by ``driver/volumeHandle``; a claim not bound yet counts against its
StorageClass's provisioner under a handle made from the claim's name, as upstream does. In-tree
volumes (inline, in a PV, or a StorageClass of an in-tree provisioner) of the plugins CSI
migration covers count against their CSI driver once the node has a CSINode, with the handle
csi-translation-lib gives them. VolumeAttachments of CSI PVs on the node count as attached too
(a volume still detaching after its pod is gone), unless a pod there already counts them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlparse

from scheduler.api import Pod
from scheduler.api.volumes import volume_claim, volume_claims
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
from scheduler.framework.interface import CSI_NODE, PERSISTENT_VOLUME_CLAIM, POD, VOLUME_ATTACHMENT
from scheduler.plugins import names
from scheduler.plugins.volumebinding.storage import Obj, claim_class, controlled_by, meta, spec

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
_STATE_KEY = "PreFilter" + names.NODE_VOLUME_LIMITS

# csi-translation-lib's in-tree plugins: volume source field -> (in-tree plugin name, CSI driver).
_MIGRATABLE: dict[str, tuple[str, str]] = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "azureFile": ("kubernetes.io/azure-file", "file.csi.azure.com"),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
}
_DRIVER_OF_PLUGIN = dict(_MIGRATABLE.values())
# The plugins whose volumes upstream counts (isCSIMigrationOn); Azure File and vSphere are not.
_COUNTED = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
        "kubernetes.io/portworx-volume",
    }
)
_EBS_VOLUME = re.compile(r"^vol-[^/]*$")
_GCE_UNSPECIFIED = "UNSPECIFIED"
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_ZONE = "topology.kubernetes.io/zone"


def volume_limits(csi_node: Obj | None) -> dict[str, int]:
    """Driver name -> attachable volume count, for drivers that publish one."""
    limits: dict[str, int] = {}
    for driver in spec(csi_node or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name"))] = int(count)
    return limits


def _in_tree_source(obj: Mapping[str, Any]) -> str | None:
    """The migratable in-tree source field of a volume or PV spec, if it has one."""
    return next((field for field in _MIGRATABLE if obj.get(field) is not None), None)


def _counts_volume(volume: Mapping[str, Any]) -> bool:
    """A claim, an ephemeral claim or a migratable in-tree volume: what PreFilter looks for."""
    return (
        volume.get("persistentVolumeClaim") is not None
        or volume.get("ephemeral") is not None
        or _in_tree_source(volume) is not None
    )


class _Untranslatable(Exception):
    """csi-translation-lib refuses the in-tree volume; its message is upstream's."""


def _ebs_volume_id(volume_id: str) -> str:
    if not volume_id.startswith("aws://"):
        return volume_id  # a bare volume id
    aws_id = urlparse(volume_id).path.strip("/")
    if not _EBS_VOLUME.match(aws_id):
        raise _Untranslatable(
            f"failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume ({volume_id})"
        )
    return aws_id


def _gce_region(zones: list[str]) -> str:
    """The one region of ``{locale}-{region}-{zone}`` zones (a PV failing this is not counted)."""
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise _Untranslatable(f"zone in unexpected format: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise _Untranslatable(f"multiple or no regions gotten from zones: {sorted(regions)}")
    return regions.pop()


def _gce_volume_id(pd_name: str, pv_labels: Mapping[str, str]) -> str:
    """A PV's zone labels make a zonal or a regional handle; inline disks (no labels) have no zone."""
    zones = (pv_labels.get(_BETA_ZONE) or pv_labels.get(_ZONE) or "").split("__")
    if len(zones) == 1 and zones[0]:
        return f"projects/{_GCE_UNSPECIFIED}/zones/{zones[0]}/disks/{pd_name}"
    if len(zones) > 1:
        return f"projects/{_GCE_UNSPECIFIED}/regions/{_gce_region(zones)}/disks/{pd_name}"
    return f"projects/{_GCE_UNSPECIFIED}/zones/{_GCE_UNSPECIFIED}/disks/{pd_name}"


def _csi_handle(field: str, source: Mapping[str, Any], pv_labels: Mapping[str, str]) -> str:
    """The CSI volume handle of a counted in-tree source, as csi-translation-lib makes it."""
    if field == "awsElasticBlockStore":
        return _ebs_volume_id(str(source.get("volumeID") or ""))
    if field == "gcePersistentDisk":
        return _gce_volume_id(str(source.get("pdName") or ""), pv_labels)
    if field == "azureDisk":
        kind = source.get("kind")
        if kind is not None and str(kind).lower() != "managed":
            raise _Untranslatable(f"kind({kind}) is not supported in csi migration")
        return str(source.get("diskURI") or "")
    return str(source.get("volumeID") or "")  # cinder, portworxVolume


@dataclass(slots=True)
class _Attachments:
    """The cycle's VolumeAttachments per node, read once on first need (most pods never need
    them: only a pod with attachable volumes on a node with limits does)."""

    by_node: dict[str, dict[str, str]] | None = field(default=None)

    def clone(self) -> _Attachments:
        return self  # read-only once built: dry runs share it


class _MissingClaim(Exception):
    """The new pod's claim does not exist (unresolvable)."""


class _VolumeError(Exception):
    """A volume upstream fails on with an internal error."""


class NodeVolumeLimits:
    name: ClassVar[str] = names.NODE_VOLUME_LIMITS

    __slots__ = ("_handle", "_unbound_prefix")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        # keeps handles of not-yet-bound claims apart from real volume handles
        self._unbound_prefix = uuid.uuid4().hex

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Filtering depends on the pod's volumes (what they attach to the node)."""
        return (SignFragment(signers.VOLUMES, signers.volumes(pod)),), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.UPDATE), self._after_csi_node_update),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self._after_claim_added
            ),
            ClusterEventWithHint(
                ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE), self._after_attachment_deleted
            ),
        )

    @staticmethod
    def _after_attachment_deleted(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        """A detached volume frees room for a pod with a claim, or with an inline in-tree volume
        of the detached volume's driver (an untranslatable one queues, to be safe)."""
        attacher = spec(old or {}).get("attacher")
        for volume in pod.volumes:
            if volume.get("persistentVolumeClaim") is not None:
                return QueueingHint.QUEUE
            source = _in_tree_source(volume)
            if source is None:
                continue
            try:
                _csi_handle(source, volume[source], {})
            except _Untranslatable:
                return QueueingHint.QUEUE
            if _MIGRATABLE[source][1] == attacher:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_csi_node_update(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        """Only a driver limit that grew may make room (a driver without a count has 0)."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        before = volume_limits(old)
        after = volume_limits(new)
        for driver in spec(new).get("drivers") or ():
            name = str(driver.get("name"))
            if after.get(name, 0) > before.get(name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: Pod | None, new: Any) -> QueueingHint:
        if old is None or not old.volumes:
            return QueueingHint.SKIP
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if any(_counts_volume(v) for v in old.volumes) else QueueingHint.SKIP

    @staticmethod
    def _after_claim_added(pod: Pod, old: Obj | None, new: Obj | None) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.SKIP
        wanted = {name for name, _ in volume_claims(pod)}
        return QueueingHint.QUEUE if meta(new).get("name") in wanted else QueueingHint.SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        if any(_counts_volume(v) for v in pod.volumes):
            state.write(_STATE_KEY, _Attachments())
            return None, None
        return None, Status.skip()

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        assert self._handle is not None
        csi_node = self._handle.lister("csinodes").get(node_info.name)
        new_volumes: dict[str, str] = {}
        try:
            self._attachable(pod, csi_node, new_volumes, new_pod=True)
        except _MissingClaim as missing:
            return Status.unresolvable(str(missing))
        except _VolumeError as error:
            return Status(Code.ERROR, (str(error),))
        if not new_volumes:
            return None
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        try:
            for existing in node_info.pods.values():
                if existing.volumes:
                    self._attachable(existing, csi_node, attached, new_pod=False)
        except _VolumeError as error:
            return Status(Code.ERROR, (str(error),))
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # one volume shared by several pods counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        # As upstream, an attachment no pod there counts is one more; the pod's own volumes are
        # not matched against attachments, so one still attached counts twice.
        for unique, driver in self._attachments(state).get(node_info.name, {}).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return _EXCEEDED
        return None

    def _attachments(self, state: CycleState) -> dict[str, dict[str, str]]:
        """Per node, ``attacher/volumeHandle`` -> attacher of the VolumeAttachments of CSI PVs."""
        memo: _Attachments | None = state.get(_STATE_KEY)
        if memo is not None and memo.by_node is not None:
            return memo.by_node
        assert self._handle is not None
        volumes = self._handle.lister("persistentvolumes")
        by_node: dict[str, dict[str, str]] = {}
        for attachment in self._handle.lister("volumeattachments").list():
            attachment_spec = spec(attachment)
            attacher = attachment_spec.get("attacher")
            pv_name = (attachment_spec.get("source") or {}).get("persistentVolumeName")
            if not attacher or not pv_name:
                continue
            pv = volumes.get(str(pv_name))
            source = spec(pv).get("csi") if pv is not None else None
            if source is None:
                continue
            node = str(attachment_spec.get("nodeName") or "")
            by_node.setdefault(node, {})[f"{attacher}/{source.get('volumeHandle') or ''}"] = str(attacher)
        if memo is not None:
            memo.by_node = by_node
        return by_node

    def _attachable(self, pod: Pod, csi_node: Obj | None, out: dict[str, str], *, new_pod: bool) -> None:
        """Add ``driver/handle`` -> driver for each attachable volume of ``pod`` to ``out``.

        As upstream: a missing claim fails only the new pod (an existing pod's is skipped);
        a nameless claim, an ephemeral claim the pod does not own and an in-tree volume the
        translation refuses fail either.
        """
        assert self._handle is not None
        claims = self._handle.lister("persistentvolumeclaims")
        for volume in pod.volumes:
            claim = volume_claim(pod, volume)
            if claim is None:
                self._inline(pod, volume, csi_node, out)
                continue
            claim_name, ephemeral = claim
            if not claim_name:
                raise _VolumeError("PersistentVolumeClaim had no name")
            pvc = claims.get(f"{pod.namespace}/{claim_name}")
            if pvc is None:
                if new_pod:
                    missing = f'persistentvolumeclaim "{claim_name}" not found'
                    raise _MissingClaim(f"looking up PVC {pod.namespace}/{claim_name}: {missing}")
                continue
            if ephemeral and not (
                meta(pvc).get("namespace") == pod.namespace and controlled_by(pvc, pod.uid)
            ):
                raise _VolumeError(
                    f"PVC {meta(pvc).get('namespace')}/{claim_name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            driver, handle = self._driver_and_handle(pvc, csi_node)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver

    @staticmethod
    def _inline(pod: Pod, volume: Mapping[str, Any], csi_node: Obj | None, out: dict[str, str]) -> None:
        """An inline in-tree volume counts against its CSI driver when migration is on there."""
        field = _in_tree_source(volume)
        if field is None:
            return  # e.g. an inline CSI (ephemeral) volume: never attached
        plugin, driver = _MIGRATABLE[field]
        if csi_node is None or plugin not in _COUNTED:
            return
        try:
            handle = _csi_handle(field, volume[field], {})
        except _Untranslatable as problem:
            raise _VolumeError(
                f"converting volume({volume.get('name', '')}) from inline to csi: {problem}"
            ) from None
        out[f"{driver}/{handle}"] = driver

    def _driver_and_handle(self, pvc: Mapping[str, Any], csi_node: Obj | None) -> tuple[str, str]:
        assert self._handle is not None
        pv_name = spec(pvc).get("volumeName")
        pv = self._handle.lister("persistentvolumes").get(str(pv_name)) if pv_name else None
        if pv is not None:
            return _volume_driver_and_handle(pv, csi_node)
        class_name = claim_class(pvc)
        storage_class = self._handle.lister("storageclasses").get(class_name) if class_name else None
        if storage_class is None:
            return "", ""
        handle = f"{self._unbound_prefix}-{meta(pvc).get('namespace')}/{meta(pvc).get('name')}"
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner in _DRIVER_OF_PLUGIN:
            if csi_node is None or provisioner not in _COUNTED:
                return "", ""
            return _DRIVER_OF_PLUGIN[provisioner], handle
        return provisioner, handle


def _volume_driver_and_handle(pv: Obj, csi_node: Obj | None) -> tuple[str, str]:
    """A PV's CSI driver and handle, translated for in-tree sources; ("", "") when not counted."""
    source = spec(pv).get("csi")
    if source is not None:
        return str(source.get("driver") or ""), str(source.get("volumeHandle") or "")
    field = _in_tree_source(spec(pv))
    if field is None:
        return "", ""
    plugin, driver = _MIGRATABLE[field]
    if csi_node is None or plugin not in _COUNTED:
        return "", ""
    try:
        return driver, _csi_handle(field, spec(pv)[field], meta(pv).get("labels") or {})
    except _Untranslatable:
        return "", ""
