"""Builders for storage objects (PV, PVC, StorageClass, CSINode, ...) as the API serves them,
shared by the volume plugin tests and the local endpoint's storage tests."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api import Pod
from scheduler.testing.builders import pod_dict

_versions = itertools.count(100)

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def affinity(key: str, *values: str) -> dict[str, Any]:
    """A PV nodeAffinity requiring ``key In values``."""
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
            ]
        }
    }


def pv(
    name: str,
    *,
    size: str = "10Gi",
    storage_class: str = "local",
    modes: Sequence[str] = ("ReadWriteOnce",),
    node_affinity: Mapping[str, Any] | None = None,
    claim: tuple[str, str] | None = None,
    phase: str = "Available",
    labels: Mapping[str, str] | None = None,
    csi: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A PersistentVolume; ``claim`` is (namespace, name) of a claimRef, ``csi`` (driver, handle)."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": storage_class,
    }
    if node_affinity:
        spec["nodeAffinity"] = dict(node_affinity)
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    if csi:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    else:
        spec["local"] = {"path": f"/mnt/{name}"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "uid": f"uid-pv-{name}",
            "resourceVersion": str(next(_versions)),
            "labels": dict(labels or {}),
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    *,
    namespace: str = "default",
    size: str = "5Gi",
    storage_class: str | None = "local",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume_name: str = "",
    bound: bool = False,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PersistentVolumeClaim; ``bound`` adds what the PV controller writes once it bound it."""
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    notes = dict(annotations or {})
    if volume_name:
        spec["volumeName"] = volume_name
    if bound:
        notes["pv.kubernetes.io/bind-completed"] = "yes"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-pvc-{name}",
            "resourceVersion": str(next(_versions)),
            "annotations": notes,
        },
        "spec": spec,
        "status": {"phase": "Bound" if bound else "Pending"},
    }


def storage_class(
    name: str,
    *,
    mode: str | None = "WaitForFirstConsumer",
    provisioner: str = "kubernetes.io/no-provisioner",
    allowed_topologies: Sequence[Mapping[str, Any]] = (),
    parameters: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if mode is not None:
        obj["volumeBindingMode"] = mode
    if allowed_topologies:
        obj["allowedTopologies"] = [dict(t) for t in allowed_topologies]
    if parameters:
        obj["parameters"] = dict(parameters)
    return obj


def csi_node(name: str, drivers: Mapping[str, int | None]) -> dict[str, Any]:
    """A CSINode whose drivers publish the given attach limits (None: no limit)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {
            "drivers": [
                {
                    "name": driver,
                    "nodeID": name,
                    **({"allocatable": {"count": count}} if count is not None else {}),
                }
                for driver, count in drivers.items()
            ]
        },
    }


def csi_driver(name: str, *, storage_capacity: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": storage_capacity},
    }


def capacity(
    name: str,
    storage_class_name: str,
    amount: str,
    node_labels: Mapping[str, str],
    *,
    namespace: str = "default",
) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": storage_class_name,
        "capacity": amount,
        "nodeTopology": {"matchLabels": dict(node_labels)},
    }


def volume_pod_dict(
    name: str, *claims: str, extra_volumes: Sequence[Mapping[str, Any]] = (), **kwargs: Any
) -> dict[str, Any]:
    """A pod mounting the named PVCs (plus ``extra_volumes`` as given)."""
    obj = pod_dict(name, **kwargs)
    obj["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}} for i, claim in enumerate(claims)
    ] + [dict(v) for v in extra_volumes]
    return obj


def volume_pod(name: str, *claims: str, **kwargs: Any) -> Pod:
    return Pod.from_dict(volume_pod_dict(name, *claims, **kwargs))
