"""The node what-ifs' pieces that need no running cluster: new nodes from a template, and what a
node's pods do when it is drained or removed.

`--node-template` is a Node manifest, with the ResourceSlices of its devices if it has any;
`--like NODE` takes a node of the snapshot and its own ResourceSlices. Either way a new node
keeps the labels (its hostname label renamed), taints and allocatable, and starts Ready with
nothing on it, and gets copies of the template's slices (`--add-nodes` and `--fit` alike). Of a
drained node's pods, DaemonSet pods stay (their controller tolerates the cordon) and mirror pods
stay (the kubelet owns them); the others are evicted, and those a controller owns come back as
new pending pods, as their ReplicaSet, StatefulSet or Job would make them. A pod no controller
owns is gone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MIRROR = "kubernetes.io/config.mirror"
FINISHED = ("Succeeded", "Failed")


class TemplateError(Exception):
    """A node template that cannot be used; the message names where it came from."""


@dataclass(frozen=True, slots=True)
class NodeTemplate:
    """The node new ones copy, and the ResourceSlices of its own devices."""

    node: Obj
    slices: tuple[Obj, ...] = ()

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])

    def node_named(self, name: str) -> Obj:
        return new_node(self.node, name)

    def slices_for(self, name: str) -> list[Obj]:
        return slices_like(self.slices, self.name, name)


def template_of(docs: Sequence[Any], where: str) -> NodeTemplate:
    """A template file's documents: one Node, then any ResourceSlices of its devices (each with
    ``spec.nodeName`` the Node's name, as a driver publishes them)."""
    nodes = [d for d in docs if isinstance(d, dict) and d.get("kind", "Node") == "Node"]
    if len(nodes) != 1:
        raise TemplateError(f"{where}: exactly one Node expected (and its ResourceSlices)")
    node = node_template(nodes[0], where)
    name = node["metadata"]["name"]
    slices = []
    for doc in docs:
        if doc is nodes[0]:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "ResourceSlice":
            kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
            raise TemplateError(f"{where}: {kind!s} is neither the Node nor one of its ResourceSlices")
        spec = doc.get("spec")
        slice_name = (doc.get("metadata") or {}).get("name", "")
        if not isinstance(spec, dict) or spec.get("nodeName") != name:
            raise TemplateError(f"{where}: ResourceSlice {slice_name}: spec.nodeName must be {name!r}")
        slices.append(doc)
    return NodeTemplate(node, tuple(slices))


def like_node(node: Obj, slices: Iterable[Any], where: str) -> NodeTemplate:
    """A node of the cluster as a template, with the slices published for it."""
    template = node_template(node, where)
    name = template["metadata"]["name"]
    own = tuple(
        s
        for s in slices
        if isinstance(s, dict) and isinstance(s.get("spec"), dict) and s["spec"].get("nodeName") == name
    )
    return NodeTemplate(template, own)


def node_template(obj: Any, where: str) -> Obj:
    """A Node manifest checked for what new nodes need (a name and allocatable or capacity)."""
    if not isinstance(obj, dict) or obj.get("kind", "Node") != "Node":
        raise TemplateError(f"{where}: one Node expected")
    status: Obj = obj["status"] if isinstance(obj.get("status"), dict) else {}
    if not isinstance(status.get("allocatable") or status.get("capacity"), dict):
        raise TemplateError(f"{where}: status.allocatable (or status.capacity) is required")
    meta: Obj = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise TemplateError(f"{where}: metadata.name is required (new nodes are named after it)")
    return obj


def new_node(template: Obj, name: str) -> Obj:
    """A node like ``template`` named ``name``: empty, Ready, schedulable."""
    meta = template.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), HOSTNAME: name}
    status = template.get("status") or {}
    allocatable = copy.deepcopy(status.get("allocatable") or status.get("capacity"))
    spec = {k: copy.deepcopy(v) for k, v in (template.get("spec") or {}).items() if k in ("taints",)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(meta.get("annotations") or {})},
        "spec": spec,
        "status": {
            "capacity": copy.deepcopy(status.get("capacity") or allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": copy.deepcopy(status.get("nodeInfo") or {}),
        },
    }


def slices_like(slices: Iterable[Any], like: str, name: str) -> list[Obj]:
    """Copies of node ``like``'s own ResourceSlices for new node ``name``: its devices, in pools
    of their own (a pool is named once per driver)."""
    copies = []
    for index, found in enumerate(s for s in slices if isinstance(s, dict)):
        spec: Obj = found["spec"] if isinstance(found.get("spec"), dict) else {}
        if spec.get("nodeName") != like:
            continue
        pool = dict(spec.get("pool") or {})
        old_pool = str(pool.get("name") or like)
        pool["name"] = old_pool.replace(like, name) if like in old_pool else f"{old_pool}-{name}"
        copies.append(
            {
                "apiVersion": found.get("apiVersion") or "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-slice-{index}"},
                "spec": {**copy.deepcopy(spec), "nodeName": name, "pool": pool},
            }
        )
    return copies


def new_node_names(base: str, count: int, taken: set[str], prefix: str = "new") -> list[str]:
    """``count`` names ``<base>-<prefix>-<i>`` that no node has."""
    names: list[str] = []
    index = 1
    while len(names) < count:
        name = f"{base}-{prefix}-{index}"
        if name not in taken:
            names.append(name)
        index += 1
    return names


def zone_of(node: Obj) -> str:
    return ((node.get("metadata") or {}).get("labels") or {}).get(ZONE, "")


class Fate(Enum):
    """What happens to a pod of a drained or removed node."""

    STAYS = "stays"  # a DaemonSet's or a mirror pod (drain leaves them; a removal deletes them)
    REPLACED = "replaced"  # evicted; its controller makes a new one
    GONE = "gone"  # evicted; nothing makes it again


def controller_of(pod: Obj) -> Obj | None:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)


def fate(pod: Obj) -> Fate:
    meta = pod.get("metadata") or {}
    owner = controller_of(pod)
    if MIRROR in (meta.get("annotations") or {}) or (owner or {}).get("kind") == "DaemonSet":
        return Fate.STAYS
    return Fate.REPLACED if owner is not None else Fate.GONE


def by_node(pods: Iterable[Obj], nodes: Iterable[str]) -> dict[str, list[Obj]]:
    """The unfinished pods bound to each of ``nodes``, by namespace/name."""
    found: dict[str, list[Obj]] = {name: [] for name in nodes}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in found and (pod.get("status") or {}).get("phase") not in FINISHED:
            found[node].append(pod)
    for listed in found.values():
        listed.sort(key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
    return found


def replacement(pod: Obj) -> Obj:
    """The pending pod a controller makes in place of ``pod`` (same name, so reports line up)."""
    meta = pod["metadata"]
    kept = ("name", "namespace", "labels", "annotations", "ownerReferences")
    spec = {k: copy.deepcopy(v) for k, v in pod["spec"].items() if k != "nodeName"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: copy.deepcopy(meta[k]) for k in kept if k in meta},
        "spec": spec,
    }
