"""Who belongs to which pod group (scheduling.k8s.io/v1alpha2), kept from the pod informer's events.

A pod joins a group with ``spec.schedulingGroup.podGroupName`` (immutable). Whether a member is
placed is read from the pod itself (bound) or from the cache (assumed), so the counts never lag
behind a scheduling cycle: the pod-group cycle's trial placements count while they last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.api import Pod
from scheduler.framework import ActionType, ClusterEvent
from scheduler.framework.interface import UNSCHEDULED_POD

# What upstream's event handler sends every queued pod when a member arrives (GangScheduling on).
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD, "UnscheduledPodAdd")


class GroupMembers:
    """The members of one pod group (``framework.PodGroupState``)."""

    __slots__ = ("_assumed_node", "pods")

    def __init__(self, assumed_node: Callable[[str], str]) -> None:
        self.pods: dict[str, Pod] = {}  # by uid, as the informer last saw them
        self._assumed_node = assumed_node

    @property
    def all_count(self) -> int:
        return len(self.pods)

    def scheduled_uids(self) -> set[str]:
        return {uid for uid, pod in self.pods.items() if pod.node_name or self._assumed_node(uid)}

    def scheduled_pods(self) -> list[Pod]:
        placed: list[Pod] = []
        for pod in self.pods.values():
            if pod.node_name:
                placed.append(pod)
            elif node := self._assumed_node(pod.uid):
                placed.append(pod.on_node(node))
        return placed

    def unscheduled_pods(self) -> list[Pod]:
        return [pod for pod in self.pods.values() if not pod.node_name and not self._assumed_node(pod.uid)]


class PodGroupMembers:
    """Every pod group's members by (namespace, name) (``framework.PodGroups``).

    ``assumed_node(uid)`` is the cache's: the node an assumed pod is accounted on, or ""."""

    def __init__(self, assumed_node: Callable[[str], str] = lambda _uid: "") -> None:
        self._assumed_node = assumed_node
        self._groups: dict[tuple[str, str], GroupMembers] = {}

    def get(self, namespace: str, name: str) -> GroupMembers | None:
        return self._groups.get((namespace, name))

    def add(self, pod: Pod) -> None:
        if not pod.pod_group or pod.is_terminal:
            return
        key = (pod.namespace, pod.pod_group)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = GroupMembers(self._assumed_node)
        group.pods[pod.uid] = pod

    def remove(self, pod: Pod) -> None:
        key = (pod.namespace, pod.pod_group)
        group = self._groups.get(key)
        if group is None:
            return
        group.pods.pop(pod.uid, None)
        if not group.pods:
            del self._groups[key]

    def handler(self, inner: Any, queue: Any, *, wake_gangs: bool) -> MemberEvents:
        """The pod informer's ``inner`` handler, keeping the members first. ``wake_gangs``
        (GangScheduling): a new pending member is a cluster event for every queued pod, so a gang
        held at PreEnqueue re-checks its count, as upstream's handler does."""
        return MemberEvents(inner, self, queue, wake_gangs)


class MemberEvents:
    """Pod events: members updated before the scheduler's own handler sees the pod."""

    def __init__(self, inner: Any, members: PodGroupMembers, queue: Any, wake_gangs: bool) -> None:
        self._inner = inner
        self._members = members
        self._queue = queue
        self._wake_gangs = wake_gangs

    def on_add(self, pod: Pod) -> None:
        self._members.add(pod)
        self._inner.on_add(pod)
        if self._wake_gangs and pod.pod_group and not pod.node_name:
            self._queue.on_cluster_event(UNSCHEDULED_POD_ADD, None, pod)

    def on_update(self, old: Pod, new: Pod) -> None:
        if old.pod_group != new.pod_group or new.is_terminal:
            self._members.remove(old)
        if not new.is_terminal:
            self._members.add(new)
        self._inner.on_update(old, new)

    def on_delete(self, pod: Pod) -> None:
        self._members.remove(pod)
        self._inner.on_delete(pod)
