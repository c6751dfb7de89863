"""A minimal Job controller: a batch/v1 Job gets its pods and a status counting them.

The Job's pods are created from its template (`<job>-<random>`, owned by the Job, labelled by
the API server's generated selector) up to `parallelism`, never past the completions still
owed. Pods that reach Succeeded or Failed are counted; the Job completes when `completions`
pods succeeded. The simulated kubelet never finishes a container, so a Job's pods run until
a test marks them Succeeded (as a real workload would by exiting).
"""

from __future__ import annotations

from typing import Any

from simcluster.api import now
from simcluster.reconciling import Reconciler
from simcluster.resources import BY_STORE_NAME
from simcluster.store import Event

Obj = dict[str, Any]
PODS, JOBS = BY_STORE_NAME["pods"], BY_STORE_NAME["jobs"]


def _controller_uid(obj: Obj, kind: str) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == kind:
            return ref.get("uid")
    return None


class JobController(Reconciler):
    def _on_event(self, resource: str, event: Event) -> None:
        meta = event.obj["metadata"]
        if resource == "jobs" and event.type != "DELETED":
            self._mark(resource, meta["namespace"], meta["name"])
        elif resource == "pods":
            ref = next(
                (
                    r
                    for r in meta.get("ownerReferences") or ()
                    if r.get("controller") and r.get("kind") == "Job"
                ),
                None,
            )
            if ref is not None:
                self._mark("jobs", meta["namespace"], ref["name"])

    def _reconcile(self, resource: str, namespace: str, name: str) -> None:
        entry = self.api.store.entry("jobs", namespace, name)
        if entry is None or entry.obj["metadata"].get("deletionTimestamp"):
            return
        job = entry.obj
        spec, old = job.get("spec") or {}, job.get("status") or {}
        uid = job["metadata"]["uid"]
        pods = [
            e.obj for e in self.api.store.entries("pods", namespace) if _controller_uid(e.obj, "Job") == uid
        ]
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
        active = [p for p, phase in zip(pods, phases, strict=True) if phase not in ("Succeeded", "Failed")]
        completions = spec.get("completions")
        done = completions is not None and succeeded >= completions
        if not done and not spec.get("suspend"):
            owed = (completions - succeeded) if completions is not None else spec.get("parallelism", 1)
            want = min(spec.get("parallelism", 1), owed)
            template = spec.get("template") or {}
            for _ in range(want - len(active)):
                meta = dict(template.get("metadata") or {})
                meta["generateName"] = f"{name}-"
                meta["ownerReferences"] = [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ]
                active.append(
                    self.api.create(PODS, namespace, {"metadata": meta, "spec": template.get("spec")}).obj
                )
        ready = sum(
            1
            for p in active
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in p["status"].get("conditions") or ()
            )
        )
        status: Obj = {
            **old,
            "startTime": old.get("startTime") or now(),
            "active": len(active),
            "ready": ready,
            "terminating": sum(1 for p in active if p["metadata"].get("deletionTimestamp")),
            "uncountedTerminatedPods": {},
        }
        for key, value in (("succeeded", succeeded), ("failed", failed)):
            if value:
                status[key] = value
        if not active:
            status.pop("active")
        if done and not any(c.get("type") == "Complete" for c in old.get("conditions") or ()):
            stamp = now()
            status["completionTime"] = stamp
            status["conditions"] = [
                *(old.get("conditions") or ()),
                *(
                    {"type": kind, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp}
                    for kind in ("SuccessCriteriaMet", "Complete")
                ),
            ]
        if status != old:
            self.api.update(JOBS, namespace, name, {**job, "status": status}, "status")
