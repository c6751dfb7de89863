"""What the real apiserver fills in on write (defaulting and create-time strategies), per kind.

Only the fields a scheduler and kubectl read are covered: pod scheduler name, priority,
phase, QoS class and requests-from-limits; node allocatable; namespace and claim phases;
workload replicas.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from simcluster import dra_validation, workloads
from simcluster.errors import ApiError, invalid
from simcluster.events import normalize_core
from simcluster.resources import ResourceType

Obj = dict[str, Any]


def _default_container(container: Obj) -> Obj:
    container = dict(container)
    resources = dict(container.get("resources") or {})
    limits = resources.get("limits") or {}
    if limits:
        requests = dict(resources.get("requests") or {})
        for name, quantity in limits.items():
            requests.setdefault(name, quantity)
        resources["requests"] = requests
    container["resources"] = resources
    container.setdefault("imagePullPolicy", "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    return container


def qos_class(spec: Obj) -> str:
    """Guaranteed when every container limits cpu and memory at its requests, BestEffort with none."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(pod: Obj, priorities: dict[str, int]) -> Obj:
    name = pod["metadata"].get("name", "")
    spec = dict(pod.get("spec") or {})
    containers = spec.get("containers")
    if not containers:
        raise invalid("Pod", name, "spec.containers", "Required value")
    for i, c in enumerate(containers):
        for field in ("name", "image"):
            if not c.get(field):
                raise invalid("Pod", name, f"spec.containers[{i}].{field}", "Required value")
    if spec.get("resourceClaims") or any((c.get("resources") or {}).get("claims") for c in containers):
        dra_validation.check_pod(name, spec)
    spec["containers"] = [_default_container(c) for c in containers]
    if spec.get("initContainers"):
        spec["initContainers"] = [_default_container(c) for c in spec["initContainers"]]
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    class_name = spec.get("priorityClassName")
    if class_name:
        if class_name not in priorities:
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: no PriorityClass with name {class_name} was found',
            )
        spec.setdefault("priority", priorities[class_name])
    else:
        spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = list(spec.get("tolerations") or [])
    # the DefaultTolerationSeconds admission plugin: five minutes on not-ready/unreachable nodes
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations
    pod["spec"] = spec
    return pod


def prepare_create(rt: ResourceType, obj: Obj, priorities: dict[str, int]) -> Obj:
    """Apply the create strategy of the kind; `obj` is private to the request and may be changed."""
    kind = rt.kind
    if rt.has_status and not rt.keep_status_on_create:
        obj["status"] = {}
    if kind == "Pod":
        obj = default_pod(obj, priorities)
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj["spec"])}
        if obj["spec"].get("schedulingGates"):
            obj["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]
    elif kind == "Node":
        status = dict(obj.get("status") or {})
        if "capacity" in status and "allocatable" not in status:
            status["allocatable"] = status["capacity"]
        obj["status"] = status
        obj.setdefault("spec", {})
    elif kind == "Namespace":
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    elif kind in ("PersistentVolumeClaim", "PersistentVolume"):
        obj["status"] = {"phase": "Pending"}
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec = dict(obj.get("spec") or {})
        spec.setdefault("replicas", 1)
        if kind == "Deployment":
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
            strategy = dict(spec.get("strategy") or {})
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                strategy["rollingUpdate"] = {
                    "maxSurge": "25%",
                    "maxUnavailable": "25%",
                    **(strategy.get("rollingUpdate") or {}),
                }
            spec["strategy"] = strategy
        if not (spec.get("selector") or {}).get("matchLabels") and not (spec.get("selector") or {}).get(
            "matchExpressions"
        ):
            raise invalid(kind, obj["metadata"].get("name", ""), "spec.selector", "Required value", rt.group)
        obj["spec"] = spec
    elif kind == "StorageClass":
        # the API server's defaults for storage.k8s.io/v1 StorageClass
        obj.setdefault("volumeBindingMode", "Immediate")
        obj.setdefault("reclaimPolicy", "Delete")
    elif kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind == "Secret":
        obj.setdefault("type", "Opaque")
    elif kind == "Job":
        obj["spec"] = _job_spec(obj)
    elif kind == "Event" and not rt.group:
        obj = normalize_core(obj)
    elif rt.group == dra_validation.GROUP:
        obj = dra_validation.prepare(rt, obj)
    elif kind == "PodGroup" and rt.group == workloads.GROUP:
        workloads.check_pod_group(obj)
    elif kind == "Workload" and rt.group == workloads.GROUP:
        workloads.check_workload(obj)
    return obj


def _job_spec(job: Obj) -> Obj:
    """batch/v1 Job defaults and the generated selector (unless spec.manualSelector)."""
    meta = job["metadata"]
    spec = dict(job.get("spec") or {})
    template = dict(spec.get("template") or {})
    pod_spec = template.get("spec") or {}
    policy = pod_spec.get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        why = (
            f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"'
            if policy
            else 'Required value: valid values: "OnFailure", "Never"'
        )
        raise invalid("Job", meta["name"], "spec.template.spec.restartPolicy", why, "batch")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    if spec.get("manualSelector") is not True:
        uid, name = meta["uid"], meta["name"]
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        template["metadata"] = {**(template.get("metadata") or {}), "labels": labels}
    spec["template"] = template
    return spec


def prepare_status_update(rt: ResourceType, old: Obj, new: Obj) -> None:
    """Checks of a status subresource write (a ResourceClaim's allocation and reservations)."""
    if rt.kind == "ResourceClaim" and rt.group == dra_validation.GROUP:
        dra_validation.prepare_claim_status(rt, old, new)


def prepare_update(rt: ResourceType, old: Obj, new: Obj) -> None:
    """Checks of the update strategy: a pod's scheduling gates can only be removed; resource.k8s.io
    objects are defaulted and validated again (a claim's spec is immutable); a PodGroup's spec is
    immutable."""
    if rt.group == dra_validation.GROUP:
        dra_validation.prepare(rt, new, old)
        return
    if rt.kind == "PodGroup" and rt.group == workloads.GROUP:
        workloads.check_pod_group_update(old, new)
        return
    if rt.kind != "Pod" or rt.group:
        return
    before = {g.get("name") for g in (old.get("spec") or {}).get("schedulingGates") or ()}
    for i, gate in enumerate((new.get("spec") or {}).get("schedulingGates") or ()):
        if gate.get("name") not in before:
            raise invalid(
                "Pod",
                new["metadata"].get("name", ""),
                f"spec.schedulingGates[{i}].name",
                f"Forbidden: only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
            )
