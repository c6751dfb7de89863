"""The kinds the simulated API server serves, as data.

One table drives routing, discovery documents and storage, so adding a kind is one line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class ResourceType:
    """A REST resource: where it lives in the URL space and how the server treats it."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    # Status set by clients on create survives it (true for nodes, as on a real server).
    keep_status_on_create: bool = False
    # DELETE answers with the deleted object rather than a Success Status.
    return_deleted_object: bool = False
    categories: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool, **kw: object) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, **kw)  # type: ignore[arg-type]


RESOURCES: tuple[ResourceType, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, subresources=("status",), short_names=("ns",)),
    _r(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        subresources=("binding", "status"),
        short_names=("po",),
        return_deleted_object=True,
        categories=("all",),
    ),
    _r(
        "",
        "v1",
        "nodes",
        "Node",
        False,
        subresources=("status",),
        short_names=("no",),
        keep_status_on_create=True,
    ),
    _r(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        False,
        subresources=("status",),
        short_names=("pv",),
    ),
    _r(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        subresources=("status",),
        short_names=("pvc",),
    ),
    _r("", "v1", "events", "Event", True, short_names=("ev",)),
    _r(
        "",
        "v1",
        "services",
        "Service",
        True,
        subresources=("status",),
        short_names=("svc",),
        categories=("all",),
    ),
    _r(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        True,
        subresources=("status", "scale"),
        short_names=("rc",),
        categories=("all",),
    ),
    _r("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=("sa",)),
    _r(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        subresources=("status", "scale"),
        short_names=("deploy",),
        categories=("all",),
    ),
    _r(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        subresources=("status", "scale"),
        short_names=("rs",),
        categories=("all",),
    ),
    _r(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        subresources=("status", "scale"),
        short_names=("sts",),
        categories=("all",),
    ),
    _r(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        True,
        subresources=("status",),
        short_names=("ds",),
        categories=("all",),
    ),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=("sc",)),
    _r("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, subresources=("status",)),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",)),
    _r(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        subresources=("status",),
        short_names=("pdb",),
    ),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
    _r("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _r("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, subresources=("status",)),
    _r("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
)

# Storage key of a resource: events exist in two groups but are one kind on a real server;
# here each group keeps its own store, addressed as "events" (core) and "events.events.k8s.io".
BY_PATH: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}


def store_name(rt: ResourceType) -> str:
    """The name the in-process store API uses for a resource (plural, group-qualified if ambiguous)."""
    if rt.plural == "events" and rt.group:
        return f"events.{rt.group}"
    return rt.plural


BY_STORE_NAME: dict[str, ResourceType] = {store_name(r): r for r in RESOURCES}
