"""Builders for cache tests: API-shaped pods and nodes decoded the way the informer decodes them."""

from __future__ import annotations

import dataclasses
from typing import Any

from scheduler.api import Node, Pod


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    zone: str = "",
    region: str = "",
    images: list[tuple[list[str], int]] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> Node:
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    if region:
        labels["topology.kubernetes.io/region"] = region
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    return Node.from_dict(
        {
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {
                "allocatable": allocatable,
                "images": [{"names": names, "sizeBytes": size} for names, size in images or []],
            },
        }
    )


def make_pod(
    name: str,
    *,
    node: str = "",
    cpu: str = "",
    memory: str = "",
    host_port: int = 0,
    claim: str = "",
    anti_affinity: bool = False,
    affinity: bool = False,
    extra: dict[str, str] | None = None,
    priority: int = 0,
    gates: tuple[str, ...] = (),
    labels: dict[str, str] | None = None,
) -> Pod:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    requests.update(extra or {})
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": {"requests": requests}}
    if host_port:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    spec: dict[str, Any] = {"containers": [container], "nodeName": node, "priority": priority}
    if claim:
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    if anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif affinity:
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels or {}},
            "spec": spec,
        }
    )


def on(pod: Pod, node: str) -> Pod:
    """The pod as the scheduler assumes it / the informer reports it once bound."""
    return dataclasses.replace(pod, node_name=node)
