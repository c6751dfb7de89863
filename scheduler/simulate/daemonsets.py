"""`--add`'s DaemonSets: one pod per node the DaemonSet controller would run one on.

As the controller does, each pod gets the tolerations it adds to every daemon pod and a required
node affinity for its node (``matchFields metadata.name``), so the scheduler places it there or
leaves it pending with its reason; a node gets none when the pod template's node selector or
required node affinity does not select it, or one of its NoSchedule/NoExecute taints is not
tolerated. Pods are named ``<daemonset>-<suffix>`` with a suffix derived from the node's name.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from scheduler.api.selectors import NodeSelector, SelectorError
from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, Taint, Toleration, untolerated
from scheduler.simulate.workloads import ManifestError, Workload, owner_reference, suffix, template_of

Obj = dict[str, Any]

# The tolerations the controller adds to every daemon pod (network-unavailable for host network).
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", NO_EXECUTE),
    ("node.kubernetes.io/unreachable", NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/unschedulable", NO_SCHEDULE),
)
_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", NO_SCHEDULE)


def daemon_pods(daemonset: Obj, nodes: Iterable[Obj], where: str, scheduler_name: str) -> Workload:
    """The DaemonSet and a pod for each node of ``nodes`` it should run on."""
    meta = daemonset.get("metadata") if isinstance(daemonset.get("metadata"), dict) else None
    if meta is None or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ManifestError(f"{where}: DaemonSet: metadata.name is required")
    name, namespace = meta["name"], meta.get("namespace") or "default"
    body = copy.deepcopy(daemonset)
    body["metadata"]["namespace"] = namespace
    template = template_of(body.get("spec"), where, f"DaemonSet {name}")
    spec = copy.deepcopy(template["spec"])
    spec["tolerations"] = _with_daemon_tolerations(spec)
    try:
        required = _required_affinity(spec)
    except SelectorError as exc:
        raise ManifestError(f"{where}: DaemonSet {name}: {'; '.join(exc.messages)}") from exc
    tolerations = [Toleration.parse(t) for t in spec["tolerations"] if isinstance(t, dict)]
    workload = Workload(f"DaemonSet {namespace}/{name}", [("daemonsets", body)])
    for node in nodes:
        node_name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        if not _selected(spec, required, labels, node_name):
            continue
        taints = [Taint.parse(t) for t in (node.get("spec") or {}).get("taints") or ()]
        if untolerated(taints, tolerations, (NO_SCHEDULE, NO_EXECUTE)) is not None:
            continue
        pod_spec = copy.deepcopy(spec)
        _pin(pod_spec, node_name)
        pod_spec.setdefault("schedulerName", scheduler_name)
        pod_meta = copy.deepcopy(template.get("metadata") or {})
        pod_meta.update(
            name=f"{name}-{suffix(f'{name}/{node_name}')}",
            namespace=namespace,
            ownerReferences=[owner_reference(body)],
        )
        workload.objects.append(
            ("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec})
        )
    return workload


def _with_daemon_tolerations(spec: Obj) -> list[Obj]:
    tolerations = [t for t in spec.get("tolerations") or () if isinstance(t, dict)]
    wanted = list(_DAEMON_TOLERATIONS) + ([_HOST_NETWORK_TOLERATION] if spec.get("hostNetwork") else [])
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return tolerations


def _required_affinity(spec: Obj) -> NodeSelector | None:
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return NodeSelector.parse(affinity) if isinstance(affinity, dict) else None


def _selected(spec: Obj, required: NodeSelector | None, labels: dict[str, str], node_name: str) -> bool:
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    return required is None or required.matches(labels, node_name)


def _pin(spec: Obj, node_name: str) -> None:
    """The controller's node affinity: the required terms replaced by one naming the node (it
    checked the node against them already)."""
    pinned = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [pinned]}
