"""Discovery documents (/api, /apis, /api/v1, /apis/<g>/<v>, /version) built from the served kinds.

Every function takes the kinds to describe (a server passes its registry's, CRDs included).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from scheduler import __version__
from simcluster.resources import RESOURCES, ResourceType

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
KUBE_VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.0"}


def version() -> dict[str, Any]:
    return {
        **KUBE_VERSION,
        "gitVersion": f"{KUBE_VERSION['gitVersion']}+pyscheduler-sim-{__version__}",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order, most preferred first when sorted: v2 > v1 > v1beta2 > v1alpha1."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0)  # non-Kubernetes-style versions sort last
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0))


def group_versions(resources: Iterable[ResourceType] = RESOURCES) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for r in resources:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    return {group: sorted(versions, key=version_priority) for group, versions in groups.items()}


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(resources: Iterable[ResourceType] = RESOURCES) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions) for name, versions in group_versions(resources).items()],
    }


def api_group(name: str, resources: Iterable[ResourceType] = RESOURCES) -> dict[str, Any] | None:
    versions = group_versions(resources).get(name)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource_entries(r: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": list(r.verbs) or VERBS,
    }
    if r.short_names:
        main["shortNames"] = list(r.short_names)
    if r.categories:
        main["categories"] = list(r.categories)
    entries = [main]
    for sub in r.subresources:
        if sub == "binding":
            entries.append(
                {
                    "name": f"{r.plural}/binding",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "Binding",
                    "verbs": ["create"],
                }
            )
        elif sub == "eviction":
            entries.append(
                {
                    "name": f"{r.plural}/eviction",
                    "singularName": "",
                    "namespaced": True,
                    "group": "policy",
                    "version": "v1",
                    "kind": "Eviction",
                    "verbs": ["create"],
                }
            )
        elif sub == "scale":
            entries.append(
                {
                    "name": f"{r.plural}/scale",
                    "singularName": "",
                    "namespaced": True,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        else:
            entries.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return entries


def resource_list(
    group: str, version: str, resources: Iterable[ResourceType] = RESOURCES
) -> dict[str, Any] | None:
    chosen = [r for r in resources if r.group == group and r.version == version]
    if not chosen:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for r in chosen for entry in _resource_entries(r)],
    }
