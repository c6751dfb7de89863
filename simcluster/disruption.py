"""A minimal disruption controller: PodDisruptionBudget status from the pods it selects.

Eviction (and the scheduler's preemption) read `status.disruptionsAllowed`, so someone must
compute it, as kube-controller-manager's disruption controller does: healthy pods are the
Ready ones not being deleted nor listed in `disruptedPods`; `desiredHealthy` comes from
minAvailable or maxUnavailable (percentages of the expected pods, rounded up), the expected
pods being the replicas of the pods' controllers (or the pods themselves without one).
Reconciles are coalesced per loop turn like the workload controllers'.
"""

from __future__ import annotations

import math
import time
from calendar import timegm
from typing import Any

from simcluster.api import now
from simcluster.reconciling import Reconciler
from simcluster.resources import BY_STORE_NAME
from simcluster.selectors import labels_match, selector_requirements
from simcluster.store import Event

Obj = dict[str, Any]
PDBS = BY_STORE_NAME["poddisruptionbudgets"]
DISRUPTED_TIMEOUT = 120  # seconds an eviction waits in disruptedPods for its pod to go (upstream)


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * total / 100)


class DisruptionController(Reconciler):
    def _on_event(self, resource: str, event: Event) -> None:
        meta = event.obj["metadata"]
        if resource == "poddisruptionbudgets" and event.type != "DELETED":
            self._mark(resource, meta["namespace"], meta["name"])
        elif resource == "pods":
            for entry in self.api.store.entries("poddisruptionbudgets", meta["namespace"]):
                self._mark("poddisruptionbudgets", meta["namespace"], entry.obj["metadata"]["name"])

    def _expected(self, pods: list[Obj]) -> int:
        """The pods the budget's workloads want: each controller's replicas, counted once."""
        total, seen = 0, set()
        for pod in pods:
            ref = next((r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")), None)
            if ref is None:
                total += 1
                continue
            if ref["uid"] in seen:
                continue
            seen.add(ref["uid"])
            owner = self._owner(pod["metadata"]["namespace"], ref)
            total += int((owner or {}).get("spec", {}).get("replicas", 1)) if owner else 1
        return total

    def _owner(self, namespace: str, ref: Obj) -> Obj | None:
        plural = {
            "ReplicaSet": "replicasets",
            "StatefulSet": "statefulsets",
            "ReplicationController": "replicationcontrollers",
        }.get(ref.get("kind", ""))
        entry = self.api.store.entry(plural, namespace, ref["name"]) if plural else None
        if entry is None:
            return None
        parent = next(
            (r for r in entry.obj["metadata"].get("ownerReferences") or () if r.get("controller")), None
        )
        if parent and parent.get("kind") == "Deployment":
            deployment = self.api.store.entry("deployments", namespace, parent["name"])
            if deployment is not None:
                return deployment.obj
        return entry.obj

    def _reconcile(self, resource: str, namespace: str, name: str) -> None:
        entry = self.api.store.entry("poddisruptionbudgets", namespace, name)
        if entry is None:
            return
        pdb = entry.obj
        spec, old = pdb.get("spec") or {}, pdb.get("status") or {}
        selector = spec.get("selector")
        requirements = selector_requirements(selector) if selector is not None else None
        pods = [
            e.obj
            for e in self.api.store.entries("pods", namespace)
            if requirements is not None and labels_match(requirements, e.obj)
        ]
        names = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
        clock = time.time()
        disrupted = {
            pod: stamp
            for pod, stamp in (old.get("disruptedPods") or {}).items()
            if pod in names and clock - timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) < DISRUPTED_TIMEOUT
        }
        healthy = sum(
            1
            for p in pods
            if _ready(p)
            and not p["metadata"].get("deletionTimestamp")
            and p["metadata"]["name"] not in disrupted
        )
        if spec.get("maxUnavailable") is not None:
            expected = self._expected(pods)
            desired = max(expected - _scaled(spec["maxUnavailable"], expected), 0)
        elif isinstance(spec.get("minAvailable"), str):
            expected = self._expected(pods)
            desired = _scaled(spec["minAvailable"], expected)
        else:
            expected = len(pods)
            desired = int(spec.get("minAvailable") or 0)
        allowed = max(healthy - desired, 0)
        generation = pdb["metadata"].get("generation", 1)
        condition = {
            "type": "DisruptionAllowed",
            "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
            "observedGeneration": generation,
        }
        before = next((c for c in old.get("conditions") or () if c.get("type") == "DisruptionAllowed"), None)
        same = before is not None and all(
            before.get(k) == v for k, v in condition.items() if k != "observedGeneration"
        )
        condition["lastTransitionTime"] = before["lastTransitionTime"] if same and before else now()
        status: Obj = {
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": [condition],
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        if status != old:
            self.api.update(PDBS, namespace, name, {**pdb, "status": status}, "status")
