"""The resource-claim controller of the local endpoint (kube-controller-manager's, for pods).

For each `spec.resourceClaims[]` entry naming a `resourceClaimTemplateName`, a claim is made
from the template: named `<pod>-<claim>-<5 random>` (both parts shortened in proportion when
that would pass 63 characters), controlled by the pod, annotated with the pod's claim name, and
recorded in `pod.status.resourceClaimStatuses`. A claim the controller made before the pod's
status said so is found again by its owner and annotation rather than made twice.

Reservations: an allocated claim of a pod bound without the scheduler gets the pod reserved;
`status.reservedFor` loses the pods that are gone, replaced or done; when the last one goes
and the claim carries the delete-protection finalizer the scheduler adds when it allocates,
the allocation is cleared and the finalizer removed, as upstream deallocates. A generated
claim nobody reserves whose pod is done is deleted; the garbage collector deletes it with
its pod. Work is coalesced: events mark pods and claims dirty, one loop callback handles them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from simcluster.api import Api, now
from simcluster.errors import ApiError
from simcluster.resources import BY_STORE_NAME
from simcluster.store import Event

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PODS, CLAIMS = BY_STORE_NAME["pods"], BY_STORE_NAME["resourceclaims"]
EVENTS = BY_STORE_NAME["events"]
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
MAX_RESERVED = 256  # ResourceClaimReservedForMaxSize
_MAX_BASE = 57  # a generated name keeps room for "-" and five random characters within 63


def generate_name(pod: str, claim: str) -> str:
    """The generateName of a claim made for `pod`'s claim entry `claim`."""
    base = f"{pod}-{claim}-"
    if len(base) <= _MAX_BASE:
        return base
    return f"{pod[: len(pod) * _MAX_BASE // len(base)]}-{claim[: len(claim) * _MAX_BASE // len(base)]}"


def pod_done(pod: Obj) -> bool:
    """A pod that will not run (again): terminal, or deleted before it was scheduled."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")


def owning_pod(claim: Obj) -> Obj | None:
    for ref in claim["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return ref
    return None


def _discard(index: dict[str, set[tuple[str, str]]], uid: str, key: tuple[str, str]) -> None:
    keys = index.get(uid)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[uid]


class ResourceClaimController:
    """Listens to the store (pods, claims, templates) and reconciles in one loop callback."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._pods: set[tuple[str, str]] = set()
        self._claims: set[tuple[str, str]] = set()
        self._scheduled = False
        # pod uid -> claims (namespace, name) that reserve it or that it controls
        self._reserving: dict[str, set[tuple[str, str]]] = {}
        self._owned: dict[str, set[tuple[str, str]]] = {}
        self._claim_pods: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {}  # the reverse
        # (namespace, template) -> pods waiting for it; pod uid -> claim entries already reported
        self._waiting: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._reported: dict[str, set[str]] = {}
        self._malformed: set[tuple[str, str, str]] = set()
        api.store.listeners.append(self._on_event)
        for entry in api.store.entries("resourceclaims"):
            self._index_claim(entry.obj, "ADDED")
            self._claims.add((entry.obj["metadata"]["namespace"], entry.obj["metadata"]["name"]))
        for entry in api.store.entries("pods"):
            if (entry.obj.get("spec") or {}).get("resourceClaims"):
                self._pods.add((entry.obj["metadata"]["namespace"], entry.obj["metadata"]["name"]))
        if self._pods or self._claims:
            self._schedule()

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    # ---- events ----------------------------------------------------------------------

    def _on_event(self, resource: str, event: Event) -> None:
        if resource == "pods":
            self._on_pod(event)
        elif resource == "resourceclaims":
            self._index_claim(event.obj, event.type)
            meta = event.obj["metadata"]
            if event.type != "DELETED":
                self._claims.add((meta["namespace"], meta["name"]))
                self._schedule()
        elif resource == "resourceclaimtemplates" and event.type == "ADDED":
            meta = event.obj["metadata"]
            waiting = self._waiting.pop((meta["namespace"], meta["name"]), None)
            if waiting:
                self._pods |= waiting
                self._schedule()

    def _on_pod(self, event: Event) -> None:
        pod = event.obj
        meta = pod["metadata"]
        uid = meta["uid"]
        if event.type == "DELETED" or pod_done(pod) or meta.get("deletionTimestamp"):
            self._claims |= self._reserving.get(uid, set()) | self._owned.get(uid, set())
            if event.type == "DELETED":
                self._reported.pop(uid, None)
        if event.type != "DELETED" and (pod.get("spec") or {}).get("resourceClaims"):
            self._pods.add((meta["namespace"], meta["name"]))
        self._schedule()

    def _index_claim(self, claim: Obj, kind: str) -> None:
        """Keep the pod uid -> claims indexes: the pods a claim reserves and the pod owning it."""
        meta = claim["metadata"]
        key = (meta["namespace"], meta["name"])
        reserving, owner_uid = self._claim_pods.pop(key, ((), ""))
        for uid in reserving:
            _discard(self._reserving, uid, key)
        if owner_uid:
            _discard(self._owned, owner_uid, key)
        if kind == "DELETED":
            return
        uids = tuple(
            ref.get("uid", "")
            for ref in (claim.get("status") or {}).get("reservedFor") or ()
            if ref.get("resource") == "pods" and not ref.get("apiGroup")
        )
        owner = owning_pod(claim)
        owner_uid = owner.get("uid", "") if owner is not None else ""
        for uid in uids:
            self._reserving.setdefault(uid, set()).add(key)
        if owner_uid:
            self._owned.setdefault(owner_uid, set()).add(key)
        if uids or owner_uid:
            self._claim_pods[key] = (uids, owner_uid)

    def _schedule(self) -> None:
        if not self._scheduled and (self._pods or self._claims):
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        pods, self._pods = self._pods, set()
        for namespace, name in sorted(pods):
            self._guarded("pod", namespace, name, self._sync_pod)
        claims, self._claims = self._claims, set()
        for namespace, name in sorted(claims):
            self._guarded("resource claim", namespace, name, self._sync_claim)

    def _guarded(self, what: str, namespace: str, name: str, sync: Callable[[str, str], None]) -> None:
        """One object's failure (a refused write, a status a client wrote malformed) spares the
        rest; a malformed object is reported once."""
        try:
            sync(namespace, name)
        except ApiError as err:
            log.warning("resource claim controller, %s %s/%s: %s", what, namespace, name, err.message)
        except (AttributeError, KeyError, TypeError) as err:
            if (what, namespace, name) not in self._malformed:
                self._malformed.add((what, namespace, name))
                log.warning(
                    "resource claim controller, %s %s/%s: skipped, malformed: %r", what, namespace, name, err
                )

    # ---- pods ------------------------------------------------------------------------

    def _sync_pod(self, namespace: str, name: str) -> None:
        entry = self.api.store.entry("pods", namespace, name)
        if entry is None or entry.obj["metadata"].get("deletionTimestamp") or pod_done(entry.obj):
            return
        pod = entry.obj
        recorded = {s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
        made: dict[str, str] = {}
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or ():
            template = pod_claim.get("resourceClaimTemplateName")
            if not template:
                continue
            status = recorded.get(pod_claim.get("name"))
            if status is not None and not status.get("resourceClaimName"):
                continue  # recorded as not needed
            if status is not None and self._owned_claim(pod, status["resourceClaimName"]) is not None:
                continue
            claim = self._find_generated(pod, pod_claim["name"]) or self._create(
                pod, pod_claim["name"], template
            )
            if claim is not None:
                made[pod_claim["name"]] = claim["metadata"]["name"]
        if made:
            statuses = {n: s for n, s in recorded.items() if n not in made}
            statuses.update({n: {"name": n, "resourceClaimName": c} for n, c in made.items()})
            new_status = {**(pod.get("status") or {}), "resourceClaimStatuses": list(statuses.values())}
            pod = self.api.update(PODS, namespace, name, {**pod, "status": new_status}, "status").obj
        if (pod.get("spec") or {}).get("nodeName"):
            self._reserve_for_bound(pod)

    def _owned_claim(self, pod: Obj, claim_name: str) -> Obj | None:
        found = self.api.store.entry("resourceclaims", pod["metadata"]["namespace"], claim_name)
        if found is None:
            return None
        owner = owning_pod(found.obj)
        return found.obj if owner is not None and owner.get("uid") == pod["metadata"]["uid"] else None

    def _find_generated(self, pod: Obj, pod_claim: str) -> Obj | None:
        """A claim made for this pod entry earlier (e.g. before the pod's status was written)."""
        namespace = pod["metadata"]["namespace"]
        for ns, name in sorted(self._owned.get(pod["metadata"]["uid"], ())):
            found = self.api.store.entry("resourceclaims", ns, name) if ns == namespace else None
            if (
                found is not None
                and (found.obj["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME) == pod_claim
            ):
                return found.obj
        return None

    def _create(self, pod: Obj, pod_claim: str, template_name: str) -> Obj | None:
        meta = pod["metadata"]
        namespace = meta["namespace"]
        template = self.api.store.entry("resourceclaimtemplates", namespace, template_name)
        if template is None:
            self._waiting.setdefault((namespace, template_name), set()).add((namespace, meta["name"]))
            self._report(
                pod,
                pod_claim,
                f'PodResourceClaim {pod_claim}: resource claim template "{template_name}": '
                f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found',
            )
            return None
        spec = template.obj.get("spec") or {}
        template_meta = spec.get("metadata") or {}
        claim_meta: Obj = {
            "generateName": generate_name(meta["name"], pod_claim),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
            "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME: pod_claim},
        }
        if template_meta.get("labels"):
            claim_meta["labels"] = dict(template_meta["labels"])
        return self.api.create(
            CLAIMS, namespace, {"metadata": claim_meta, "spec": spec.get("spec") or {}}
        ).obj

    def _report(self, pod: Obj, pod_claim: str, message: str) -> None:
        """A Warning event on the pod, once per pod and claim entry (upstream repeats it on retry)."""
        meta = pod["metadata"]
        reported = self._reported.setdefault(meta["uid"], set())
        if pod_claim in reported:
            return
        reported.add(pod_claim)
        stamp = now()
        event = {
            "metadata": {"generateName": f"{meta['name']}."},
            "involvedObject": {
                "kind": "Pod",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": "FailedResourceClaimCreation",
            "message": message,
            "type": "Warning",
            "source": {"component": "resource_claim"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self.api.create(EVENTS, meta["namespace"], event)

    def _reserve_for_bound(self, pod: Obj) -> None:
        """Reserve allocated claims for a pod that got its node without the scheduler."""
        meta = pod["metadata"]
        for name in self._claim_names(pod):
            found = self.api.store.entry("resourceclaims", meta["namespace"], name)
            if found is None:
                continue
            claim = found.obj
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if (
                not status.get("allocation")
                or claim["metadata"].get("deletionTimestamp")
                or any(r.get("uid") == meta["uid"] for r in reserved)
                or len(reserved) >= MAX_RESERVED
            ):
                continue
            consumer = {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}
            new = {**claim, "status": {**status, "reservedFor": [*reserved, consumer]}}
            self.api.update(CLAIMS, meta["namespace"], name, new, "status")

    @staticmethod
    def _claim_names(pod: Obj) -> list[str]:
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        recorded = {s.get("name"): s.get("resourceClaimName") for s in statuses}
        names = []
        for pod_claim in pod["spec"].get("resourceClaims") or ():
            name = pod_claim.get("resourceClaimName") or recorded.get(pod_claim.get("name"))
            if name:
                names.append(name)
        return names

    # ---- claims ----------------------------------------------------------------------

    def _keeps(self, namespace: str, ref: Obj) -> bool:
        """Whether a reservedFor entry still names a pod that may run (other consumers are kept)."""
        if ref.get("resource") != "pods" or ref.get("apiGroup"):
            return True
        found = self.api.store.entry("pods", namespace, ref.get("name", ""))
        return (
            found is not None and found.obj["metadata"]["uid"] == ref.get("uid") and not pod_done(found.obj)
        )

    def _sync_claim(self, namespace: str, name: str) -> None:
        found = self.api.store.entry("resourceclaims", namespace, name)
        if found is None:
            return
        claim = found.obj
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        remaining = [ref for ref in reserved if self._keeps(namespace, ref)]
        protected = FINALIZER in (claim["metadata"].get("finalizers") or ())
        release = False  # whether the claim is unallocated now and may lose the finalizer
        if len(remaining) < len(reserved):
            new_status = {k: v for k, v in status.items() if k != "reservedFor"}
            if remaining:
                new_status["reservedFor"] = remaining
            elif protected:
                new_status.pop("allocation", None)  # the last consumer is gone: deallocate
            claim = self.api.update(CLAIMS, namespace, name, {**claim, "status": new_status}, "status").obj
            release = protected and not (claim.get("status") or {}).get("allocation")
        elif protected and claim["metadata"].get("deletionTimestamp") and not remaining:
            if status.get("allocation"):
                new_status = {k: v for k, v in status.items() if k != "allocation"}
                claim = self.api.update(
                    CLAIMS, namespace, name, {**claim, "status": new_status}, "status"
                ).obj
            release = True
        if release:
            kept = self._drop_finalizer(claim)
            if kept is None:
                return
            claim = kept
        if remaining or claim["metadata"].get("deletionTimestamp"):
            return
        owner = owning_pod(claim)
        if owner is None:
            return
        pod = self.api.store.entry("pods", namespace, owner.get("name", ""))
        if pod is not None and (pod.obj["metadata"]["uid"] != owner.get("uid") or pod_done(pod.obj)):
            self.api.delete(CLAIMS, namespace, name)

    def _drop_finalizer(self, claim: Obj) -> Obj | None:
        meta = claim["metadata"]
        finalizers = [f for f in meta.get("finalizers") or () if f != FINALIZER]
        new_meta = {k: v for k, v in meta.items() if k != "finalizers"}
        if finalizers:
            new_meta["finalizers"] = finalizers
        updated = self.api.update(CLAIMS, meta["namespace"], meta["name"], {**claim, "metadata": new_meta})
        return (
            None
            if self.api.store.entry("resourceclaims", meta["namespace"], meta["name"]) is None
            else updated.obj
        )
