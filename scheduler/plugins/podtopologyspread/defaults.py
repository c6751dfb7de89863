"""The selector default spread constraints use: the labels the pod's workloads select it by.

Upstream's ``helper.DefaultSelector``: the selectors of every Service in the pod's namespace that
selects the pod are merged, then the selector of the pod's controller (a ReplicationController,
ReplicaSet or StatefulSet, looked up by its controller owner reference) is added. The objects are
read from the handle's listers (plain API dicts); a kind that is not watched contributes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api import LabelSelector, Pod, SelectorError
from scheduler.api.selectors import Requirement
from scheduler.framework import Handle, ObjectLister

# Controller kinds by (apiVersion, kind), as their owner references name them.
_MAP_SELECTOR_KINDS = {("v1", "ReplicationController"): "replicationcontrollers"}
_LABEL_SELECTOR_KINDS = {
    ("apps/v1", "ReplicaSet"): "replicasets",
    ("apps/v1", "StatefulSet"): "statefulsets",
}


def _lister(handle: Handle | None, resource: str) -> ObjectLister | None:
    if handle is None:
        return None
    try:
        return handle.lister(resource)
    except KeyError:  # not watched by this scheduler
        return None


def _controller(pod: Pod) -> Mapping[str, Any] | None:
    return next((ref for ref in pod.owner_references if ref.get("controller")), None)


def _set_requirements(labels: Mapping[str, Any]) -> list[Requirement]:
    return [Requirement(str(k), "In", frozenset({str(v)})) for k, v in labels.items()]


def _service_labels(handle: Handle | None, pod: Pod) -> dict[str, str]:
    """The merged selectors of the pod's namespace's Services that select it."""
    services = _lister(handle, "services")
    merged: dict[str, str] = {}
    if services is None:
        return merged
    for service in services.list():
        if (service.get("metadata") or {}).get("namespace") != pod.namespace:
            continue
        selector = (service.get("spec") or {}).get("selector")
        if selector is None:  # a Service without a selector selects nothing, not everything
            continue
        if all(pod.labels.get(k) == str(v) for k, v in selector.items()):
            merged.update({str(k): str(v) for k, v in selector.items()})
    return merged


def default_selector(handle: Handle | None, pod: Pod) -> LabelSelector:
    """The selector of the workloads owning ``pod``; empty when none is known."""
    requirements = _set_requirements(_service_labels(handle, pod))
    owner = _controller(pod)
    if owner is not None:
        kind = (str(owner.get("apiVersion") or ""), str(owner.get("kind") or ""))
        resource = _MAP_SELECTOR_KINDS.get(kind) or _LABEL_SELECTOR_KINDS.get(kind)
        store = _lister(handle, resource) if resource else None
        found = store.get(f"{pod.namespace}/{owner.get('name', '')}") if store is not None else None
        if found is not None:
            selector = (found.get("spec") or {}).get("selector")
            if kind in _MAP_SELECTOR_KINDS:
                # The RC's labels are merged into the Services' set (an RC's key wins).
                merged = {r.key: next(iter(r.values)) for r in requirements}
                merged.update({str(k): str(v) for k, v in (selector or {}).items()})
                requirements = _set_requirements(merged)
            else:
                try:
                    parsed = LabelSelector.parse(selector)
                except SelectorError:
                    parsed = None  # an invalid selector adds nothing, as upstream
                if parsed is not None:
                    requirements += parsed.requirements
    return LabelSelector(tuple(requirements))
