"""Discovery documents (/api, /apis, /api/v1, /apis/<g>/<v>, /version) built from the resource table."""

from __future__ import annotations

from typing import Any

from scheduler import __version__
from scheduler.sim.resources import RESOURCES, ResourceType

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


def group_versions() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    return groups


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions) for name, versions in group_versions().items()],
    }


def api_group(name: str) -> dict[str, Any] | None:
    versions = group_versions().get(name)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource_entries(r: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": VERBS,
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


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    chosen = [r for r in RESOURCES if r.group == group and r.version == version]
    if not chosen:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for r in chosen for entry in _resource_entries(r)],
    }
