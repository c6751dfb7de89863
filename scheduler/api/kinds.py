"""The shape of every kind the scheduler watches: the fields it reads, with their JSON types.

Pods and Nodes are checked before ``Pod.from_dict``/``Node.from_dict`` build their compact views;
the kinds only plugins read (PVs, PVCs, StorageClasses, Services, ...) stay plain dicts, and
``decoder_for`` gives their informers a decoder that checks them first, so a plugin may trust
the type of every field listed here. Field names are the API's; a field missing from a shape
is one no part of the scheduler reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api.schema import (
    INT32,
    INT64,
    QUANTITY,
    STRING_MAP,
    STRINGS,
    Check,
    MalformedObject,
    ShapeError,
    boolean,
    fields,
    int_or_string,
    list_of,
    quantities,
    string,
)

# ----------------------------------------------------------------------------- metadata

OWNER_REFERENCE = fields(
    {"apiVersion": string, "kind": string, "name": string, "uid": string, "controller": boolean}
)
_META_FIELDS: dict[str, Check] = {
    "name": string,
    "namespace": string,
    "uid": string,
    "resourceVersion": string,
    "generation": INT64,
    "creationTimestamp": string,
    "deletionTimestamp": string,
    "labels": STRING_MAP,
    "annotations": STRING_MAP,
    "ownerReferences": list_of(OWNER_REFERENCE),
}
METADATA = fields(_META_FIELDS, required=("name",))
POD_METADATA = fields(_META_FIELDS, required=("name", "uid"))

# ---------------------------------------------------------------------------- selectors

REQUIREMENT = fields({"key": string, "operator": string, "values": STRINGS})
LABEL_SELECTOR = fields({"matchLabels": STRING_MAP, "matchExpressions": list_of(REQUIREMENT)})
NODE_SELECTOR_TERM = fields({"matchExpressions": list_of(REQUIREMENT), "matchFields": list_of(REQUIREMENT)})
NODE_SELECTOR = fields({"nodeSelectorTerms": list_of(NODE_SELECTOR_TERM)})

# ---------------------------------------------------------------------------------- Pod

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
POD_AFFINITY_TERM = fields(
    {
        "labelSelector": LABEL_SELECTOR,
        "namespaceSelector": LABEL_SELECTOR,
        "namespaces": STRINGS,
        "topologyKey": string,
        "matchLabelKeys": STRINGS,
        "mismatchLabelKeys": STRINGS,
    }
)
_POD_AFFINITY = fields(
    {
        _REQUIRED: list_of(POD_AFFINITY_TERM),
        _PREFERRED: list_of(fields({"weight": INT32, "podAffinityTerm": POD_AFFINITY_TERM})),
    }
)
AFFINITY = fields(
    {
        "nodeAffinity": fields(
            {
                _REQUIRED: NODE_SELECTOR,
                _PREFERRED: list_of(fields({"weight": INT32, "preference": NODE_SELECTOR_TERM})),
            }
        ),
        "podAffinity": _POD_AFFINITY,
        "podAntiAffinity": _POD_AFFINITY,
    }
)
TOLERATION = fields(
    {"key": string, "operator": string, "value": string, "effect": string, "tolerationSeconds": INT64}
)
TAINT = fields({"key": string, "value": string, "effect": string, "timeAdded": string})
RESOURCES = fields({"requests": quantities, "limits": quantities})
CONTAINER = fields(
    {
        "name": string,
        "image": string,
        "resources": RESOURCES,
        "ports": list_of(
            fields({"containerPort": INT32, "hostPort": INT32, "protocol": string, "hostIP": string})
        ),
        "restartPolicy": string,
        "restartPolicyRules": list_of(fields({"action": string})),
    }
)
_READ_ONLY = {"readOnly": boolean}
# the volume sources the volume plugins read (claims, in-tree disks, CSI, image volumes)
VOLUME = fields(
    {
        "name": string,
        "persistentVolumeClaim": fields({"claimName": string, **_READ_ONLY}),
        "ephemeral": fields({}),
        "gcePersistentDisk": fields({"pdName": string, **_READ_ONLY}),
        "awsElasticBlockStore": fields({"volumeID": string, **_READ_ONLY}),
        "azureDisk": fields({"diskURI": string, "kind": string, **_READ_ONLY}),
        "cinder": fields({"volumeID": string, **_READ_ONLY}),
        "portworxVolume": fields({"volumeID": string, **_READ_ONLY}),
        "azureFile": fields({}),
        "vsphereVolume": fields({}),
        "iscsi": fields({"iqn": string, **_READ_ONLY}),
        "rbd": fields({"monitors": STRINGS, "pool": string, "image": string, **_READ_ONLY}),
        "csi": fields({"driver": string}),
        "image": fields({"reference": string}),
    }
)
TOPOLOGY_SPREAD_CONSTRAINT = fields(
    {
        "maxSkew": INT32,
        "topologyKey": string,
        "whenUnsatisfiable": string,
        "labelSelector": LABEL_SELECTOR,
        "minDomains": INT32,
        "nodeAffinityPolicy": string,
        "nodeTaintsPolicy": string,
        "matchLabelKeys": STRINGS,
    }
)
POD_SPEC = fields(
    {
        "containers": list_of(CONTAINER),
        "initContainers": list_of(CONTAINER),
        "schedulerName": string,
        "nodeName": string,
        "priority": INT32,
        "preemptionPolicy": string,
        "nodeSelector": STRING_MAP,
        "affinity": AFFINITY,
        "tolerations": list_of(TOLERATION),
        "schedulingGates": list_of(fields({"name": string}, required=("name",))),
        "schedulingGroup": fields({"podGroupName": string}),
        "volumes": list_of(VOLUME),
        "topologySpreadConstraints": list_of(TOPOLOGY_SPREAD_CONSTRAINT),
        "resourceClaims": list_of(
            fields({"name": string, "resourceClaimName": string, "resourceClaimTemplateName": string})
        ),
        "overhead": quantities,
        "resources": RESOURCES,
        "hostNetwork": boolean,
        "hostUsers": boolean,
    },
    required=("containers",),
)
CONDITION = fields(
    {
        "type": string,
        "status": string,
        "reason": string,
        "message": string,
        "lastTransitionTime": string,
        "observedGeneration": INT64,
    }
)
_CONTAINER_STATUS = fields({"name": string, "resources": RESOURCES, "allocatedResources": quantities})
POD_STATUS = fields(
    {
        "phase": string,
        "nominatedNodeName": string,
        "startTime": string,
        "conditions": list_of(CONDITION),
        "containerStatuses": list_of(_CONTAINER_STATUS),
        "initContainerStatuses": list_of(_CONTAINER_STATUS),
        "resources": RESOURCES,
        "allocatedResources": quantities,
        "resourceClaimStatuses": list_of(fields({"name": string, "resourceClaimName": string})),
    }
)
POD = fields(
    {"metadata": POD_METADATA, "spec": POD_SPEC, "status": POD_STATUS}, required=("metadata", "spec")
)

# --------------------------------------------------------------------------------- Node

NODE = fields(
    {
        "metadata": METADATA,
        "spec": fields({"unschedulable": boolean, "taints": list_of(TAINT)}),
        "status": fields(
            {
                "allocatable": quantities,
                "capacity": quantities,
                "images": list_of(fields({"names": STRINGS, "sizeBytes": INT64})),
                "declaredFeatures": STRINGS,
            }
        ),
    },
    required=("metadata",),
)

# ------------------------------------------------------------------- kinds plugins read

_OBJECT_REFERENCE = fields(
    {
        "kind": string,
        "apiVersion": string,
        "namespace": string,
        "name": string,
        "uid": string,
        "resourceVersion": string,
    }
)
PV_SPEC = fields(
    {
        "storageClassName": string,
        "capacity": quantities,
        "accessModes": STRINGS,
        "volumeMode": string,
        "volumeAttributesClassName": string,
        "claimRef": _OBJECT_REFERENCE,
        "nodeAffinity": fields({"required": NODE_SELECTOR}),
        "csi": fields({"driver": string, "volumeHandle": string}),
        "gcePersistentDisk": fields({"pdName": string}),
        "awsElasticBlockStore": fields({"volumeID": string}),
        "azureDisk": fields({"diskURI": string, "kind": string}),
        "cinder": fields({"volumeID": string}),
        "portworxVolume": fields({"volumeID": string}),
        "azureFile": fields({}),
        "vsphereVolume": fields({}),
    }
)
_PHASE = fields({"phase": string})


def _kind(spec: Check | None = None, status: Check | None = None, **top: Check) -> Check:
    shape = {"metadata": METADATA, **top}
    if spec is not None:
        shape["spec"] = spec
    if status is not None:
        shape["status"] = status
    return fields(shape, required=("metadata",))


def _selector_kind(selector: Check) -> Check:
    return _kind(fields({"selector": selector}))


# plural resource name -> (kind, shape)
PLUGIN_KINDS: dict[str, tuple[str, Check]] = {
    "persistentvolumes": ("PersistentVolume", _kind(PV_SPEC, _PHASE)),
    "persistentvolumeclaims": (
        "PersistentVolumeClaim",
        _kind(
            fields(
                {
                    "storageClassName": string,
                    "volumeName": string,
                    "accessModes": STRINGS,
                    "resources": RESOURCES,
                    "selector": LABEL_SELECTOR,
                    "volumeMode": string,
                    "volumeAttributesClassName": string,
                }
            ),
            _PHASE,
        ),
    ),
    "storageclasses": (
        "StorageClass",
        _kind(
            provisioner=string,
            volumeBindingMode=string,
            parameters=STRING_MAP,
            allowedTopologies=list_of(
                fields({"matchLabelExpressions": list_of(fields({"key": string, "values": STRINGS}))})
            ),
        ),
    ),
    "csinodes": (
        "CSINode",
        _kind(
            fields(
                {
                    "drivers": list_of(
                        fields(
                            {
                                "name": string,
                                "nodeID": string,
                                "topologyKeys": STRINGS,
                                "allocatable": fields({"count": INT32}),
                            }
                        )
                    )
                }
            )
        ),
    ),
    "csidrivers": (
        "CSIDriver",
        _kind(fields({"attachRequired": boolean, "storageCapacity": boolean, "podInfoOnMount": boolean})),
    ),
    "csistoragecapacities": (
        "CSIStorageCapacity",
        _kind(
            storageClassName=string,
            capacity=QUANTITY,
            maximumVolumeSize=QUANTITY,
            nodeTopology=LABEL_SELECTOR,
        ),
    ),
    "volumeattachments": (
        "VolumeAttachment",
        _kind(
            fields(
                {
                    "attacher": string,
                    "nodeName": string,
                    "source": fields({"persistentVolumeName": string, "inlineVolumeSpec": PV_SPEC}),
                }
            ),
            fields({"attached": boolean}),
        ),
    ),
    "deviceclasses": (
        "DeviceClass",
        _kind(fields({"selectors": list_of(fields({})), "extendedResourceName": string})),
    ),
    "resourceclaims": (
        "ResourceClaim",
        _kind(
            fields({"devices": fields({"requests": list_of(fields({"name": string}))})}),
            fields({"reservedFor": list_of(fields({"resource": string, "name": string, "uid": string}))}),
        ),
    ),
    "resourceslices": (
        "ResourceSlice",
        _kind(
            fields(
                {
                    "driver": string,
                    "nodeName": string,
                    "allNodes": boolean,
                    "pool": fields({"name": string, "generation": INT64, "resourceSliceCount": INT64}),
                    "devices": list_of(fields({"name": string})),
                }
            )
        ),
    ),
    "devicetaintrules": (
        "DeviceTaintRule",
        _kind(
            fields(
                {
                    "deviceSelector": fields({"driver": string, "pool": string, "device": string}),
                    "taint": fields({"key": string, "value": string, "effect": string}),
                }
            )
        ),
    ),
    "namespaces": ("Namespace", _kind()),
    "services": ("Service", _selector_kind(STRING_MAP)),
    "replicationcontrollers": ("ReplicationController", _selector_kind(STRING_MAP)),
    "replicasets": ("ReplicaSet", _selector_kind(LABEL_SELECTOR)),
    "statefulsets": ("StatefulSet", _selector_kind(LABEL_SELECTOR)),
    "poddisruptionbudgets": (
        "PodDisruptionBudget",
        _kind(
            fields(
                {"selector": LABEL_SELECTOR, "minAvailable": int_or_string, "maxUnavailable": int_or_string}
            ),
            fields({"disruptionsAllowed": INT32, "disruptedPods": STRING_MAP}),
        ),
    ),
}


def display_key(obj: Any) -> str:
    """How a log line names an object, however broken: ``namespace/name``, ``<no name>``."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return "<no metadata>"
    name = meta.get("name")
    namespace = meta.get("namespace")
    shown = name if isinstance(name, str) and name else "<no name>"
    return f"{namespace}/{shown}" if isinstance(namespace, str) and namespace else shown


def check(kind: str, shape: Check, obj: Any) -> None:
    """Raise MalformedObject, naming the object and the field, unless ``obj`` has ``shape``."""
    try:
        shape(obj)
    except ShapeError as exc:
        raise MalformedObject(kind, display_key(obj), str(exc)) from None


def decoder_for(resource: str) -> Callable[[Any], dict[str, Any]]:
    """The informer decoder of a kind plugins read as a plain dict (checked, then kept as is)."""
    kind, shape = PLUGIN_KINDS[resource]

    def decode(obj: Any) -> dict[str, Any]:
        check(kind, shape, obj)
        return obj

    return decode
