"""Reading scheduling.k8s.io/v1alpha2 PodGroups as the PodGroup informer keeps them (plain dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api import Pod
from scheduler.framework import Handle

# The kind as plugins declare it in ``watches`` and as it names its cluster events.
PODGROUPS = "scheduling.k8s.io/v1alpha2/podgroups"
# CycleState key set while the pod-group cycle only tries a member's placement
# (see scheduler.schedule_one_podgroup)
POD_GROUP_TRIAL = "PodGroupTrial"


def pod_group_of(handle: Handle, pod: Pod) -> Mapping[str, Any] | None:
    """The PodGroup ``pod`` names, as last seen; None when it does not exist (yet)."""
    return handle.lister(PODGROUPS).get(f"{pod.namespace}/{pod.pod_group}")


def gang_min_count(group: Mapping[str, Any]) -> int | None:
    """``spec.schedulingPolicy.gang.minCount``; None for a basic policy (no gang)."""
    gang = ((group.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    if gang is None:
        return None
    return int(gang.get("minCount") or 0)


def topology_key(group: Mapping[str, Any]) -> str:
    """The first ``spec.schedulingConstraints.topology[].key`` ("" without constraints); upstream
    honours only one."""
    terms = ((group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or ()
    return str(terms[0].get("key") or "") if terms else ""


def is_member_event(pod: Pod, group: Mapping[str, Any] | None) -> bool:
    """Whether a PodGroup event is about the group ``pod`` belongs to."""
    meta = (group or {}).get("metadata") or {}
    return (
        bool(pod.pod_group) and meta.get("namespace") == pod.namespace and meta.get("name") == pod.pod_group
    )
