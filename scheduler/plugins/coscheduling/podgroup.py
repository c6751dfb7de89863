"""The PodGroup custom resource (scheduling.x-k8s.io/v1alpha1) as the plugin reads it.

Objects come from the plugin's lister as plain API dicts; ``PodGroups`` decodes each version of
an object once, and reports a malformed one once (it is then treated as absent, as a PodGroup
the scheduler cannot read would be).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import Pod, Resource
from scheduler.framework import ObjectLister

log = logging.getLogger(__name__)

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
# the kind as plugins declare it in ``watches`` and read it with ``handle.lister``
PODGROUPS = f"{GROUP}/{VERSION}/podgroups"
# pods join a group with this label; its value is the PodGroup's name in the pod's namespace
POD_GROUP_LABEL = f"{GROUP}/pod-group"


class MalformedPodGroup(ValueError):
    """A PodGroup whose spec cannot be read; the message names the field."""


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    # None: no resource check before the group's pods are tried
    min_resources: Resource | None
    # None: the plugin's permitWaitingTimeSeconds
    schedule_timeout_seconds: int | None
    # metadata.creationTimestamp, seconds since the epoch (0 when unset)
    created: float

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PodGroup:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise MalformedPodGroup("spec: must be an object")
        min_member = _integer(spec, "minMember", default=0)
        timeout = spec.get("scheduleTimeoutSeconds")
        resources = spec.get("minResources")
        if resources is not None and not isinstance(resources, Mapping):
            raise MalformedPodGroup("spec.minResources: must be an object")
        try:
            min_resources = Resource.from_list(resources) if resources else None
        except (ValueError, TypeError) as exc:
            raise MalformedPodGroup(f"spec.minResources: {exc}") from None
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            min_member=min_member,
            min_resources=min_resources,
            schedule_timeout_seconds=None if timeout is None else _integer(spec, "scheduleTimeoutSeconds"),
            created=_timestamp(meta.get("creationTimestamp")),
        )


def _integer(spec: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedPodGroup(f"spec.{name}: must be an integer, not {value!r}")
    return value


def _timestamp(value: Any) -> float:
    if not value:
        return 0.0
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise MalformedPodGroup(f"metadata.creationTimestamp: not a time: {value!r}") from None


def group_name(pod: Pod) -> str:
    """The name of the pod's PodGroup, "" for a pod outside any group."""
    return pod.labels.get(POD_GROUP_LABEL, "")


def group_key(pod: Pod) -> str:
    """ "namespace/name" of the pod's PodGroup, "" for a pod outside any group."""
    name = group_name(pod)
    return f"{pod.namespace}/{name}" if name else ""


class PodGroups:
    """The PodGroups the lister holds, decoded once per resourceVersion."""

    def __init__(self, lister: ObjectLister) -> None:
        self._lister = lister
        self._decoded: dict[str, tuple[str, PodGroup | None]] = {}

    def get(self, key: str) -> PodGroup | None:
        obj = self._lister.get(key)
        if obj is None:
            self._decoded.pop(key, None)
            return None
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        known = self._decoded.get(key)
        if known is not None and known[0] == version:
            return known[1]
        group: PodGroup | None
        try:
            group = PodGroup.from_dict(obj)
        except MalformedPodGroup as exc:
            log.warning(
                "PodGroup %s is malformed, its pods are scheduled as if it did not exist: %s", key, exc
            )
            group = None
        self._decoded[key] = (version, group)
        return group
