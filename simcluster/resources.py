"""The kinds the simulated API server serves, as data: built-in kinds plus those CRDs add at run time.

One `ResourceType` per served group/version/resource drives routing, discovery, storage, tables,
OpenAPI and field validation. A built-in kind is one `_r(...)` line: its schema comes from the
kubernetes_asyncio model named by `model` (default `<Version><Kind>`, e.g. `V1Pod`,
`V1alpha2Workload`). A custom resource carries its CRD's `openAPIV3Schema` instead. `Kinds` is
the per-server registry (CRDs come and go); its dicts are the hot-path lookups.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


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
    # The kubernetes_asyncio model class the schema derives from ("" = <Version><Kind>).
    model: str = ""
    # Custom resources: the defining CRD's name, the version objects are stored at, the
    # version's openAPIV3Schema, printer columns and scale subresource paths.
    crd: str = ""
    storage_version: str = ""
    schema: dict[str, Any] | None = field(default=None, compare=False)
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    # specReplicasPath, statusReplicasPath, labelSelectorPath (labelSelectorPath may be "")
    scale_paths: tuple[str, str, str] | None = None
    # the fields a CRD version lets field selectors use besides metadata.name/namespace
    selectable_fields: tuple[str, ...] = ()
    # The verbs discovery lists; empty means every verb of a stored kind. Kinds that only
    # answer a POST (access reviews, TokenReview) are never stored.
    verbs: tuple[str, ...] = ()

    @property
    def stored(self) -> bool:
        return self.verbs != ("create",)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def stored_api_version(self) -> str:
        """The apiVersion objects are stored with (a CRD's storage version, else this one)."""
        version = self.storage_version or self.version
        return f"{self.group}/{version}" if self.group else version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def model_name(self) -> str:
        return self.model or f"{self.version[0].upper()}{self.version[1:]}{self.kind}"


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool, **kw: Any) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, **kw)


RESOURCES: tuple[ResourceType, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, subresources=("status",), short_names=("ns",)),
    _r(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        subresources=("binding", "status", "eviction"),
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
    _r("", "v1", "events", "Event", True, short_names=("ev",), model="CoreV1Event"),
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
    _r("", "v1", "secrets", "Secret", True),
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
    _r("batch", "v1", "jobs", "Job", True, subresources=("status",), categories=("all",)),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=("sc",)),
    _r("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, subresources=("status",)),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",), model="EventsV1Event"),
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
    # the Workload API (alpha in v1.36; served where the cluster enables it, see Kinds' `disabled`)
    _r("scheduling.k8s.io", "v1alpha2", "workloads", "Workload", True),
    _r("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True, subresources=("status",)),
    _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=("create",)),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=("create",)),
    _r(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        False,
        verbs=("create",),
    ),
    _r(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        False,
        verbs=("create",),
    ),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=("create",)),
    _r(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        True,
        verbs=("create",),
    ),
    _r("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _r(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        True,
        subresources=("status",),
        model="ResourceV1ResourceClaim",
    ),
    _r("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    _r(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        subresources=("status",),
        short_names=("crd", "crds"),
        categories=("api-extensions",),
    ),
    _r("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    # beta and off by default on a real server (DRADeviceTaintRules); served here
    _r("resource.k8s.io", "v1beta2", "devicetaintrules", "DeviceTaintRule", False, subresources=("status",)),
)

# Storage key of a resource: events exist in two groups but are one kind on a real server;
# here each group keeps its own store, addressed as "events" (core) and "events.events.k8s.io".
BY_PATH: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}


def store_name(rt: ResourceType) -> str:
    """The name the in-process store API uses for a resource (plural, group-qualified if ambiguous)."""
    if rt.crd:
        return f"{rt.plural}.{rt.group}"
    if rt.plural == "events" and rt.group:
        return f"events.{rt.group}"
    return rt.plural


BY_STORE_NAME: dict[str, ResourceType] = {store_name(r): r for r in RESOURCES}


class Kinds:
    """The kinds one server serves: the built-ins plus the versions of each established CRD.

    `by_path` and `by_store_name` are plain dicts read on every request; `generation` changes
    whenever the set changes, so discovery and OpenAPI documents know when to rebuild.
    """

    def __init__(self, disabled: Iterable[str] = ()) -> None:
        """``disabled``: built-in group/versions not served (e.g. ``"scheduling.k8s.io/v1alpha2"``),
        as a real server started with ``--runtime-config=<group/version>=false``."""
        off = frozenset(disabled)
        self._builtin = tuple(r for r in RESOURCES if r.group_version not in off)
        self.by_path: dict[tuple[str, str, str], ResourceType] = {
            (r.group, r.version, r.plural): r for r in self._builtin
        }
        self.by_store_name: dict[str, ResourceType] = {store_name(r): r for r in self._builtin}
        self._custom: dict[str, tuple[ResourceType, ...]] = {}  # CRD name -> its served versions
        self.generation = 0

    def all(self) -> list[ResourceType]:
        """Every served resource: built-ins first, then custom resources by CRD name."""
        return [*self._builtin, *(rt for name in sorted(self._custom) for rt in self._custom[name])]

    def custom(self, crd: str) -> tuple[ResourceType, ...]:
        return self._custom.get(crd, ())

    def register(self, crd: str, versions: list[ResourceType]) -> None:
        """Serve (or re-serve) a CRD's versions; the storage version owns the store name."""
        self.unregister(crd)
        # a CRD never shadows a built-in resource
        versions = [rt for rt in versions if (rt.group, rt.version, rt.plural) not in BY_PATH]
        self._custom[crd] = tuple(versions)
        for rt in versions:
            self.by_path[(rt.group, rt.version, rt.plural)] = rt
            if rt.version == (rt.storage_version or rt.version):
                self.by_store_name[store_name(rt)] = rt
        if versions and store_name(versions[0]) not in self.by_store_name:  # storage version not served
            self.by_store_name[store_name(versions[0])] = versions[0]
        self.generation += 1

    def unregister(self, crd: str) -> None:
        for rt in self._custom.pop(crd, ()):
            self.by_path.pop((rt.group, rt.version, rt.plural), None)
            self.by_store_name.pop(store_name(rt), None)
            self.generation += 1
