"""Storage for the local endpoint: a PV controller that binds claims, and a provisioner.

A simplified stand-in for kube-controller-manager's persistentvolume controller plus an external
provisioner, so WaitForFirstConsumer works end to end against the sim:

- claims of an Immediate class (or of no class) bind at once to the smallest matching Available
  PV, or get a new one from the class's provisioner;
- claims of a WaitForFirstConsumer class wait for the scheduler: it either points a PV's
  ``claimRef`` at the claim (static binding) or annotates the claim with
  ``volume.kubernetes.io/selected-node``, and then a PV is provisioned with node affinity to that
  node's value of the class parameter ``topologyKey`` (default ``kubernetes.io/hostname``, i.e. a
  local volume) and bound;
- binding writes what the real controller writes: the PV's claimRef and phase Bound, the claim's
  ``volumeName``, its ``pv.kubernetes.io/bind-completed`` annotation and phase Bound.

Reconciles are level-based and coalesced like the workload controllers: any storage event marks
the world dirty and one loop callback looks at every unbound claim.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scheduler.api import LabelSelector, SelectorError
from scheduler.api.quantity import QuantityError, int_value
from simcluster.api import Api
from simcluster.errors import ApiError
from simcluster.resources import BY_STORE_NAME
from simcluster.store import Event

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PV, PVC = BY_STORE_NAME["persistentvolumes"], BY_STORE_NAME["persistentvolumeclaims"]
HOSTNAME = "kubernetes.io/hostname"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
_WATCHED = frozenset({"persistentvolumes", "persistentvolumeclaims", "storageclasses"})


class VolumeControllers:
    def __init__(self, api: Api) -> None:
        self.api = api
        self._scheduled = False
        api.store.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    def _on_event(self, resource: str, event: Event) -> None:
        if resource in _WATCHED and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        for pv in self.api.store.list("persistentvolumes"):
            try:
                self._sync_volume(pv)
            except ApiError as err:
                log.warning("sync PersistentVolume %s: %s", pv["metadata"]["name"], err.message)
        claimed: dict[tuple[str, str], list[Obj]] = {}  # (namespace, name) -> PVs whose claimRef names it
        for pv in self.api.store.list("persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            if ref.get("name"):
                claimed.setdefault((ref.get("namespace") or "", ref["name"]), []).append(pv)
        for pvc in self.api.store.list("persistentvolumeclaims"):
            if is_fully_bound(pvc) or pvc["metadata"].get("deletionTimestamp"):
                continue
            try:
                self._sync_claim(pvc, claimed)
            except ApiError as err:
                meta = pvc["metadata"]
                log.warning(
                    "sync PersistentVolumeClaim %s/%s: %s", meta["namespace"], meta["name"], err.message
                )

    # ---- volumes -----------------------------------------------------------------------

    def _sync_volume(self, pv: Obj) -> None:
        """New volumes become Available; a volume whose claim is gone is Released."""
        phase = (pv.get("status") or {}).get("phase")
        ref = pv["spec"].get("claimRef")
        if not ref or not ref.get("uid"):
            wanted = "Available"  # free, or pre-bound to a claim not bound yet
        elif self.api.store.get("persistentvolumeclaims", ref.get("namespace"), ref["name"]) is None:
            wanted = "Released"
        else:
            return  # bound or being bound: _bind sets the phase
        if phase != wanted and phase in (None, "Pending", "Available", "Bound"):
            self._set_phase(PV, None, pv, wanted)

    def _set_phase(self, rt: Any, namespace: str | None, obj: Obj, phase: str, **extra: Any) -> Obj:
        status = {**(obj.get("status") or {}), "phase": phase, **extra}
        if status == obj.get("status"):
            return obj
        return self.api.update(
            rt, namespace, obj["metadata"]["name"], {**obj, "status": status}, "status"
        ).obj

    # ---- claims ------------------------------------------------------------------------

    def _sync_claim(self, pvc: Obj, claimed: dict[tuple[str, str], list[Obj]]) -> None:
        """``claimed``: the PVs whose claimRef names each claim as the pass began (a pass over
        every claim must not look at every PV for each)."""
        wanted_name = pvc["spec"].get("volumeName")
        if wanted_name:
            pv = self.api.store.get("persistentvolumes", None, wanted_name)
            if pv is not None and (not pv["spec"].get("claimRef") or is_bound_to_claim(pv, pvc)):
                self._bind(pv, pvc)
            return
        key = (pvc["metadata"].get("namespace") or "", pvc["metadata"]["name"])
        chosen = next((pv for pv in claimed.get(key, ()) if is_bound_to_claim(pv, pvc)), None)
        if chosen is not None:  # the scheduler (or a user) chose this volume
            self._bind(chosen, pvc)
            return
        class_name = claim_class(pvc)
        storage_class = self.api.store.get("storageclasses", None, class_name) if class_name else None
        if storage_class is not None and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER:
            node_name = selected_node(pvc)
            if node_name and _can_provision(storage_class):
                self._provision(pvc, storage_class, node_name)
            return
        match = find_matching_volume(pvc, self.api.store.list("persistentvolumes"))  # this pass's binds
        if match is not None:
            self._bind(match, pvc)
        elif storage_class is not None and _can_provision(storage_class):
            self._provision(pvc, storage_class, None)

    def _provision(self, pvc: Obj, storage_class: Obj, node_name: str | None) -> None:
        meta = pvc["metadata"]
        spec: Obj = {
            "capacity": {
                "storage": ((pvc["spec"].get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            },
            "accessModes": list(pvc["spec"].get("accessModes") or ["ReadWriteOnce"]),
            "storageClassName": storage_class["metadata"]["name"],
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "volumeMode": pvc["spec"].get("volumeMode") or "Filesystem",
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "csi": {"driver": storage_class["provisioner"], "volumeHandle": f"pvc-{meta['uid']}"},
        }
        if node_name is not None:
            node = self.api.store.get("nodes", None, node_name)
            if node is None:
                log.warning(
                    "cannot provision %s/%s: node %s not found", meta["namespace"], meta["name"], node_name
                )
                return
            key = (storage_class.get("parameters") or {}).get("topologyKey") or HOSTNAME
            value = (node["metadata"].get("labels") or {}).get(key, node_name if key == HOSTNAME else None)
            if value is None:
                log.warning(
                    "cannot provision %s/%s: node %s has no label %s",
                    meta["namespace"],
                    meta["name"],
                    node_name,
                    key,
                )
                return
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    ]
                }
            }
        body = {
            "metadata": {
                "name": f"pvc-{meta['uid']}",
                "annotations": {"pv.kubernetes.io/provisioned-by": storage_class["provisioner"]},
            },
            "spec": spec,
        }
        pv = self.api.create(PV, None, body).obj
        self._bind(pv, pvc)

    def _bind(self, pv: Obj, pvc: Obj) -> None:
        meta = pvc["metadata"]
        ref = pv["spec"].get("claimRef") or {}
        if ref.get("uid") != meta["uid"]:
            claim_ref = {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"],
            }
            notes = {**(pv["metadata"].get("annotations") or {}), ANN_BOUND_BY_CONTROLLER: "yes"}
            pv = self.api.update(
                PV,
                None,
                pv["metadata"]["name"],
                {
                    **pv,
                    "metadata": {**pv["metadata"], "annotations": notes},
                    "spec": {**pv["spec"], "claimRef": claim_ref},
                },
            ).obj
        pv = self._set_phase(PV, None, pv, "Bound")
        notes = {**(meta.get("annotations") or {}), ANN_BIND_COMPLETED: "yes", ANN_BOUND_BY_CONTROLLER: "yes"}
        pvc = self.api.update(
            PVC,
            meta["namespace"],
            meta["name"],
            {
                **pvc,
                "metadata": {**meta, "annotations": notes},
                "spec": {**pvc["spec"], "volumeName": pv["metadata"]["name"]},
            },
        ).obj
        self._set_phase(
            PVC,
            meta["namespace"],
            pvc,
            "Bound",
            accessModes=list(pv["spec"].get("accessModes") or ()),
            capacity=dict(pv["spec"].get("capacity") or {}),
        )


def _can_provision(storage_class: Obj) -> bool:
    provisioner = storage_class.get("provisioner") or ""
    return bool(provisioner) and provisioner != NO_PROVISIONER


# The sim keeps its own small copy of the matching rules (not the scheduler's): it stands for the
# cluster, so a mistake in the scheduler's rules must not be hidden by sharing them.


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def is_fully_bound(pvc: Obj) -> bool:
    return bool(pvc["spec"].get("volumeName")) and ANN_BIND_COMPLETED in _annotations(pvc)


def selected_node(pvc: Obj) -> str | None:
    return _annotations(pvc).get(ANN_SELECTED_NODE)


def claim_class(obj: Obj) -> str:
    return str(obj["spec"].get("storageClassName") or "")


def is_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    ref = pv["spec"].get("claimRef") or {}
    meta = pvc["metadata"]
    if ref.get("name") != meta["name"] or ref.get("namespace") != meta["namespace"]:
        return False
    return not ref.get("uid") or ref["uid"] == meta["uid"]


def _size(value: Any) -> int:
    try:
        return int_value(value or 0)
    except QuantityError:
        return 0


def find_matching_volume(pvc: Obj, volumes: list[Obj]) -> Obj | None:
    """The smallest Available volume of the claim's class (and volume attributes class) with room and
    the access modes it asks."""
    wanted = _size(((pvc["spec"].get("resources") or {}).get("requests") or {}).get("storage"))
    modes = set(pvc["spec"].get("accessModes") or ())
    try:
        selector = LabelSelector.parse(pvc["spec"].get("selector"))
    except SelectorError:
        return None
    best: Obj | None = None
    for pv in volumes:
        size = _size((pv["spec"].get("capacity") or {}).get("storage"))
        if (
            pv["spec"].get("claimRef")
            or (pv.get("status") or {}).get("phase") != "Available"
            or claim_class(pv) != claim_class(pvc)
            or (pv["spec"].get("volumeAttributesClassName") or "")
            != (pvc["spec"].get("volumeAttributesClassName") or "")
            or size < wanted
            or not modes <= set(pv["spec"].get("accessModes") or ())
            or (selector is not None and not selector.matches(pv["metadata"].get("labels") or {}))
        ):
            continue
        if best is None or size < _size(best["spec"]["capacity"]["storage"]):
            best = pv
    return best
