"""Minimal Deployment → ReplicaSet → Pod controllers, so `kubectl apply` of a Deployment makes pods.

Reconciles are level-based and coalesced: events mark objects dirty and one loop callback
reconciles them all, so a burst of pod events costs one pass per ReplicaSet. A template
change creates a new ReplicaSet and scales the old ones to zero (Recreate-like; no surge).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from scheduler.sim.api import Api, now
from scheduler.sim.errors import ApiError
from scheduler.sim.resources import BY_STORE_NAME
from scheduler.sim.selectors import labels_match, parse_label_selector
from scheduler.sim.store import Event

log = logging.getLogger(__name__)
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


def _selector_requirements(selector: Obj) -> tuple[Any, ...]:
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        op, key, values = expr["operator"], expr["key"], ",".join(expr.get("values") or ())
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return parse_label_selector(",".join(parts))


class WorkloadControllers:
    def __init__(self, api: Api) -> None:
        self.api = api
        self._dirty: set[tuple[str, str, str]] = set()
        self._scheduled = False
        api.store.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

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

    def _mark(self, resource: str, ns: str, name: str) -> None:
        self._dirty.add((resource, ns, name))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        for resource, ns, name in sorted(dirty):
            try:
                if resource == "deployments":
                    self._reconcile_deployment(ns, name)
                else:
                    self._reconcile_replicaset(ns, name)
            except ApiError as err:
                log.warning("reconcile %s %s/%s: %s", resource, ns, name, err.message)

    # ---- ReplicaSet --------------------------------------------------------------------

    def _owned_pods(self, rs: Obj) -> list[Obj]:
        uid = rs["metadata"]["uid"]
        return [
            e.obj
            for e in self.api.store.entries("pods", rs["metadata"]["namespace"])
            if (ref := _controller_of(e.obj, "ReplicaSet")) and ref.get("uid") == uid
        ]

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
            # like the real controller: unassigned first, then not ready, then the newest
            pods.sort(
                key=lambda p: (
                    bool(p["spec"].get("nodeName")),
                    _pod_ready(p),
                    p["metadata"]["creationTimestamp"],
                )
            )
            for victim in pods[: len(pods) - want]:
                self.api.delete(PODS, ns, victim["metadata"]["name"], {"gracePeriodSeconds": 0})
            pods = pods[len(pods) - want :]
        selector = _selector_requirements(rs["spec"].get("selector") or {})
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
