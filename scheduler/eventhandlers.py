"""Informer events → cache updates and queue moves.

Assigned pods (any scheduler's) go to the cache, so their resources count at once; unassigned
pods of our profiles go to the queue; node and storage changes update the cache and move the
unschedulable pods they could help (the queue asks the plugins' queueing hints). Pods that do
not decode at all are told why, when they are ours to schedule (``MalformedPods``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeGuard

from scheduler.api import MalformedObject, Node, Pod
from scheduler.api.objects import DEFAULT_SCHEDULER_NAME
from scheduler.cache import Cache
from scheduler.framework import ActionType, ClusterEvent
from scheduler.framework.interface import ASSIGNED_POD, NODE
from scheduler.queue import SchedulingQueue
from scheduler.schedule_one import POD_REASON_UNSCHEDULABLE, EventSink, StatusSink

log = logging.getLogger(__name__)

ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(NODE, ActionType.DELETE, "NodeDelete")


def pod_update_action(old: Pod, new: Pod) -> ActionType:
    """What changed in an assigned pod, in upstream's event vocabulary."""
    action = ActionType(0)
    if old.labels != new.labels:
        action |= ActionType.UPDATE_POD_LABEL
    old_req, new_req = old.requests, new.requests
    if (
        new_req.milli_cpu < old_req.milli_cpu
        or new_req.memory < old_req.memory
        or new_req.ephemeral_storage < old_req.ephemeral_storage
        or any(new_req.scalar.get(k, 0) < v for k, v in old_req.scalar.items())
    ):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    if old.tolerations != new.tolerations:
        action |= ActionType.UPDATE_POD_TOLERATIONS
    return action or ActionType.UPDATE_OTHER


def node_update_action(old: Node, new: Node) -> ActionType:
    """What changed in a node, in upstream's event vocabulary (no bits: nothing scheduling-relevant)."""
    action = ActionType(0)
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.images != new.images or old.declared_features != new.declared_features:
        action |= ActionType.UPDATE_OTHER
    return action


class PodEvents:
    """Handler for the Pod informer."""

    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        scheduler_names: Collection[str],
        reject_waiting: Callable[[str], None] = lambda _uid: None,
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.scheduler_names = frozenset(scheduler_names)
        # a pod deleted while held at Permit must give back what it reserved at once
        self.reject_waiting = reject_waiting

    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.scheduler_names

    def on_add(self, pod: Pod) -> None:
        if pod.node_name:
            if not pod.is_terminal:
                self.cache.add_pod(pod)
                self.queue.on_cluster_event(ASSIGNED_POD_ADD, None, pod)
        elif self.responsible_for(pod) and not pod.is_terminal:
            self.queue.add(pod)

    def on_update(self, old: Pod, new: Pod) -> None:
        if old.node_name:
            if new.is_terminal:
                self.on_delete(old)
                return
            self.cache.update_pod(old, new)
            action = pod_update_action(old, new)
            self.queue.on_cluster_event(ClusterEvent(ASSIGNED_POD, action, "AssignedPodUpdate"), old, new)
        elif new.node_name:
            # Bound (by us or anyone): it leaves the queue and starts counting on its node.
            if self.responsible_for(old):
                self.queue.delete(old)
            self.on_add(new)
        elif self.responsible_for(new):
            if new.is_terminal:
                self.queue.delete(new)
            elif not self.cache.is_assumed(new.uid):
                # An assumed pod is being bound; its update must not queue it a second time.
                self.queue.update(old, new)

    def on_delete(self, pod: Pod) -> None:
        if pod.node_name:
            self.cache.remove_pod(pod)
            self.queue.on_cluster_event(ASSIGNED_POD_DELETE, pod, None)
        elif self.responsible_for(pod):
            self.queue.delete(pod)
            self.reject_waiting(pod.uid)


class NodeEvents:
    """Handler for the Node informer."""

    def __init__(self, cache: Cache, queue: SchedulingQueue) -> None:
        self.cache = cache
        self.queue = queue

    def on_add(self, node: Node) -> None:
        self.cache.add_node(node)
        self.queue.on_cluster_event(NODE_ADD, None, node)

    def on_update(self, old: Node, new: Node) -> None:
        self.cache.update_node(old, new)
        action = node_update_action(old, new)
        if action:
            self.queue.on_cluster_event(ClusterEvent(NODE, action, "NodeUpdate"), old, new)

    def on_delete(self, node: Node) -> None:
        self.cache.remove_node(node)
        # e.g. a topology domain disappearing can make a spread constraint satisfiable
        self.queue.on_cluster_event(NODE_DELETE, node, None)


class ResourceEvents:
    """Handler for kinds only plugins care about (PVs, PVCs, StorageClasses, CSINodes, ...):
    every change is a cluster event that may move unschedulable pods."""

    def __init__(self, queue: SchedulingQueue, resource: str) -> None:
        self.queue = queue
        self.resource = resource
        self._labels = {
            ActionType.ADD: f"{resource.rsplit('/', 1)[-1]}Add",
            ActionType.UPDATE_OTHER: f"{resource.rsplit('/', 1)[-1]}Update",
            ActionType.DELETE: f"{resource.rsplit('/', 1)[-1]}Delete",
        }

    def _event(self, action: ActionType) -> ClusterEvent:
        return ClusterEvent(self.resource, action, self._labels[action])

    def on_add(self, obj: Mapping[str, Any]) -> None:
        self.queue.on_cluster_event(self._event(ActionType.ADD), None, obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.queue.on_cluster_event(self._event(ActionType.UPDATE_OTHER), old, new)

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        self.queue.on_cluster_event(self._event(ActionType.DELETE), obj, None)


class DeviceTaintRuleEvents:
    """Handler for DeviceTaintRules (DRADeviceTaintRules): a rule's taints are the tainted
    slices' as far as plugins can tell, so every change of a rule, its deletion too, is a
    ResourceSlice update (upstream's slice tracker reports it so); hints see the rules."""

    def __init__(self, queue: SchedulingQueue, resource: str) -> None:
        self.queue = queue
        self._event = ClusterEvent(resource, ActionType.UPDATE_OTHER, f"{resource.rsplit('/', 1)[-1]}Update")

    def on_add(self, obj: Mapping[str, Any]) -> None:
        self.queue.on_cluster_event(self._event, None, obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.queue.on_cluster_event(self._event, old, new)

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        self.queue.on_cluster_event(self._event, obj, None)


class MalformedPods:
    """The Pod informer's ``malformed`` handler.

    A pod of one of our profiles that is not bound yet, and does not decode, would otherwise wait
    in silence forever: it is reported as a scheduling failure (a FailedScheduling Warning event,
    PodScheduled=False with reason Unschedulable and what is wrong), once per problem (the
    informer's promise), and leaves the queue (a last good version there is not what the pod asks
    for any more); a good version brings it back as an update. Any other malformed pod is only
    logged, by the informer. ``get`` is the pod as the status patch must see it, since the
    informer's store has no current version of it.
    """

    def __init__(
        self, scheduler_names: Collection[str], queue: SchedulingQueue, events: EventSink, status: StatusSink
    ) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        self.queue = queue
        self.events = events
        self.status = status
        self._pods: dict[str, Pod] = {}

    def get(self, key: str) -> Pod | None:
        return self._pods.get(key)

    def malformed(self, key: str, obj: Any, error: MalformedObject) -> None:
        pod = self._ours_to_schedule(obj)
        if pod is None:
            self._pods.pop(key, None)
            return
        self._pods[key] = pod
        self.queue.delete(pod)
        message = f"malformed pod: {error.reason}"
        self.events.record(pod, "Warning", "FailedScheduling", "Scheduling", message)
        condition: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": POD_REASON_UNSCHEDULABLE,
            "message": message,
        }
        if pod.generation:
            condition["observedGeneration"] = pod.generation
        self.status.submit(pod, condition, None)

    def gone(self, key: str) -> None:
        self._pods.pop(key, None)

    def _ours_to_schedule(self, obj: Any) -> Pod | None:
        """What can be read of a pending pod of our profiles (enough to address it and write its
        status); None for any other pod, or one that cannot even be addressed."""
        meta = _object(obj, "metadata")
        spec = _object(obj, "spec")
        status = _object(obj, "status")
        name, uid = meta.get("name"), meta.get("uid")
        namespace = meta.get("namespace") or "default"
        scheduler = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if not (_text(name) and _text(namespace) and _text(uid) and _text(scheduler)):
            return None
        if scheduler not in self.scheduler_names:
            return None
        if (
            spec.get("nodeName")
            or meta.get("deletionTimestamp")
            or status.get("phase") in ("Succeeded", "Failed")
        ):
            return None
        conditions = status.get("conditions")
        generation = meta.get("generation")
        return Pod(
            uid=uid,
            namespace=namespace,
            name=name,
            resource_version=str(meta.get("resourceVersion") or ""),
            generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
            scheduler_name=scheduler,
            conditions=tuple(conditions)
            if isinstance(conditions, list) and all(isinstance(c, dict) for c in conditions)
            else (),
        )


def _text(value: object) -> TypeGuard[str]:
    """A non-empty string."""
    return isinstance(value, str) and bool(value)


def _object(obj: Any, name: str) -> Mapping[str, Any]:
    value = obj.get(name) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}
