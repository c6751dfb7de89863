"""Signers: the parts of a pod that in-tree plugins' answers depend on (OpportunisticBatching).

A plugin's ``sign_pod`` returns :class:`~scheduler.framework.interface.SignFragment` s keyed by
the constants below (the same strings as upstream's ``k8s.io/kube-scheduler/framework``), with a
value from the function of this module that goes with the key. Plugins reading the same part of
a pod (the four volume plugins, the two resource plugins, TaintToleration and NodeUnschedulable)
share a key and so must give the same value: the framework keeps one fragment per key and
builds the signature as the JSON of ``{key: value}`` with sorted keys.

Every value here encodes to JSON (orjson) and is canonical: a list whose order means nothing
to scheduling (tolerations, host ports, node selector terms, the values of a requirement,
volumes, images) is sorted, so pods that differ only in such an order sign alike.

The values are computed from the ``Pod`` view; the helpers that several plugins call for the same
pod in one cycle remember their answer for the last pod they saw (pods are replaced, never
changed, when the API object changes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import orjson

from scheduler.api import Pod, Resource

# ---------------------------------------------------------------------------- fragment keys

DYNAMIC_RESOURCES = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
# added by the framework itself to every signature, not by a plugin
SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES = "v1.Pod.Spec.RequiredFeatures()"

# ---------------------------------------------------------------------------- helpers

_T = TypeVar("_T")

# orjson encodes integers of at most 64 bits
_INT_MIN = -(2**63)
_INT_MAX = 2**63 - 1


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys: the order key that makes lists of objects canonical."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _canonical_list(items: Iterable[Any]) -> list[Any]:
    return sorted(items, key=canonical_json)


def _last_pod(compute: Callable[[Pod], _T]) -> Callable[[Pod], _T]:
    """``compute``, remembering its answer for the last pod it was asked about: the plugins of a
    profile sign one pod after the other, several of them with the same helper. The answer is
    shared: callers must not change it."""
    last: list[tuple[Pod | None, Any]] = [(None, None)]

    def signer(pod: Pod) -> _T:
        seen, value = last[0]  # one (pod, answer) pair, replaced as a whole
        if seen is not pod:
            value = compute(pod)
            last[0] = (pod, value)
        answer: _T = value
        return answer

    signer.__doc__ = compute.__doc__
    signer.__name__ = compute.__name__
    return signer


def normalized_image_name(name: str) -> str:
    """Add the implicit ``:latest`` tag, as node status lists images with their tag (what
    ImageLocality compares)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


# ---------------------------------------------------------------------------- signers


def host_ports(pod: Pod) -> list[int]:
    """The host port numbers the pod claims, each once, in order (upstream signs the numbers
    only, not their protocol or host IP)."""
    return sorted({port.port for port in pod.host_ports})


@_last_pod
def tolerations(pod: Pod) -> list[dict[str, str]]:
    """The tolerations as objects, ordered by key and value (then operator and effect, so that
    the order is total)."""
    ordered = sorted(pod.tolerations, key=lambda t: (t.key, t.value, t.operator, t.effect))
    return [{"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect} for t in ordered]


def _requirements(requirements: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return _canonical_list(
        {
            "key": requirement.get("key") or "",
            "operator": requirement.get("operator") or "",
            "values": sorted(requirement.get("values") or ()),
        }
        for requirement in requirements or ()
    )


def _term(term: Mapping[str, Any] | None) -> dict[str, Any]:
    term = term or {}
    return {
        "matchExpressions": _requirements(term.get("matchExpressions")),
        "matchFields": _requirements(term.get("matchFields")),
    }


def node_affinity(pod: Pod) -> dict[str, Any] | None:
    """The pod's node affinity with every order that does not matter made canonical: the values
    of each requirement, the requirements of each term, the required terms (ORed) and the
    preferred ones (summed) are sorted. None when the pod has no node affinity; ``required`` is
    None without a required selector (a selector without terms would match no node)."""
    affinity = (pod.affinity or {}).get("nodeAffinity")
    if affinity is None:
        return None
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    return {
        "required": None
        if required is None
        else _canonical_list(_term(term) for term in required.get("nodeSelectorTerms") or ()),
        "preferred": _canonical_list(
            {"weight": term.get("weight") or 0, "preference": _term(term.get("preference"))}
            for term in preferred or ()
        ),
    }


def node_selector(pod: Pod) -> dict[str, str]:
    return dict(sorted(pod.node_selector.items()))


def labels(pod: Pod) -> dict[str, str]:
    return dict(sorted(pod.labels.items()))


@_last_pod
def volumes(pod: Pod) -> list[dict[str, Any]]:
    """The sources of the pod's volumes (the volume without its name), sorted, leaving out
    ConfigMap and Secret volumes: they never matter to scheduling and are often specific to
    each pod, so that no two pods would sign alike with them."""
    return _canonical_list(
        {field: value for field, value in volume.items() if field != "name"}
        for volume in pod.volumes
        if volume.get("configMap") is None and volume.get("secret") is None
    )


def image_names(pod: Pod) -> list[str]:
    """The canonical names of the (init) containers' images, each once, sorted."""
    return sorted({normalized_image_name(image) for image in pod.images})


def _amount(value: int) -> int | str:
    return value if _INT_MIN <= value <= _INT_MAX else str(value)


def _resource(resource: Resource) -> dict[str, int | str]:
    amounts = {
        "cpu": _amount(resource.milli_cpu),  # millicores
        "memory": _amount(resource.memory),
        "ephemeral-storage": _amount(resource.ephemeral_storage),
        "pods": _amount(resource.allowed_pod_number),
    }
    amounts.update((name, _amount(value)) for name, value in sorted(resource.scalar.items()))
    return amounts


@_last_pod
def resources(pod: Pod) -> dict[str, int | str]:
    """The pod's effective requests (containers' requests and limits, init containers, sidecars,
    pod-level resources, overhead), what upstream signs for the resource plugins. As upstream,
    the non-zero defaults the scorers fill in for request-less containers are not part of it."""
    return _resource(pod.requests)
