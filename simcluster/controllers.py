"""Minimal Deployment → ReplicaSet → Pod controllers, so `kubectl apply` of a Deployment makes pods.

Reconciles are level-based and coalesced: events mark objects dirty and one loop callback
reconciles them all, so a burst of pod events costs one pass per ReplicaSet. A template
change creates a new ReplicaSet and scales the old ones to zero (Recreate-like; no surge).
"""

from __future__ import annotations

import functools
import math
import time
from calendar import timegm
from typing import Any

import orjson

from simcluster.api import now
from simcluster.reconciling import Reconciler
from simcluster.resources import BY_STORE_NAME
from simcluster.selectors import labels_match, selector_requirements
from simcluster.store import Event

Obj = dict[str, Any]
PODS, RS, DEPLOY = BY_STORE_NAME["pods"], BY_STORE_NAME["replicasets"], BY_STORE_NAME["deployments"]
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: Obj) -> str:
    """A short, stable name suffix for a pod template (FNV-1a over its canonical JSON)."""
    value = 0x811C9DC5
    for byte in orjson.dumps(template, option=orjson.OPT_SORT_KEYS):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    out = []
    while value:
        value, digit = divmod(value, len(_SAFE))
        out.append(_SAFE[digit])
    return "".join(out) or _SAFE[0]


def _controller_of(obj: Obj, kind: str) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == kind:
            return ref
    return None


def _owner_ref(owner: Obj) -> Obj:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod_ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def _stamp(value: str | None) -> float | None:
    if not value:
        return None
    return timegm(time.strptime(value.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S"))


def _ready_time(pod: Obj) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            return _stamp(c.get("lastTransitionTime"))
    return None


def _deletion_cost(pod: Obj) -> int:
    try:
        return int(
            (pod["metadata"].get("annotations") or {}).get("controller.kubernetes.io/pod-deletion-cost", 0)
        )
    except ValueError:
        return 0


def _log_rank(stamp: float, clock: float) -> int:
    """floor(log2(age in nanoseconds)), -1 for no age: LogarithmicScaleDown's buckets."""
    age = (clock - stamp) * 1e9
    return int(math.log2(age)) if age > 0 else -1


def _newer_first(a: float | None, b: float | None, uid_a: str, uid_b: str, clock: float) -> int:
    """-1 when `a` goes first: a missing time first, then the younger by log2 bucket, then by uid."""
    if a == b:
        return 0
    if a is None or b is None:
        return -1 if a is None else 1
    diff = _log_rank(a, clock) - _log_rank(b, clock)
    if diff == 0:
        return -1 if uid_a < uid_b else (1 if uid_a > uid_b else 0)
    return -1 if diff < 0 else 1


def deletion_order(pods: list[Obj], related: list[Obj], clock: float) -> list[Obj]:
    """Pods in the order the ReplicaSet controller deletes them (ActivePodsWithRanks).

    Unassigned before assigned; Pending before Unknown before Running; not ready before
    ready; lower pod-deletion-cost first; more ready siblings on the same node first; then the
    more recently ready, the more restarted, the newer (by log2 age buckets, then uid)."""
    on_node: dict[str, int] = {}
    for pod in related:
        phase = (pod.get("status") or {}).get("phase")
        if phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp"):
            on_node[pod["spec"].get("nodeName", "")] = on_node.get(pod["spec"].get("nodeName", ""), 0) + 1

    def restarts(pod: Obj) -> int:
        return max(
            (c.get("restartCount", 0) for c in (pod.get("status") or {}).get("containerStatuses") or ()),
            default=0,
        )

    def compare(a: Obj, b: Obj) -> int:
        node_a, node_b = a["spec"].get("nodeName", ""), b["spec"].get("nodeName", "")
        if node_a != node_b and (not node_a or not node_b):
            return -1 if not node_a else 1
        phase_a = _PHASE_ORDER.get((a.get("status") or {}).get("phase", ""), 0)
        phase_b = _PHASE_ORDER.get((b.get("status") or {}).get("phase", ""), 0)
        if phase_a != phase_b:
            return -1 if phase_a < phase_b else 1
        ready_a, ready_b = _pod_ready(a), _pod_ready(b)
        if ready_a != ready_b:
            return -1 if not ready_a else 1
        cost_a, cost_b = _deletion_cost(a), _deletion_cost(b)
        if cost_a != cost_b:
            return -1 if cost_a < cost_b else 1
        rank_a, rank_b = on_node.get(node_a, 0), on_node.get(node_b, 0)
        if rank_a != rank_b:
            return -1 if rank_a > rank_b else 1
        uid_a, uid_b = a["metadata"]["uid"], b["metadata"]["uid"]
        if ready_a and ready_b:
            order = _newer_first(_ready_time(a), _ready_time(b), uid_a, uid_b, clock)
            if order:
                return order
        restarts_a, restarts_b = restarts(a), restarts(b)
        if restarts_a != restarts_b:
            return -1 if restarts_a > restarts_b else 1
        created_a, created_b = (
            _stamp(a["metadata"].get("creationTimestamp")),
            _stamp(b["metadata"].get("creationTimestamp")),
        )
        return _newer_first(created_a, created_b, uid_a, uid_b, clock)

    return sorted(pods, key=functools.cmp_to_key(compare))


class WorkloadControllers(Reconciler):
    # ---- event intake ------------------------------------------------------------------

    def _on_event(self, resource: str, event: Event) -> None:
        obj = event.obj
        ns = obj["metadata"].get("namespace", "")
        if resource == "deployments":
            self._mark("deployments", ns, obj["metadata"]["name"])
        elif resource == "replicasets":
            self._mark("replicasets", ns, obj["metadata"]["name"])
            owner = _controller_of(obj, "Deployment")
            if owner:
                self._mark("deployments", ns, owner["name"])
        elif resource == "pods":
            owner = _controller_of(obj, "ReplicaSet")
            if owner:
                self._mark("replicasets", ns, owner["name"])

    def _reconcile(self, resource: str, namespace: str, name: str) -> None:
        if resource == "deployments":
            self._reconcile_deployment(namespace, name)
        else:
            self._reconcile_replicaset(namespace, name)

    # ---- ReplicaSet --------------------------------------------------------------------

    def _owned_pods(self, rs: Obj) -> list[Obj]:
        uid = rs["metadata"]["uid"]
        return [
            e.obj
            for e in self.api.store.entries("pods", rs["metadata"]["namespace"])
            if (ref := _controller_of(e.obj, "ReplicaSet")) and ref.get("uid") == uid
        ]

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """The pods of every ReplicaSet of the same Deployment (upstream's indirectly related pods)."""
        owner = _controller_of(rs, "Deployment")
        if owner is None:
            return self._owned_pods(rs)
        siblings = [
            e.obj
            for e in self.api.store.entries("replicasets", rs["metadata"]["namespace"])
            if (ref := _controller_of(e.obj, "Deployment")) and ref.get("uid") == owner.get("uid")
        ]
        return [p for sibling in siblings for p in self._owned_pods(sibling)]

    def _reconcile_replicaset(self, ns: str, name: str) -> None:
        entry = self.api.store.entry("replicasets", ns, name)
        if entry is None or entry.obj["metadata"].get("deletionTimestamp"):
            return
        rs = entry.obj
        pods = [p for p in self._owned_pods(rs) if not p["metadata"].get("deletionTimestamp")]
        want = int(rs["spec"].get("replicas", 1))
        if len(pods) < want:
            template = rs["spec"].get("template") or {}
            for _ in range(want - len(pods)):
                meta = dict(template.get("metadata") or {})
                meta["generateName"] = f"{name}-"
                meta["ownerReferences"] = [_owner_ref(rs)]
                pods.append(
                    self.api.create(PODS, ns, {"metadata": meta, "spec": template.get("spec") or {}}).obj
                )
        elif len(pods) > want:
            pods = deletion_order(pods, self._related_pods(rs), time.time())
            for victim in pods[: len(pods) - want]:
                self.api.delete(PODS, ns, victim["metadata"]["name"], {"gracePeriodSeconds": 0})
            pods = pods[len(pods) - want :]
        selector = selector_requirements(rs["spec"].get("selector") or {})
        ready = sum(1 for p in pods if _pod_ready(p))
        status = {
            **(rs.get("status") or {}),
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(1 for p in pods if labels_match(selector, p)),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if status != rs.get("status"):
            self.api.update(RS, ns, name, {**rs, "status": status}, "status")

    # ---- Deployment --------------------------------------------------------------------

    def _reconcile_deployment(self, ns: str, name: str) -> None:
        entry = self.api.store.entry("deployments", ns, name)
        if entry is None or entry.obj["metadata"].get("deletionTimestamp"):
            return
        dep = entry.obj
        uid = dep["metadata"]["uid"]
        owned = [
            e.obj
            for e in self.api.store.entries("replicasets", ns)
            if (ref := _controller_of(e.obj, "Deployment")) and ref.get("uid") == uid
        ]
        template = dep["spec"].get("template") or {}
        digest = template_hash(template)
        rs_name = f"{name}-{digest}"
        replicas = int(dep["spec"].get("replicas", 1))
        current = next((rs for rs in owned if rs["metadata"]["name"] == rs_name), None)
        if current is None:
            labels = {**(template.get("metadata") or {}).get("labels", {}), "pod-template-hash": digest}
            selector = dict(dep["spec"].get("selector") or {})
            selector["matchLabels"] = {**(selector.get("matchLabels") or {}), "pod-template-hash": digest}
            rs_template = {**template, "metadata": {**(template.get("metadata") or {}), "labels": labels}}
            body = {
                "metadata": {
                    "name": rs_name,
                    "labels": labels,
                    "annotations": {"deployment.kubernetes.io/revision": str(len(owned) + 1)},
                    "ownerReferences": [_owner_ref(dep)],
                },
                "spec": {"replicas": replicas, "selector": selector, "template": rs_template},
            }
            current = self.api.create(RS, ns, body).obj
        elif int(current["spec"].get("replicas", 1)) != replicas:
            current = self.api.update(
                RS, ns, rs_name, {**current, "spec": {**current["spec"], "replicas": replicas}}
            ).obj
        for old in owned:
            if old["metadata"]["name"] != rs_name and int(old["spec"].get("replicas", 1)) != 0:
                self.api.update(
                    RS, ns, old["metadata"]["name"], {**old, "spec": {**old["spec"], "replicas": 0}}
                )
        rs_status = current.get("status") or {}
        total = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in owned if rs is not current)
        total += int(rs_status.get("replicas", 0))
        available = int(rs_status.get("availableReplicas", 0))
        status = {
            "observedGeneration": dep["metadata"].get("generation", 1),
            "replicas": total,
            "updatedReplicas": int(rs_status.get("replicas", 0)),
            "readyReplicas": int(rs_status.get("readyReplicas", 0)),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
        }
        old_conditions = {c.get("type"): c for c in (dep.get("status") or {}).get("conditions") or ()}
        status["conditions"] = [
            self._condition(
                old_conditions.get("Available"),
                "Available",
                available >= replicas,
                "MinimumReplicasAvailable" if available >= replicas else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if available >= replicas
                else "Deployment does not have minimum availability.",
            ),
            self._condition(
                old_conditions.get("Progressing"),
                "Progressing",
                True,
                "NewReplicaSetAvailable" if available >= replicas else "ReplicaSetUpdated",
                f'ReplicaSet "{rs_name}" has successfully progressed.'
                if available >= replicas
                else f'ReplicaSet "{rs_name}" is progressing.',
            ),
        ]
        if status != dep.get("status"):
            self.api.update(DEPLOY, ns, name, {**dep, "status": status}, "status")

    @staticmethod
    def _condition(old: Obj | None, kind: str, ok: bool, reason: str, message: str) -> Obj:
        value = "True" if ok else "False"
        if (
            old
            and old.get("status") == value
            and old.get("reason") == reason
            and old.get("message") == message
        ):
            return old
        stamp = now()
        return {
            "type": kind,
            "status": value,
            "lastUpdateTime": stamp,
            "lastTransitionTime": stamp,
            "reason": reason,
            "message": message,
        }
