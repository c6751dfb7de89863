"""A corpus of malformed and hostile objects, one table row each, made by mutating valid objects.

Every kind the scheduler watches is covered (``PLUGIN_RESOURCES`` in scheduler.app, with Pods
and Nodes). A row names a valid object, a field path in the notation the scheduler's reports
use (``spec.containers[0].resources.requests[cpu]``: ``[0]`` indexes a list, ``[cpu]`` keys a
map), what to put there, and, implied by its table, what the scheduler must make of it:

- ``SKIPPED``: one log line naming the object and the field, nothing else;
- ``UNSCHEDULABLE``: that line and, as it is a pending pod of our profile, a FailedScheduling
  event and PodScheduled=False (reason Unschedulable) saying what is wrong;
- ``REFUSED``: it decodes, but a plugin says why the pod cannot be scheduled (as upstream does);
- ``ACCEPTED``: hostile but valid (huge, unknown fields, values no API server would let through
  but whose type is right): used as any other object; a pod gets bound.

The objects are served through the local endpoint's ``inject_raw`` fault hook, past its
validation and defaulting.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SCHEDULER = "pyscheduler"
NAMESPACE = "default"
SKIPPED = "skipped"
UNSCHEDULABLE = "unschedulable"
REFUSED = "refused"
ACCEPTED = "accepted"
DELETE = object()  # a row's value that removes the field
BIG = 10**30  # beyond 64 bits: served as an integer, read back as a float


@dataclass(frozen=True)
class Case:
    name: str  # the object's name (where it has one) and the store key it is served under
    resource: str  # store resource name
    kind: str
    obj: Any
    outcome: str
    mentions: str = ""  # what the report names after the object: the field path (or the problem)
    namespaced: bool = True

    @property
    def shown(self) -> str:
        """How the report names the object (scheduler.api.kinds.display_key)."""
        meta = self.obj.get("metadata") if isinstance(self.obj, dict) else None
        if not isinstance(meta, dict):
            return "<no metadata>"
        name, namespace = meta.get("name"), meta.get("namespace")
        shown = name if isinstance(name, str) and name else "<no name>"
        return f"{namespace}/{shown}" if isinstance(namespace, str) and namespace else shown


# ------------------------------------------------------------------------------ mutation

_PART = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def _parts(path: str) -> list[str | int]:
    return [name if name else int(key) if key.isdigit() else key for name, key in _PART.findall(path)]


def mutated(obj: Any, path: str, value: Any) -> Any:
    """A deep copy of ``obj`` with ``value`` at ``path`` (``DELETE`` removes the field), making
    the objects on the way where they are missing."""
    result = copy.deepcopy(obj)
    node = result
    parts = _parts(path)
    for part, following in itertools.pairwise(parts):
        child = node[part] if isinstance(part, int) else node.get(part)
        if not isinstance(child, dict | list):
            child = node[part] = [] if isinstance(following, int) else {}
        node = child
    if value is DELETE:
        del node[parts[-1]]
    else:
        node[parts[-1]] = copy.deepcopy(value)
    return result


# ---------------------------------------------------------------------------- valid bases


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def terms(*expressions: dict[str, Any]) -> dict[str, Any]:
    """A required node affinity of one term."""
    return {"nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}


HOSTNAME = "kubernetes.io/hostname"
LINUX = expr("kubernetes.io/os", "In", "linux")
_NA = "spec.affinity.nodeAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def pod(name: str, *, scheduler: str = SCHEDULER, node: str = "") -> dict[str, Any]:
    """A valid pod using every field the scheduler reads: the base of the malformed ones."""
    term = {"labelSelector": {"matchLabels": {"app": "bad"}}, "topologyKey": HOSTNAME}
    container = {
        "name": "app",
        "image": "nginx:1.27",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        "ports": [{"containerPort": 8080, "hostPort": 18080}],
    }
    spread = {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}", "labels": {"app": "bad"}},
        "spec": {
            "schedulerName": scheduler,
            **({"nodeName": node} if node else {}),
            "containers": [container],
            "initContainers": [
                {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "5m"}}}
            ],
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    _REQUIRED: terms(LINUX),
                    _PREFERRED: [{"weight": 1, "preference": {"matchExpressions": [LINUX]}}],
                },
                "podAffinity": {_REQUIRED: [term]},
                "podAntiAffinity": {
                    _PREFERRED: [{"weight": 10, "podAffinityTerm": {**term, "namespaces": [NAMESPACE]}}]
                },
            },
            "topologySpreadConstraints": [
                {**spread, "labelSelector": {"matchExpressions": [expr("app", "Exists")]}}
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        },
        "status": {"phase": "Pending"},
    }


def good_pod(name: str) -> dict[str, Any]:
    """A small pod of ours any node here can take."""
    container = {"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "10m"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "labels": {"app": "hostile"},
        },
        "spec": {"schedulerName": SCHEDULER, "containers": [container]},
        "status": {"phase": "Pending"},
    }


def node(name: str) -> dict[str, Any]:
    """A valid node, tainted so that no pod of the corpus ever lands on one by mistake."""
    amounts = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {HOSTNAME: name}},
        "spec": {"taints": [{"key": "bad", "value": "yes", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": dict(amounts),
            "capacity": dict(amounts),
            "images": [{"names": ["nginx:1.27"], "sizeBytes": 1000}],
        },
    }


def _meta(name: str, namespaced: bool) -> dict[str, Any]:
    return {"name": name, "uid": f"uid-{name}", **({"namespace": NAMESPACE} if namespaced else {})}


_SELECTOR = {"matchLabels": {"app": "x"}, "matchExpressions": [expr("tier", "In", "a")]}

# plural -> (kind, namespaced, the fields of a valid object besides its metadata)
OTHER_KINDS: dict[str, tuple[str, bool, dict[str, Any]]] = {
    "persistentvolumes": ("PersistentVolume", False, {
        "spec": {
            "storageClassName": "fast", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "nodeAffinity": {"required": terms(expr("zone", "In", "zone-a"))},
            "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
            "claimRef": {"namespace": NAMESPACE, "name": "c"},
        },
        "status": {"phase": "Available"},
    }),
    "persistentvolumeclaims": ("PersistentVolumeClaim", True, {
        "spec": {
            "storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}, "selector": _SELECTOR,
        },
        "status": {"phase": "Pending"},
    }),
    "storageclasses": ("StorageClass", False, {
        "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer",
        "parameters": {"type": "ssd"},
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["zone-a"]}]}],
    }),
    "csinodes": ("CSINode", False, {
        "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n", "allocatable": {"count": 10}}]},
    }),
    "csidrivers": ("CSIDriver", False, {"spec": {"attachRequired": True, "storageCapacity": True}}),
    "csistoragecapacities": ("CSIStorageCapacity", True, {
        "storageClassName": "fast", "capacity": "10Gi", "nodeTopology": _SELECTOR,
    }),
    "namespaces": ("Namespace", False, {}),
    "services": ("Service", True, {"spec": {"selector": {"app": "bad"}}}),
    "replicationcontrollers": ("ReplicationController", True, {"spec": {"selector": {"app": "bad"}}}),
    "replicasets": ("ReplicaSet", True, {"spec": {"selector": _SELECTOR}}),
    "statefulsets": ("StatefulSet", True, {"spec": {"selector": _SELECTOR}}),
    "poddisruptionbudgets": ("PodDisruptionBudget", True, {
        "spec": {"selector": _SELECTOR, "minAvailable": 1},
        "status": {"disruptionsAllowed": 0, "disruptedPods": {}},
    }),
    "volumeattachments": ("VolumeAttachment", False, {
        "spec": {
            "attacher": "csi.example.com", "nodeName": "node-0000", "source": {"persistentVolumeName": "pv"},
        },
        "status": {"attached": True},
    }),
}  # fmt: skip


def other(resource: str, name: str) -> dict[str, Any]:
    _, namespaced, fields = OTHER_KINDS[resource]
    return {"metadata": _meta(name, namespaced), **copy.deepcopy(fields)}


# --------------------------------------------------------------------------------- tables

_C0 = "spec.containers[0]"
_REQ = f"{_C0}.resources.requests"
_TERMS = f"{_NA}.{_REQUIRED}.nodeSelectorTerms"
_PA = f"spec.affinity.podAffinity.{_REQUIRED}[0]"
_PAA = f"spec.affinity.podAntiAffinity.{_PREFERRED}[0]"
_TSC = "spec.topologySpreadConstraints[0]"

# fmt: off
# A pending pod of our profile, mutated: (name, path, value[, what the report names]).
POD_MUTATIONS: list[tuple[Any, ...]] = [
    ("containers-object", "spec.containers", {"name": "app"}),
    ("containers-null-item", "spec.containers", [None], "spec.containers[0]"),
    ("container-string", _C0, "nginx"),
    ("containers-missing", "spec.containers", DELETE, "spec.containers: required value"),
    ("resources-list", f"{_C0}.resources", []),
    ("requests-string", _REQ, "cpu=1"),
    ("cpu-abc", f"{_REQ}[cpu]", "abc"),
    ("cpu-1-5-5", f"{_REQ}[cpu]", "1.5.5"),
    ("cpu-negative", f"{_REQ}[cpu]", "-1"),
    ("cpu-boolean", f"{_REQ}[cpu]", True),
    ("cpu-object", f"{_REQ}[cpu]", {"value": 1}),
    ("memory-1e1000", f"{_REQ}[memory]", "1e1000"),
    ("memory-overflow", f"{_REQ}[memory]", "99999999999999999999999"),
    ("memory-big-number", f"{_REQ}[memory]", BIG),
    ("gpu-suffix", f"{_REQ}[example.com/gpu]", "2Zi"),
    ("limits-lots", f"{_C0}.resources.limits[memory]", "lots"),
    ("overhead-bad", "spec.overhead[cpu]", "x"),
    ("pod-level-requests", "spec.resources.requests[cpu]", "??"),
    ("init-containers-string", "spec.initContainers", "x"),
    ("init-memory", "spec.initContainers[0].resources.requests[memory]", "1.2.3"),
    ("ports-object", f"{_C0}.ports", {"hostPort": 80}),
    ("ports-null-item", f"{_C0}.ports", [None], f"{_C0}.ports[0]"),
    ("hostport-string", f"{_C0}.ports[0].hostPort", "80"),
    ("hostport-huge", f"{_C0}.ports[0].hostPort", 2**40),
    ("hostport-float", f"{_C0}.ports[0].hostPort", 8.5),
    ("image-number", f"{_C0}.image", 42),
    ("restart-rule-action", f"{_C0}.restartPolicyRules", [{"action": 1}],
     f"{_C0}.restartPolicyRules[0].action"),
    ("tolerations-string", "spec.tolerations", "all"),
    ("tolerations-null-item", "spec.tolerations", [None], "spec.tolerations[0]"),
    ("toleration-seconds", "spec.tolerations[0].tolerationSeconds", "forever"),
    ("toleration-key", "spec.tolerations[0].key", 5),
    ("node-selector-list", "spec.nodeSelector", ["zone-a"]),
    ("node-selector-value", "spec.nodeSelector[zone]", 1),
    ("affinity-string", "spec.affinity", "near"),
    ("terms-object", _TERMS, {"matchExpressions": []}),
    ("expression-values-string", f"{_TERMS}[0].matchExpressions[0].values", "linux"),
    ("expressions-null-item", f"{_TERMS}[0].matchExpressions", [None], f"{_TERMS}[0].matchExpressions[0]"),
    ("preferred-weight", f"{_NA}.{_PREFERRED}[0].weight", "heavy"),
    ("pod-affinity-match-labels", f"{_PA}.labelSelector.matchLabels", ["app"]),
    ("pod-affinity-topology-key", f"{_PA}.topologyKey", 7),
    ("anti-affinity-namespaces", f"{_PAA}.podAffinityTerm.namespaces", "all"),
    ("anti-affinity-weight", f"{_PAA}.weight", 2**40),
    ("spread-string", "spec.topologySpreadConstraints", "spread"),
    ("spread-max-skew", f"{_TSC}.maxSkew", "1"),
    ("spread-operator", f"{_TSC}.labelSelector.matchExpressions[0].operator", 5),
    ("spread-min-domains", f"{_TSC}.minDomains", 2**33),
    ("volumes-object", "spec.volumes", {"data": {}}),
    ("volumes-null-item", "spec.volumes", [None], "spec.volumes[0]"),
    ("volume-claim-string", "spec.volumes[0].persistentVolumeClaim", "claim"),
    ("volume-claim-name", "spec.volumes[0].persistentVolumeClaim.claimName", ["a"]),
    ("gate-without-name", "spec.schedulingGates", [{"x": 1}], "spec.schedulingGates[0].name: required value"),
    ("gate-name-number", "spec.schedulingGates", [{"name": 3}], "spec.schedulingGates[0].name"),
    ("priority-string", "spec.priority", "high"),
    ("priority-overflow", "spec.priority", 2**31),
    ("priority-big", "spec.priority", BIG),
    ("preemption-policy", "spec.preemptionPolicy", 1),
    ("host-network", "spec.hostNetwork", "yes"),
    ("host-users", "spec.hostUsers", "false"),
    ("claims-name", "spec.resourceClaims", [{"name": 3}], "spec.resourceClaims[0].name"),
    ("labels-list", "metadata.labels", ["a"]),
    ("label-null", "metadata.labels[app]", None),
    ("annotation-number", "metadata.annotations[note]", 5),
    ("owners-string", "metadata.ownerReferences", "rs"),
    ("owner-controller", "metadata.ownerReferences", [{"controller": "yes"}],
     "metadata.ownerReferences[0].controller"),
    ("generation-string", "metadata.generation", "1"),
]

# The status of a pod bound by another scheduler, mutated (the report of a pending pod of ours
# would itself rewrite its status): (name, path, value[, what the report names]).
STATUS_MUTATIONS: list[tuple[Any, ...]] = [
    ("status-string", "status", "Running"),
    ("conditions-string", "status.conditions", "none"),
    ("conditions-null-item", "status.conditions", [None], "status.conditions[0]"),
    ("phase-number", "status.phase", 5),
    ("nominated-list", "status.nominatedNodeName", []),
    ("start-time-number", "status.startTime", 1700000000),
    ("allocated-cpu", "status.containerStatuses", [{"name": "app", "allocatedResources": {"cpu": "x"}}],
     "status.containerStatuses[0].allocatedResources[cpu]"),
    ("status-requests", "status.resources.requests[memory]", "z"),
]

# A valid node, mutated: (name, path, value[, what the report names]).
NODE_MUTATIONS: list[tuple[Any, ...]] = [
    ("node-spec-string", "spec", "x"),
    ("node-status-string", "status", "Ready"),
    ("node-allocatable-string", "status.allocatable", "lots"),
    ("node-cpu-abc", "status.allocatable[cpu]", "abc"),
    ("node-memory-negative", "status.allocatable[memory]", "-1Gi"),
    ("node-pods-1-5-5", "status.allocatable[pods]", "1.5.5"),
    ("node-capacity-object", "status.capacity[cpu]", {}),
    ("node-cpu-1e1000", "status.allocatable[cpu]", "1e1000"),
    ("node-taints-string", "spec.taints", "t"),
    ("node-taints-null-item", "spec.taints", [None], "spec.taints[0]"),
    ("node-taint-effect", "spec.taints[0].effect", 5),
    ("node-unschedulable-string", "spec.unschedulable", "yes"),
    ("node-labels-string", "metadata.labels", "zone"),
    ("node-label-number", "metadata.labels[zone]", 1),
    ("node-images-names", "status.images[0].names", "nginx"),
    ("node-image-size", "status.images[0].sizeBytes", "big"),
    ("node-declared-features", "status.declaredFeatures", "x"),
    ("node-no-name", "metadata.name", DELETE, "metadata.name: required value"),
]

# Nodes whose types are right: (name, path, value). Nothing fits the first and the last.
ACCEPTED_NODES: list[tuple[str, str, Any]] = [
    ("node-without-status", "status", DELETE),
    ("node-bogus-taint", "spec.taints[0].effect", "Sometimes"),
    ("node-nothing-allocatable", "status.allocatable", {"pods": "0", "cpu": "0"}),
]

# Another kind's valid object, mutated: (plural, name, path, value[, what the report names]).
OTHER_MUTATIONS: list[tuple[Any, ...]] = [
    ("persistentvolumes", "pv-spec-string", "spec", "x"),
    ("persistentvolumes", "pv-capacity-huge", "spec.capacity[storage]", "huge"),
    ("persistentvolumes", "pv-access-modes", "spec.accessModes", "RWO"),
    ("persistentvolumes", "pv-term-null", "spec.nodeAffinity.required.nodeSelectorTerms", [None],
     "spec.nodeAffinity.required.nodeSelectorTerms[0]"),
    ("persistentvolumes", "pv-claim-ref", "spec.claimRef", "c"),
    ("persistentvolumes", "pv-csi-driver", "spec.csi.driver", 5),
    ("persistentvolumes", "pv-status-number", "status", 5),
    ("persistentvolumeclaims", "pvc-spec-string", "spec", "standard"),
    ("persistentvolumeclaims", "pvc-storage", "spec.resources.requests[storage]", "1.5.5"),
    ("persistentvolumeclaims", "pvc-selector-expressions", "spec.selector.matchExpressions", "x"),
    ("persistentvolumeclaims", "pvc-volume-name", "spec.volumeName", 5),
    ("persistentvolumeclaims", "pvc-phase", "status.phase", []),
    ("persistentvolumeclaims", "pvc-access-modes-null", "spec.accessModes", [None], "spec.accessModes[0]"),
    ("storageclasses", "sc-provisioner", "provisioner", 5),
    ("storageclasses", "sc-topologies-string", "allowedTopologies", "any"),
    ("storageclasses", "sc-topology-values", "allowedTopologies[0].matchLabelExpressions[0].values", "a"),
    ("storageclasses", "sc-binding-mode", "volumeBindingMode", True),
    ("storageclasses", "sc-parameters", "parameters[type]", 1),
    ("csinodes", "csinode-drivers-string", "spec.drivers", "x"),
    ("csinodes", "csinode-count-string", "spec.drivers[0].allocatable.count", "ten"),
    ("csinodes", "csinode-drivers-null", "spec.drivers", [None], "spec.drivers[0]"),
    ("csinodes", "csinode-count-huge", "spec.drivers[0].allocatable.count", 2**40),
    ("csidrivers", "csidriver-capacity", "spec.storageCapacity", "yes"),
    ("csidrivers", "csidriver-spec-list", "spec", []),
    ("csistoragecapacities", "capacity-lots", "capacity", "lots"),
    ("csistoragecapacities", "capacity-topology", "nodeTopology", "all"),
    ("csistoragecapacities", "capacity-negative", "maximumVolumeSize", "-1"),
    ("namespaces", "ns-labels-string", "metadata.labels", "x"),
    ("namespaces", "ns-label-number", "metadata.labels[team]", 5),
    ("services", "svc-selector-string", "spec.selector", "app=web"),
    ("services", "svc-selector-value", "spec.selector[app]", 1),
    ("services", "svc-spec-number", "spec", 5),
    ("replicationcontrollers", "rc-selector-list", "spec.selector", ["a"]),
    ("replicasets", "rs-selector-string", "spec.selector", "app"),
    ("replicasets", "rs-match-labels", "spec.selector.matchLabels", ["x"]),
    ("replicasets", "rs-operator-number", "spec.selector.matchExpressions[0].operator", 5),
    ("statefulsets", "sts-match-labels", "spec.selector.matchLabels", "x"),
    ("poddisruptionbudgets", "pdb-selector-string", "spec.selector", "x"),
    ("poddisruptionbudgets", "pdb-disruptions-allowed", "status.disruptionsAllowed", "1"),
    ("poddisruptionbudgets", "pdb-min-available", "spec.minAvailable", {"x": 1}),
    ("poddisruptionbudgets", "pdb-disrupted-pods", "status.disruptedPods", ["a"]),
    ("volumeattachments", "va-source-string", "spec.source", "pv"),
    ("volumeattachments", "va-attacher", "spec.attacher", 5),
    ("volumeattachments", "va-attached", "status.attached", "yes"),
]

# Other kinds' objects whose types are right although no API server would store them: plugins
# must treat them as matching nothing, never raise. (plural, name, path, value)
OTHER_ACCEPTED: list[tuple[str, str, str, Any]] = [
    ("persistentvolumes", "pv-affinity-operator",
     "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator", "Near"),
    ("persistentvolumes", "weird-pv", "spec", {
        "nodeAffinity": {"required": {"nodeSelectorTerms": []}}, "csi": {},
        "claimRef": {"name": "bound-pvc", "namespace": NAMESPACE}}),
    ("persistentvolumeclaims", "pvc-selector-operator", "spec.selector.matchExpressions[0].operator", "Like"),
    ("persistentvolumeclaims", "weird-pvc", "spec", {
        "accessModes": ["Bogus"], "volumeMode": "Weird", "resources": {"requests": {"storage": "0"}},
        "storageClassName": "weird-sc"}),
    ("persistentvolumeclaims", "bound-pvc", "spec", {"volumeName": "weird-pv"}),
    ("storageclasses", "weird-sc", "allowedTopologies",
     [{"matchLabelExpressions": [{"key": "", "values": []}]}]),
    ("storageclasses", "sc-binding-mode-bogus", "volumeBindingMode", "Sometimes"),
    ("csistoragecapacities", "capacity-topology-operator", "nodeTopology.matchExpressions[0].operator",
     "Like"),
    ("csinodes", "node-0000", "spec.drivers",
     [{"name": "", "allocatable": {"count": -1}},
      {"name": "pd.csi.storage.gke.io", "allocatable": {"count": 0}}]),
    ("replicasets", "rs-selector-operator", "spec.selector.matchExpressions[0].operator", "Like"),
    ("statefulsets", "sts-selector-operator", "spec.selector.matchExpressions[0].operator", "Like"),
    ("poddisruptionbudgets", "pdb-selector-operator", "spec.selector.matchExpressions[0].operator", "Like"),
    ("poddisruptionbudgets", "weird-pdb", "spec",
     {"minAvailable": "abc%", "maxUnavailable": -1, "selector": {}}),
    ("volumeattachments", "weird-va", "spec", {"attacher": "", "nodeName": "nowhere",
                                                "source": {"persistentVolumeName": "weird-pv"}}),
    ("namespaces", "ns-many-labels", "metadata.labels", {f"l{i}": "v" for i in range(10_000)}),
    ("namespaces", "ns-empty-label-key", "metadata.labels", {"": "x"}),
    ("services", "svc-selects-all", "spec.selector", {}),
]
# fmt: on


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"deeper": value}
    return value


def _spread(**fields: Any) -> list[dict[str, Any]]:
    """One DoNotSchedule spread constraint over hostnames, counting pods no one has."""
    selector = {"matchLabels": {"app": "nobody"}}
    constraint = {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule"}
    return [{**constraint, "labelSelector": selector, **fields}]


def _pod_term(weight: int) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": "hostile"}}, "topologyKey": HOSTNAME}
    return {"weight": weight, "podAffinityTerm": term}


def _claim(name: str) -> list[dict[str, Any]]:
    return [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]


_NO_MATCH = {"matchExpressions": [expr("kubernetes.io/os", "In", "plan9")]}
_NULLS = dict.fromkeys(("affinity", "tolerations", "nodeSelector", "volumes", "topologySpreadConstraints"))

# fmt: off
# Pods whose fields all have the right type: (name, path, value), mutating good_pod(name).
# They must be bound: hostile only by size, unknown fields, or values that match nothing extra.
ACCEPTED_PODS: list[tuple[str, str, Any]] = [
    ("many-labels", "metadata.labels", {f"l{i}": str(i) for i in range(10_000)}),
    ("mib-annotation", "metadata.annotations", {"blob": "x" * 2**20}),
    ("unknown-top-field", "surprise", {"a": [1, None]}),
    ("unknown-fields", "spec.futureField", [None, {"a": [1, None]}]),
    ("unknown-container-field", f"{_C0}.resources.futureResource", {"x": 1}),
    ("deep-unknown-field", "spec.extension", _deep(200)),
    ("huge-required-affinity", f"{_NA}.{_REQUIRED}.nodeSelectorTerms",
     [*([_NO_MATCH] * 299), {"matchExpressions": [LINUX]}]),
    ("huge-preferred-affinity", f"{_NA}.{_PREFERRED}",
     [{"weight": 1 + i % 100, "preference": _NO_MATCH} for i in range(500)]),
    ("max-preferred-weights", f"{_NA}.{_PREFERRED}",
     [{"weight": 2**31 - 1, "preference": {"matchExpressions": [LINUX]}}] * 50),
    ("max-pod-affinity-weights", f"spec.affinity.podAffinity.{_PREFERRED}", [_pod_term(2**31 - 1)] * 50),
    ("negative-anti-affinity-weight", f"spec.affinity.podAntiAffinity.{_PREFERRED}", [_pod_term(-(2**31))]),
    ("bogus-toleration", "spec.tolerations", [
        {"key": "k", "operator": "Maybe", "effect": "Sometimes"},
        {"operator": "Exists", "value": "v"},
        {"key": "", "operator": "Equal"},
    ]),
    ("bogus-spread-mode", "spec.topologySpreadConstraints", _spread(whenUnsatisfiable="Sometimes")),
    ("spread-empty-selector", "spec.topologySpreadConstraints", _spread(labelSelector={})),
    ("spread-min-domains-negative", "spec.topologySpreadConstraints", _spread(minDomains=-5)),
    ("spread-missing-label-keys", "spec.topologySpreadConstraints", _spread(matchLabelKeys=["missing", ""])),
    ("nulls-as-absent", "spec", {**good_pod("x")["spec"], **_NULLS}),
    ("no-containers", "spec.containers", []),
    ("unicode-labels", "metadata.labels", {"ключ": "значение", "emoji": "🚀"}),
    ("negative-ports", f"{_C0}.ports",
     [{"containerPort": -1, "hostPort": -1, "protocol": "BOGUS", "hostIP": "?"}]),
    ("lowest-priority", "spec.priority", -(2**31)),
    ("empty-volume-sources", "spec.volumes",
     [{"name": "i", "image": {}}, {"name": "r", "rbd": {"monitors": []}}, {"name": "q", "iscsi": {}}]),
]

# Pods that decode but cannot be scheduled: a plugin says why, as upstream's would.
REFUSED_PODS: list[tuple[str, str, Any]] = [
    ("node-affinity-operator", f"{_NA}.{_REQUIRED}", terms(expr("zone", "Near", "a"))),
    ("node-affinity-gt-text", f"{_NA}.{_REQUIRED}", terms(expr("cores", "Gt", "ten"))),
    ("node-affinity-gt-overflow", f"{_NA}.{_REQUIRED}", terms(expr("cores", "Gt", "99999999999999999999"))),
    ("node-affinity-field", f"{_NA}.{_REQUIRED}",
     {"nodeSelectorTerms": [{"matchFields": [expr("metadata.uid", "In", "u")]}]}),
    ("node-affinity-empty-term", f"{_NA}.{_REQUIRED}", {"nodeSelectorTerms": [{}]}),
    ("negative-preferred-weight", f"{_NA}.{_PREFERRED}",
     [{"weight": -(2**31), "preference": {"matchExpressions": [LINUX]}}]),
    ("node-selector-empty-key", "spec.nodeSelector", {"": ""}),
    ("pod-affinity-operator", f"spec.affinity.podAffinity.{_REQUIRED}",
     [{"labelSelector": {"matchExpressions": [expr("app", "Like")]}, "topologyKey": "zone"}]),
    ("namespace-selector-operator", f"spec.affinity.podAffinity.{_REQUIRED}",
     [{"labelSelector": {}, "namespaceSelector": {"matchExpressions": [expr("x", "Like")]},
       "topologyKey": HOSTNAME}]),
    ("spread-selector-operator", "spec.topologySpreadConstraints",
     _spread(labelSelector={"matchExpressions": [expr("app", "Maybe")]})),
    ("spread-no-topology-key", "spec.topologySpreadConstraints", _spread(topologyKey="")),
    ("claim-malformed", "spec.volumes", _claim("pvc-spec-string")),
    ("claim-weird", "spec.volumes", _claim("weird-pvc")),
    ("claim-bound-weird", "spec.volumes", _claim("bound-pvc")),
    ("ephemeral-volume", "spec.volumes", [{"name": "e", "ephemeral": {}}]),
    ("untranslatable-volume", "spec.volumes", [{"name": "h", "awsElasticBlockStore": {"volumeID": "aws://bad/zone/"}}]),
    ("claims-unnamed", "spec.resourceClaims", [{}]),
]
# fmt: on


def _unaddressable() -> list[Case]:
    """Pods nobody can address, or that are not ours to schedule: only logged."""

    def case(name: str, obj: Any, mentions: str) -> Case:
        return Case(name, "pods", "Pod", obj, SKIPPED, mentions)

    x = pod("x")
    deleting = mutated(pod("deleting-cpu-abc"), "metadata.deletionTimestamp", "2024-01-01T00:00:00Z")
    theirs = pod("theirs-cpu-abc", scheduler="default-scheduler")
    bound_lots = pod("bound-memory-lots", node="node-0000")
    bound_string = pod("bound-containers-string", node="node-0001")
    return [
        case("pod-null", None, "must be an object, got null"),
        case("pod-string", "a pod", 'must be an object, got string "a pod"'),
        case("pod-list", [x], "must be an object, got list"),
        case("pod-number", 42, "must be an object, got number 42"),
        case("pod-metadata-string", mutated(x, "metadata", "x"), "metadata: must be an object"),
        case("pod-no-metadata", mutated(x, "metadata", DELETE), "metadata: required value"),
        case("pod-no-name", mutated(x, "metadata.name", DELETE), "metadata.name: required value"),
        case("pod-name-number", mutated(x, "metadata.name", 5), "metadata.name: must be a string"),
        case("pod-no-uid", mutated(pod("pod-no-uid"), "metadata.uid", DELETE), "metadata.uid"),
        case("pod-namespace-list", mutated(pod("pod-namespace-list"), "metadata.namespace", ["x"]),
             "metadata.namespace"),
        case("pod-spec-string", mutated(pod("pod-spec-string"), "spec", "oops"), "spec"),  # whose is it?
        case("theirs-cpu-abc", mutated(theirs, f"{_REQ}[cpu]", "abc"), f"{_REQ}[cpu]"),
        case("bound-memory-lots", mutated(bound_lots, f"{_REQ}[memory]", "lots"), f"{_REQ}[memory]"),
        case("bound-containers-string", mutated(bound_string, "spec.containers", "x"), "spec.containers"),
        case("deleting-cpu-abc", mutated(deleting, f"{_REQ}[cpu]", "abc"), f"{_REQ}[cpu]"),
    ]  # fmt: skip


def _kind(resource: str) -> tuple[str, bool]:
    if resource in ("pods", "nodes"):
        return ("Pod", True) if resource == "pods" else ("Node", False)
    kind, namespaced, _ = OTHER_KINDS[resource]
    return kind, namespaced


def _table(
    rows: list[tuple[Any, ...]], make: Callable[[str], Any], resource: str, outcome: str
) -> list[Case]:
    """Cases of rows ``(name, path, value[, what the report names])`` mutating ``make(name)``."""
    kind, namespaced = _kind(resource)
    return [
        Case(
            name,
            resource,
            kind,
            mutated(make(name), path, value),
            outcome,
            field[0] if field else path,
            namespaced,
        )
        for name, path, value, *field in rows
    ]


def _other_table(rows: list[tuple[Any, ...]], outcome: str) -> list[Case]:
    """Cases of rows ``(plural, name, path, value[, what the report names])``."""
    return [
        case
        for resource, *row in rows
        for case in _table([tuple(row)], lambda name, r=resource: other(r, name), resource, outcome)
    ]


def corpus() -> list[Case]:
    """Every case, malformed and hostile, in a stable order."""
    bound_elsewhere = lambda name: pod(name, scheduler="other-scheduler", node="node-0002")  # noqa: E731
    cases = [
        *_table(POD_MUTATIONS, pod, "pods", UNSCHEDULABLE),
        *_table(STATUS_MUTATIONS, bound_elsewhere, "pods", SKIPPED),
        *_unaddressable(),
        *_table(ACCEPTED_PODS, good_pod, "pods", ACCEPTED),
        *_table(REFUSED_PODS, good_pod, "pods", REFUSED),
        *_table(NODE_MUTATIONS, node, "nodes", SKIPPED),
        *_table(ACCEPTED_NODES, node, "nodes", ACCEPTED),
        *_other_table(OTHER_MUTATIONS, SKIPPED),
        *_other_table(OTHER_ACCEPTED, ACCEPTED),
    ]
    names = [(c.resource, c.name) for c in cases]
    assert len(names) == len(set(names)), "corpus names must be unique per resource"
    return cases


def bad_cases() -> list[Case]:
    """The cases that must be reported as malformed."""
    return [c for c in corpus() if c.outcome in (SKIPPED, UNSCHEDULABLE)]
