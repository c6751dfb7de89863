"""Server-side `Table` rendering so `kubectl get` prints the familiar columns.

kubectl asks for `as=Table`; without it, kubectl can only print names. Columns follow the
real server's printers for the kinds a scheduler demo shows (pods, nodes, workloads).
"""

from __future__ import annotations

import time
from calendar import timegm
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simcluster.events import to_core
from simcluster.printcolumns import custom_columns
from simcluster.resources import ResourceType
from simcluster.store import Entry

if TYPE_CHECKING:
    from simcluster.api import ListResult

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


def _since(stamp: str | None) -> str:
    """The age of an RFC 3339 Time or MicroTime, "<unknown>" for none (translateTimestampSince)."""
    if not stamp:
        return "<unknown>"
    created = timegm(time.strptime(stamp.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S"))
    return human_duration(time.time() - created)


def _age(obj: Obj) -> str:
    return _since(obj["metadata"].get("creationTimestamp"))


def _event_row(event: Obj) -> list[Any]:
    """Upstream's event printer over either Event form (core/v1 or events.k8s.io/v1)."""
    if "regarding" in event or "note" in event:
        event = to_core(event)
    first = _since(event.get("firstTimestamp") or event.get("eventTime"))
    last = _since(event["lastTimestamp"]) if event.get("lastTimestamp") else first
    count = event.get("count") or 1
    if event.get("series"):
        last = _since(event["series"].get("lastObservedTime"))
        count = event["series"].get("count", 0)
    target = event.get("involvedObject") or {}
    kind = (target.get("kind") or "").lower()
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        f"{kind}/{target['name']}" if target.get("name") else kind,
        target.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        (event.get("message") or "").strip(),
        first,
        count,
        event["metadata"]["name"],
    ]


def _job_status(job: Obj) -> str:
    conditions = {
        c.get("type") for c in (job.get("status") or {}).get("conditions") or () if c.get("status") == "True"
    }
    for kind, text in (("Complete", "Complete"), ("Failed", "Failed")):
        if kind in conditions:
            return text
    if job["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if kind in conditions:
            return kind
    return "Running"


def _job_completions(job: Obj) -> str:
    succeeded = (job.get("status") or {}).get("succeeded", 0)
    spec = job.get("spec") or {}
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(job: Obj) -> str:
    status = job.get("status") or {}
    start, end = status.get("startTime"), status.get("completionTime")
    if not start:
        return ""
    began = timegm(time.strptime(start, "%Y-%m-%dT%H:%M:%SZ"))
    ended = timegm(time.strptime(end, "%Y-%m-%dT%H:%M:%SZ")) if end else time.time()
    return human_duration(ended - began)


def _int_or_na(*path: str) -> Callable[[Obj], str]:
    def cell(obj: Obj) -> str:
        value = (obj.get("spec") or {}).get(path[-1])
        return "N/A" if value is None else str(value)

    return cell


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


def _no_cell(obj: Obj) -> Any:
    raise AssertionError("the kind's cells come from ROWS")


NAME: Column = ("Name", "string", 0, lambda o: o["metadata"]["name"])
AGE: Column = ("Age", "string", 0, _age)


def _service_ports(service: Obj) -> str:
    """``80/TCP,443:30443/TCP`` as kubectl prints a Service's ports."""
    cells = []
    for port in (service.get("spec") or {}).get("ports") or ():
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        cells.append(f"{port.get('port')}{node_port}/{port.get('protocol') or 'TCP'}")
    return ",".join(cells) or "<none>"


def _service_selector(service: Obj) -> str:
    selector = (service.get("spec") or {}).get("selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


def _claim_state(claim: Obj) -> str:
    """A ResourceClaim's STATE: deleted, pending or allocated, plus reserved (as kubectl prints it)."""
    status = claim.get("status") or {}
    deleted = bool(claim["metadata"].get("deletionTimestamp"))
    states = ["deleted"] if deleted else []
    if status.get("allocation"):
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    elif not deleted:
        states.append("pending")
    return ",".join(states)


COLUMNS: dict[str, list[Column]] = {
    "Service": [
        NAME,
        ("Type", "string", 0, _status("spec", "type", default="ClusterIP")),
        ("Cluster-IP", "string", 0, _status("spec", "clusterIP", default="<none>")),
        ("External-IP", "string", 0, lambda s: "<none>"),
        ("Port(s)", "string", 0, _service_ports),
        AGE,
        ("Selector", "string", 1, _service_selector),
    ],
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
    "Event": [
        (name, kind, priority, _no_cell)
        for name, kind, priority in (
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
        )
    ],
    "Secret": [
        NAME,
        ("Type", "string", 0, _status("type", default="")),
        ("Data", "string", 0, lambda s: len(s.get("data") or {})),
        AGE,
    ],
    "ConfigMap": [
        NAME,
        ("Data", "string", 0, lambda c: len(c.get("data") or {}) + len(c.get("binaryData") or {})),
        AGE,
    ],
    "Job": [
        NAME,
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        ("Duration", "string", 0, _job_duration),
        AGE,
    ],
    "ResourceClaim": [NAME, ("State", "string", 0, _claim_state), AGE],
    "ResourceSlice": [
        NAME,
        ("Node", "string", 0, _status("spec", "nodeName", default="")),
        ("Driver", "string", 0, _status("spec", "driver", default="")),
        ("Pool", "string", 0, _status("spec", "pool", "name", default="")),
        AGE,
    ],
    "PodDisruptionBudget": [
        NAME,
        ("Min Available", "string", 0, _int_or_na("minAvailable")),
        ("Max Unavailable", "string", 0, _int_or_na("maxUnavailable")),
        ("Allowed Disruptions", "integer", 0, _status("status", "disruptionsAllowed")),
        AGE,
    ],
}


# kinds whose printer computes a whole row at once
ROWS: dict[str, Callable[[Obj], list[Any]]] = {"Event": _event_row}


def table_for(
    rt: ResourceType,
    entries: list[Entry],
    result: ListResult | None,
    include: str | None,
    *,
    headers: bool = True,
) -> Obj:
    """The Table of `entries`; a watch sends `headers` (columnDefinitions) with its first event only."""
    columns = custom_columns(rt) if rt.crd else COLUMNS.get(rt.kind, [NAME, AGE])
    row_of = ROWS.get(rt.kind) or (lambda obj: [cell(obj) for _, _, _, cell in columns])
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
        rows.append({"cells": row_of(obj), "object": embedded})
    meta: Obj = {}
    if result is not None:
        meta["resourceVersion"] = str(result.resource_version)
        if result.continue_token:
            meta["continue"] = result.continue_token
    elif len(entries) == 1:
        meta["resourceVersion"] = entries[0].obj["metadata"].get("resourceVersion", "")
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
            for n, t, p, _ in columns
        ]
        if headers
        else None,
        "rows": rows,
    }
