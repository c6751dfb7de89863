"""The kinds the scheduler watches besides Pods and Nodes, in one place: the app starts an
informer for each, and a snapshot (`scheduler.simulate.snapshot`) reads each, so a simulation
sees what the scheduler would."""

from __future__ import annotations

from scheduler.framework.interface import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    DEVICE_CLASS,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
)

# Kinds only plugins read, by plural resource name: (API path, cluster event resource or "").
# Their stores are the plugins' listers; a change of those with an event resource is a cluster
# event that may help unschedulable pods.
PLUGIN_RESOURCES: dict[str, tuple[str, str]] = {
    "persistentvolumes": ("/api/v1/persistentvolumes", PERSISTENT_VOLUME),
    "persistentvolumeclaims": ("/api/v1/persistentvolumeclaims", PERSISTENT_VOLUME_CLAIM),
    "storageclasses": ("/apis/storage.k8s.io/v1/storageclasses", STORAGE_CLASS),
    "csinodes": ("/apis/storage.k8s.io/v1/csinodes", CSI_NODE),
    "csidrivers": ("/apis/storage.k8s.io/v1/csidrivers", CSI_DRIVER),
    "csistoragecapacities": ("/apis/storage.k8s.io/v1/csistoragecapacities", CSI_STORAGE_CAPACITY),
    "volumeattachments": ("/apis/storage.k8s.io/v1/volumeattachments", VOLUME_ATTACHMENT),
    "deviceclasses": ("/apis/resource.k8s.io/v1/deviceclasses", DEVICE_CLASS),
    "resourceclaims": ("/apis/resource.k8s.io/v1/resourceclaims", RESOURCE_CLAIM),
    "resourceslices": ("/apis/resource.k8s.io/v1/resourceslices", RESOURCE_SLICE),
    "namespaces": ("/api/v1/namespaces", ""),
    "services": ("/api/v1/services", ""),
    "replicationcontrollers": ("/api/v1/replicationcontrollers", ""),
    "replicasets": ("/apis/apps/v1/replicasets", ""),
    "statefulsets": ("/apis/apps/v1/statefulsets", ""),
    "poddisruptionbudgets": ("/apis/policy/v1/poddisruptionbudgets", ""),
}
# Watched with DRADeviceTaintRules (its API is beta, off by default on a real server): a rule
# taints devices as if their slice did, so each change is a ResourceSlice update to the queue.
DEVICE_TAINT_RULES = ("devicetaintrules", "/apis/resource.k8s.io/v1beta2/devicetaintrules", RESOURCE_SLICE)
