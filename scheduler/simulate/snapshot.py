"""Cluster snapshots: what `pyscheduler snapshot` saves and `pyscheduler simulate` loads.

A snapshot is one JSON document (format version 1)::

    {
      "apiVersion": "pyscheduler.io/v1",
      "kind": "ClusterSnapshot",
      "formatVersion": 1,
      "takenAt": "2026-12-01T12:00:00Z",          # UTC, when the reads finished
      "server": "https://10.0.0.1:6443",          # where it was read from ("" if unknown)
      "objects": {                                # store name -> the objects as listed
        "nodes": [...], "pods": [...], "namespaces": [...], ...
      },
      "skipped": ["resourceclaimtemplates (resource.k8s.io/v1): not served by the cluster"]
    }

``objects`` holds every kind of `KINDS` the cluster serves, and scheduler-plugins' PodGroups
with their CustomResourceDefinition where the cluster serves them; each object as the API server
returned it minus ``metadata.managedFields`` (status, uid and nodeName kept). A reader of format
version 1 ignores keys it does not know; a later format changes ``formatVersion``.
Taking one only LISTs (paginated), so read-only access is enough.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scheduler.client.config import load_client_config
from scheduler.client.rest import KubeClient, raise_for_status
from scheduler.framework.interface import ApiClient
from scheduler.plugins.coscheduling import PODGROUPS as COSCHEDULING_KIND
from scheduler.plugins.gangscheduling import PODGROUPS
from scheduler.watched import DEVICE_TAINT_RULES, PLUGIN_RESOURCES

API_VERSION = "pyscheduler.io/v1"
KIND = "ClusterSnapshot"
FORMAT_VERSION = 1
PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class SnapshotKind:
    """A kind a snapshot holds: its store name, collection path, and whether a cluster may lack it."""

    name: str
    path: str
    optional: bool = False

    @property
    def group_version(self) -> str:
        parts = self.path.strip("/").split("/")
        return parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"


# Optional: served by some clusters only (resource.k8s.io before v1.34, alpha and beta APIs).
_OPTIONAL_GROUPS = ("/apis/resource.k8s.io/", "/apis/scheduling.k8s.io/v1alpha")


def _kind(name: str, path: str) -> SnapshotKind:
    return SnapshotKind(name, path, optional=path.startswith(_OPTIONAL_GROUPS))


# Nodes and pods, every kind the scheduler watches (`scheduler.watched`), and what the local
# endpoint needs besides to decide as the cluster would: PriorityClasses (admission resolves a
# pod's priorityClassName), claim templates (the resource-claim controller makes pods' claims)
# and the Workload API's PodGroups and Workloads (read with GenericWorkload).
KINDS: tuple[SnapshotKind, ...] = tuple(
    _kind(name, path)
    for name, path in (
        ("namespaces", "/api/v1/namespaces"),
        ("nodes", "/api/v1/nodes"),
        ("pods", "/api/v1/pods"),
        *((plural, path) for plural, (path, _) in PLUGIN_RESOURCES.items() if plural != "namespaces"),
        ("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses"),
        ("resourceclaimtemplates", "/apis/resource.k8s.io/v1/resourceclaimtemplates"),
        DEVICE_TAINT_RULES[:2],
        ("podgroups", f"/apis/{PODGROUPS.rpartition('/')[0]}/podgroups"),
        ("workloads", f"/apis/{PODGROUPS.rpartition('/')[0]}/workloads"),
    )
)


# scheduler-plugins' PodGroups (Coscheduling), with their CRD so that a copy of the cluster
# serves them: taken only where the cluster serves scheduling.x-k8s.io, else left out silently
# (most clusters do not run Coscheduling). Their store name is the CRD's name.
COSCHEDULING_PODGROUPS = "podgroups.scheduling.x-k8s.io"
_COSCHEDULING_PATH = f"/apis/{COSCHEDULING_KIND}"
_COSCHEDULING_CRD = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{COSCHEDULING_PODGROUPS}"


class SnapshotError(Exception):
    """A snapshot file that cannot be used; the message names the file and the problem."""


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return obj


async def list_all(client: ApiClient, path: str) -> list[dict[str, Any]] | None:
    """Every object of a collection, page by page; None when the cluster does not serve it (404)."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        params = {"limit": str(PAGE_SIZE), **({"continue": token} if token else {})}
        resp = await client.request("GET", path, params=params)
        if resp.status == 404:
            return None
        if resp.status == 410 and token:  # the continuation expired: one unpaginated list
            items.clear()
            resp = await client.request("GET", path)
            body = raise_for_status(resp)
            return [_clean(item) for item in body.get("items") or ()]
        body = raise_for_status(resp)
        items.extend(_clean(item) for item in body.get("items") or ())
        token = (body.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


async def take_snapshot(client: ApiClient, server: str = "") -> tuple[dict[str, Any], list[str]]:
    """Read every kind of `KINDS`; returns the snapshot and one line per kind left out.

    A required kind the cluster does not serve raises ``SnapshotError``."""
    objects: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for kind in KINDS:
        items = await list_all(client, kind.path)
        if items is None:
            if not kind.optional:
                raise SnapshotError(f"the cluster does not serve {kind.name} ({kind.path})")
            skipped.append(f"{kind.name} ({kind.group_version}): not served by the cluster, skipped")
            continue
        objects[kind.name] = items
    groups = await list_all(client, _COSCHEDULING_PATH)
    if groups is not None:
        crd = await client.request("GET", _COSCHEDULING_CRD)
        if crd.status in (403, 404):  # read-only access that does not reach CRDs: the gangs stay out
            skipped.append(
                f"{COSCHEDULING_PODGROUPS}: its CustomResourceDefinition could not be read "
                f"(HTTP {crd.status}), skipped"
            )
        else:
            objects["customresourcedefinitions"] = [_clean(raise_for_status(crd))]
            objects[COSCHEDULING_PODGROUPS] = groups
    snapshot = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "formatVersion": FORMAT_VERSION,
        "takenAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "server": server,
        "objects": objects,
        "skipped": skipped,
    }
    return snapshot, skipped


async def read_cluster(kubeconfig: str | None) -> tuple[dict[str, Any], list[str]]:
    """Snapshot the cluster a kubeconfig names (read-only: LISTs only)."""
    config = await load_client_config(kubeconfig)
    async with KubeClient(config) as client:
        return await take_snapshot(client, config.server)


def write_snapshot(snapshot: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(snapshot, separators=(",", ":")) + "\n")


def read_snapshot(path: str | Path) -> dict[str, list[Any]]:
    """The objects of a snapshot file, by store name; ``SnapshotError`` names what is wrong."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise SnapshotError(f"{path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise SnapshotError(f"{path}: not JSON: {exc}") from exc
    return parse_snapshot(doc, str(path))


def parse_snapshot(doc: Any, source: str) -> dict[str, list[Any]]:
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise SnapshotError(f"{source}: not a {KIND} (kind: {KIND} expected)")
    version = doc.get("formatVersion")
    if version != FORMAT_VERSION:
        raise SnapshotError(
            f"{source}: formatVersion {version!r} is not supported (this version reads {FORMAT_VERSION})"
        )
    objects = doc.get("objects")
    if not isinstance(objects, dict):
        raise SnapshotError(f"{source}: objects: a map of kind to a list of objects expected")
    for name, items in objects.items():
        if not isinstance(items, list):
            raise SnapshotError(f"{source}: objects.{name}: a list expected")
    return objects
