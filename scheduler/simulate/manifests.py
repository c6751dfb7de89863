"""`--add`: a manifest stream as a user has it (files, directories, ``-`` for stdin), sorted into
what the simulation does with each object.

Workload kinds become the objects their controllers would make (`workloads.expand`; a DaemonSet
once the nodes are known, `daemonsets`); the kinds
the scheduler (or the API server's admission for it) reads are applied to the simulated cluster
as they are; anything else (ConfigMaps, Secrets, RBAC, HorizontalPodAutoscalers, ...) is listed
once as ignored. Kinds are matched by API group and kind, so another group's ``PodGroup`` is
not mistaken for the Workload API's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from scheduler.simulate.snapshot import COSCHEDULING_PODGROUPS
from scheduler.simulate.workloads import SUPPORTED, ManifestError, Workload, expand

Obj = dict[str, Any]
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# (API group, kind) -> store name, in the order they are applied: what others refer to first.
APPLIED: dict[tuple[str, str], str] = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "customresourcedefinitions",
    ("", "Namespace"): "namespaces",
    ("scheduling.k8s.io", "PriorityClass"): "priorityclasses",
    ("storage.k8s.io", "StorageClass"): "storageclasses",
    ("storage.k8s.io", "CSIDriver"): "csidrivers",
    ("", "PersistentVolume"): "persistentvolumes",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("resource.k8s.io", "DeviceClass"): "deviceclasses",
    ("resource.k8s.io", "ResourceSlice"): "resourceslices",
    ("resource.k8s.io", "ResourceClaimTemplate"): "resourceclaimtemplates",
    ("resource.k8s.io", "ResourceClaim"): "resourceclaims",
    ("", "Service"): "services",
    ("policy", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("scheduling.k8s.io", "Workload"): "workloads",
    ("scheduling.k8s.io", "PodGroup"): "podgroups",
    ("scheduling.x-k8s.io", "PodGroup"): COSCHEDULING_PODGROUPS,
}
_ORDER = {name: index for index, name in enumerate(APPLIED.values())}


@dataclass(frozen=True, slots=True)
class Applied:
    """An object applied to the simulated cluster as it is (created, or replacing one there)."""

    resource: str  # store name
    obj: Obj
    source: str  # "Service default/web (app.yaml)"


@dataclass
class Manifests:
    """A manifest stream, sorted: objects to apply, workloads to expand, kinds ignored."""

    applied: list[Applied] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    # expanded once the nodes are known (`daemonsets.daemon_pods`): (manifest, where)
    daemonsets: list[tuple[Obj, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # "ConfigMap default/settings"

    def extend(self, other: Manifests) -> None:
        self.applied += other.applied
        self.workloads += other.workloads
        self.daemonsets += other.daemonsets
        self.ignored += other.ignored

    def in_order(self) -> list[Applied]:
        """The applied objects in dependency order (stable within a kind)."""
        return sorted(self.applied, key=lambda a: _ORDER[a.resource])


def group_of(obj: Obj) -> str:
    api_version = obj.get("apiVersion")
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def files_of(path: Path) -> list[Path]:
    """A file, or a directory's manifest files (recursively, in name order)."""
    if not path.is_dir():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)


def documents(text: str, where: str) -> list[Any]:
    """Every document of a YAML (or JSON) stream, ``kind: List`` items flattened."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ManifestError(f"{where}: not YAML: {exc}") from exc
    items: list[Any] = []
    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and doc["kind"].endswith("List"):
            items.extend(doc.get("items") or ())
        elif doc is not None:
            items.append(doc)
    return items


def load(path: str, scheduler_name: str, stdin: TextIO | None = None) -> Manifests:
    """The manifests of ``path``: a file, a directory, or ``-`` (read from ``stdin``)."""
    if path == "-":
        return sort(documents((stdin or sys.stdin).read(), "stdin"), "stdin", scheduler_name)
    found = Manifests()
    for file in files_of(Path(path)):
        try:
            text = file.read_text()
        except OSError as exc:
            raise ManifestError(f"{file}: {exc.strerror or exc}") from exc
        found.extend(sort(documents(text, str(file)), str(file), scheduler_name))
    return found


def sort(items: Iterable[Any], where: str, scheduler_name: str) -> Manifests:
    """Each object to where it belongs; ``where`` names the stream in messages."""
    found = Manifests()
    for index, item in enumerate(items):
        at = f"{where}: document {index + 1}"
        if not isinstance(item, dict) or not isinstance(item.get("kind"), str):
            raise ManifestError(f"{at}: an object with a kind expected")
        kind = item["kind"]
        resource = APPLIED.get((group_of(item), kind))
        if kind in SUPPORTED:
            found.workloads.append(expand(item, at, scheduler_name))
        elif kind == "DaemonSet" and group_of(item) == "apps":
            found.daemonsets.append((item, at))
        elif resource is not None:
            found.applied.append(Applied(resource, item, f"{_label(item)} ({where})"))
        else:
            found.ignored.append(_label(item))
    return found


def _label(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = (meta or {}).get("name") or "(unnamed)"
    namespace = (meta or {}).get("namespace")
    return f"{obj['kind']} {namespace}/{name}" if namespace else f"{obj['kind']} {name}"
