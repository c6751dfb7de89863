"""`--add`'s workload kinds expanded into the objects their controllers would create.

The simulated cluster runs no workload controllers, so a Deployment, ReplicaSet, StatefulSet,
Job or CronJob (the Job of one run) is turned here into its pods (named as their controllers name
them, with deterministic suffixes so a simulation repeats), the owning objects the scheduler's
default spreading reads (a Deployment's ReplicaSet, the StatefulSet itself) and a StatefulSet's
claims. Differences
from the controllers: every replica is created at once (a StatefulSet's OrderedReady waits for
Ready pods, which never come without a kubelet) and a Job's pods count its parallelism only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from simcluster.controllers import template_hash

Obj = dict[str, Any]
SUPPORTED = ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob")
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


class ManifestError(Exception):
    """A manifest `--add` cannot use; the message names the file, the document and the field."""


@dataclass
class Workload:
    """One manifest's objects, in creation order, as (store name, object).

    A pod's ownerReferences carry an empty uid: the runner fills in the uid its owner got."""

    source: str  # "Deployment default/web"
    objects: list[tuple[str, Obj]] = field(default_factory=list)

    @property
    def pods(self) -> list[Obj]:
        return [obj for resource, obj in self.objects if resource == "pods"]


def suffix(seed: str) -> str:
    """Five name characters as the API server's generateName picks, but derived from `seed`."""
    return template_hash({"seed": seed}).ljust(5, _SAFE[0])[:5]


def expand(obj: Any, where: str, scheduler_name: str) -> Workload:
    """The objects one manifest stands for; ``scheduler_name`` fills a pod spec naming none."""
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: an object expected")
    kind = obj.get("kind")
    if kind not in SUPPORTED:
        raise ManifestError(
            f"{where}: kind {kind!r} is not supported by --add (one of {', '.join(SUPPORTED)})"
        )
    raw_meta = obj.get("metadata")
    meta: Obj = raw_meta if isinstance(raw_meta, dict) else {}
    name = meta.get("name") or (meta.get("generateName") if kind == "Pod" else None)
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{where}: {kind}: metadata.name is required")
    if not isinstance(obj.get("spec"), dict):
        raise ManifestError(f"{where}: {kind} {name}: spec is required")
    namespace = meta.get("namespace") or "default"
    if kind == "CronJob":
        return _cron_job(obj, where, scheduler_name, f"{kind} {namespace}/{name}")
    body = copy.deepcopy(obj)
    body["metadata"]["namespace"] = namespace
    workload = Workload(f"{kind} {namespace}/{name}")
    if kind == "Pod":
        if not meta.get("name"):  # generateName: a deterministic suffix
            body["metadata"]["name"] = name + suffix(name)
            body["metadata"].pop("generateName", None)
        _default_scheduler(body["spec"], scheduler_name)
        workload.objects.append(("pods", body))
        return workload
    spec = body["spec"]
    template = template_of(spec, where, f"{kind} {name}")
    replicas = _count(spec, "parallelism" if kind == "Job" else "replicas", where, f"{kind} {name}")
    if kind == "Job" and spec.get("completions") is not None:
        replicas = min(replicas, _count(spec, "completions", where, f"Job {name}"))
    owner = body
    if kind == "Deployment":
        owner = _replicaset_of(body, template, replicas)
        template = owner["spec"]["template"]
        workload.objects.append(("deployments", body))
    workload.objects.append((_RESOURCES[owner["kind"]], owner))
    for index in range(replicas):
        workload.objects += _replica(owner, template, index, where, scheduler_name)
    return workload


def _cron_job(cron_job: Obj, where: str, scheduler_name: str, source: str) -> Workload:
    """One run of a CronJob: the Job of its jobTemplate (named with a deterministic suffix)."""
    template = cron_job["spec"].get("jobTemplate")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise ManifestError(
            f"{where}: CronJob {cron_job['metadata']['name']}: spec.jobTemplate.spec is required"
        )
    meta = cron_job["metadata"]
    name = f"{meta['name']}-{suffix(meta['name'])}"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            **copy.deepcopy(template.get("metadata") or {}),
            "name": name,
            "namespace": meta.get("namespace") or "default",
        },
        "spec": copy.deepcopy(template["spec"]),
    }
    workload = expand(job, where, scheduler_name)
    workload.source = source
    return workload


_RESOURCES = {"ReplicaSet": "replicasets", "StatefulSet": "statefulsets", "Job": "jobs"}


def _replicaset_of(deployment: Obj, template: Obj, replicas: int) -> Obj:
    """The ReplicaSet a Deployment's controller makes for its template (named by its hash)."""
    digest = template_hash(template)
    labels = {**_labels(template), "pod-template-hash": digest}
    selector = dict(deployment["spec"].get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), "pod-template-hash": digest}
    meta = deployment["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{digest}",
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [owner_reference(deployment)],
        },
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": {**template, "metadata": {**(template.get("metadata") or {}), "labels": labels}},
        },
    }


def _replica(owner: Obj, template: Obj, index: int, where: str, scheduler_name: str) -> list[tuple[str, Obj]]:
    """Replica ``index`` of a ReplicaSet, StatefulSet or Job: its pod, after its claims if any."""
    kind, name, namespace = owner["kind"], owner["metadata"]["name"], owner["metadata"]["namespace"]
    spec = owner["spec"]
    indexed = kind == "Job" and spec.get("completionMode") == "Indexed"
    if kind == "StatefulSet":
        pod_name = f"{name}-{index}"
    elif indexed:
        pod_name = f"{name}-{index}-{suffix(f'{name}/{index}')}"
    else:
        pod_name = f"{name}-{suffix(f'{name}/{index}')}"
    meta = copy.deepcopy(template.get("metadata") or {})
    meta.update(name=pod_name, namespace=namespace, ownerReferences=[owner_reference(owner)])
    pod_spec = copy.deepcopy(template.get("spec") or {})
    labels = meta.setdefault("labels", {})
    objects: list[tuple[str, Obj]] = []
    if kind == "StatefulSet":
        labels["statefulset.kubernetes.io/pod-name"] = pod_name
        labels["apps.kubernetes.io/pod-index"] = str(index)
        labels["controller-revision-hash"] = f"{name}-{template_hash(template)}"
        pod_spec.setdefault("hostname", pod_name)
        if spec.get("serviceName"):
            pod_spec.setdefault("subdomain", spec["serviceName"])
        objects += _claims(spec, name, index, namespace, pod_spec, where)
    elif kind == "Job":
        labels.update({"batch.kubernetes.io/job-name": name, "job-name": name})
        if indexed:
            labels["batch.kubernetes.io/job-completion-index"] = str(index)
            meta.setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = str(index)
            pod_spec.setdefault("hostname", f"{name}-{index}")
    _default_scheduler(pod_spec, scheduler_name)
    objects.append(("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}))
    return objects


def _default_scheduler(spec: Obj, scheduler_name: str) -> None:
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name


def template_of(spec: Any, where: str, what: str) -> Obj:
    """A workload's pod template, checked to hold a spec."""
    template = spec.get("template") if isinstance(spec, dict) else None
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise ManifestError(f"{where}: {what}: spec.template.spec is required")
    return template


def _labels(template: Obj) -> dict[str, str]:
    return dict((template.get("metadata") or {}).get("labels") or {})


def _count(spec: Obj, key: str, where: str, what: str) -> int:
    value = spec.get(key, 1)
    if value is None:
        value = 1
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ManifestError(f"{where}: {what}: spec.{key}: a non-negative integer expected, got {value!r}")
    return value


def owner_reference(owner: Obj) -> Obj:
    """The controller reference to ``owner``; the uid is filled in once it is created."""
    return {
        "apiVersion": owner.get("apiVersion") or "apps/v1",
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _claims(
    spec: Obj, sts: str, index: int, namespace: str, pod_spec: Obj, where: str
) -> list[tuple[str, Obj]]:
    """A StatefulSet replica's claims from its volumeClaimTemplates, and the pod's volumes for them."""
    claims: list[tuple[str, Obj]] = []
    volumes = [v for v in pod_spec.get("volumes") or () if isinstance(v, dict)]
    for template in spec.get("volumeClaimTemplates") or ():
        tmpl_name = (template.get("metadata") or {}).get("name") if isinstance(template, dict) else None
        if not tmpl_name:
            raise ManifestError(
                f"{where}: StatefulSet {sts}: volumeClaimTemplates[].metadata.name is required"
            )
        claim_name = f"{tmpl_name}-{sts}-{index}"
        meta = {**copy.deepcopy(template.get("metadata") or {}), "name": claim_name, "namespace": namespace}
        claims.append(
            (
                "persistentvolumeclaims",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": meta,
                    "spec": copy.deepcopy(template.get("spec") or {}),
                },
            )
        )
        volumes = [v for v in volumes if v.get("name") != tmpl_name]
        volumes.append({"name": tmpl_name, "persistentVolumeClaim": {"claimName": claim_name}})
    if claims:
        pod_spec["volumes"] = volumes
    return claims
