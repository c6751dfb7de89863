"""Create checks of scheduling.k8s.io/v1alpha2 Workload and PodGroup, as far as a scheduler needs them.

A scheduling policy names exactly one of ``basic`` and ``gang``; a gang has ``minCount >= 1``; a
Workload holds one to eight pod group templates, each named; a PodGroup's spec is immutable.
Anything else about these kinds is stored as sent.
"""

from __future__ import annotations

from typing import Any

from simcluster.errors import ApiError, invalid

GROUP = "scheduling.k8s.io"
MAX_POD_GROUP_TEMPLATES = 8  # upstream's WorkloadMaxPodGroupTemplates

Obj = dict[str, Any]


def check_pod_group(obj: Obj) -> None:
    """Raise a 422 naming the first field a PodGroup gets wrong."""
    name = obj["metadata"].get("name", "")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise invalid("PodGroup", name, "spec", "Required value", GROUP)
    _check_policy("PodGroup", name, spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    _check_constraints("PodGroup", name, spec.get("schedulingConstraints"), "spec.schedulingConstraints")


def check_pod_group_update(old: Obj, new: Obj) -> None:
    """A PodGroup's spec never changes (members and the scheduler rely on it)."""
    if new.get("spec") != old.get("spec"):
        name = new["metadata"].get("name", "")
        raise invalid("PodGroup", name, "spec", 'Invalid value: "object": field is immutable', GROUP)


def check_workload(obj: Obj) -> None:
    """Raise a 422 naming the first field a Workload gets wrong."""
    name = obj["metadata"].get("name", "")
    spec = obj.get("spec")
    templates = spec.get("podGroupTemplates") if isinstance(spec, dict) else None
    if not isinstance(templates, list) or not templates:
        raise invalid("Workload", name, "spec.podGroupTemplates", "Required value", GROUP)
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        raise invalid(
            "Workload",
            name,
            "spec.podGroupTemplates",
            f"Too many: {len(templates)}: must have at most {MAX_POD_GROUP_TEMPLATES} items",
            GROUP,
        )
    for i, template in enumerate(templates):
        path = f"spec.podGroupTemplates[{i}]"
        if not isinstance(template, dict) or not template.get("name"):
            raise invalid("Workload", name, f"{path}.name", "Required value", GROUP)
        _check_policy("Workload", name, template.get("schedulingPolicy"), f"{path}.schedulingPolicy")
        _check_constraints(
            "Workload", name, template.get("schedulingConstraints"), f"{path}.schedulingConstraints"
        )


def _check_policy(kind: str, name: str, policy: Any, path: str) -> None:
    if not isinstance(policy, dict):
        raise invalid(kind, name, path, "Required value", GROUP)
    chosen = [key for key in ("basic", "gang") if policy.get(key) is not None]
    if len(chosen) != 1:
        raise _one_of(kind, name, path)
    gang = policy.get("gang")
    if gang is None:
        return
    count = gang.get("minCount") if isinstance(gang, dict) else None
    if count is None:
        raise invalid(kind, name, f"{path}.gang.minCount", "Required value", GROUP)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise invalid(
            kind,
            name,
            f"{path}.gang.minCount",
            f"Invalid value: {count}: must be greater than or equal to 1",
            GROUP,
        )


def _check_constraints(kind: str, name: str, constraints: Any, path: str) -> None:
    if constraints is None:
        return
    for i, term in enumerate((constraints or {}).get("topology") or ()):
        if not isinstance(term, dict) or not term.get("key"):
            raise invalid(kind, name, f"{path}.topology[{i}].key", "Required value", GROUP)


def _one_of(kind: str, name: str, path: str) -> ApiError:
    return invalid(kind, name, path, 'Invalid value: "object": exactly one of basic, gang must be set', GROUP)
