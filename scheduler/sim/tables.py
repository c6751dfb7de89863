"""Server-side `Table` rendering so `kubectl get` prints the familiar columns.

kubectl asks for `as=Table`; without it, kubectl can only print names. Columns follow the
real server's printers for the kinds a scheduler demo shows (pods, nodes, workloads).
"""

from __future__ import annotations

import time
from calendar import timegm
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scheduler.sim.resources import ResourceType
from scheduler.sim.store import Entry

if TYPE_CHECKING:
    from scheduler.sim.api import ListResult

Obj = dict[str, Any]
Column = tuple[str, str, int, Callable[[Obj], Any]]  # name, type, priority, cell


def human_duration(seconds: float) -> str:
    """Like apimachinery's HumanDuration: coarser units as the age grows."""
    s = int(seconds)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 730:
        return f"{d}d"
    return f"{d // 365}y{d % 365}d" if d < 2920 else f"{d // 365}y"


def _age(obj: Obj) -> str:
    stamp = obj["metadata"].get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    created = timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    return human_duration(time.time() - created)


def _pod_ready(pod: Obj) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for c in statuses if c.get('ready'))}/{total}"


def _pod_status(pod: Obj) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    return status.get("reason") or status.get("phase") or "Unknown"


def _node_status(node: Obj) -> str:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    text = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(node: Obj) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in node["metadata"].get("labels") or {} if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _node_address(kind: str) -> Callable[[Obj], str]:
    def cell(node: Obj) -> str:
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") == kind:
                return address.get("address", "<none>")
        return "<none>"

    return cell


def _status(*path: str, default: Any = 0) -> Callable[[Obj], Any]:
    def cell(obj: Obj) -> Any:
        node: Any = obj
        for part in path:
            node = (node or {}).get(part)
        return default if node is None else node

    return cell


NAME: Column = ("Name", "string", 0, lambda o: o["metadata"]["name"])
AGE: Column = ("Age", "string", 0, _age)

COLUMNS: dict[str, list[Column]] = {
    "Pod": [
        NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        (
            "Restarts",
            "string",
            0,
            lambda p: str(
                sum(c.get("restartCount", 0) for c in (p.get("status") or {}).get("containerStatuses") or [])
            ),
        ),
        AGE,
        ("IP", "string", 1, _status("status", "podIP", default="<none>")),
        ("Node", "string", 1, _status("spec", "nodeName", default="<none>")),
        ("Nominated Node", "string", 1, _status("status", "nominatedNodeName", default="<none>")),
        ("Readiness Gates", "string", 1, lambda p: "<none>"),
    ],
    "Node": [
        NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        AGE,
        ("Version", "string", 0, _status("status", "nodeInfo", "kubeletVersion", default="")),
        ("Internal-IP", "string", 1, _node_address("InternalIP")),
        ("External-IP", "string", 1, _node_address("ExternalIP")),
        ("OS-Image", "string", 1, _status("status", "nodeInfo", "osImage", default="<unknown>")),
        ("Kernel-Version", "string", 1, _status("status", "nodeInfo", "kernelVersion", default="<unknown>")),
        (
            "Container-Runtime",
            "string",
            1,
            _status("status", "nodeInfo", "containerRuntimeVersion", default="<unknown>"),
        ),
    ],
    "Deployment": [
        NAME,
        (
            "Ready",
            "string",
            0,
            lambda d: f"{_status('status', 'readyReplicas')(d)}/{_status('spec', 'replicas')(d)}",
        ),
        ("Up-to-date", "integer", 0, _status("status", "updatedReplicas")),
        ("Available", "integer", 0, _status("status", "availableReplicas")),
        AGE,
    ],
    "ReplicaSet": [
        NAME,
        ("Desired", "integer", 0, _status("spec", "replicas")),
        ("Current", "integer", 0, _status("status", "replicas")),
        ("Ready", "integer", 0, _status("status", "readyReplicas")),
        AGE,
    ],
    "Namespace": [NAME, ("Status", "string", 0, _status("status", "phase", default="")), AGE],
    "PersistentVolumeClaim": [
        NAME,
        ("Status", "string", 0, _status("status", "phase", default="")),
        ("Volume", "string", 0, _status("spec", "volumeName", default="")),
        ("StorageClass", "string", 0, _status("spec", "storageClassName", default="<unset>")),
        AGE,
    ],
    "Lease": [NAME, ("Holder", "string", 0, _status("spec", "holderIdentity", default="")), AGE],
}


def table_for(rt: ResourceType, entries: list[Entry], result: ListResult | None, include: str | None) -> Obj:
    columns = COLUMNS.get(rt.kind, [NAME, AGE])
    rows = []
    for entry in entries:
        obj = entry.obj
        if include == "None":
            embedded = None
        elif include == "Object":
            embedded = obj
        else:
            embedded = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append({"cells": [cell(obj) for _, _, _, cell in columns], "object": embedded})
    meta: Obj = {}
    if result is not None:
        meta["resourceVersion"] = str(result.resource_version)
        if result.continue_token:
            meta["continue"] = result.continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
            for n, t, p, _ in columns
        ],
        "rows": rows,
    }
