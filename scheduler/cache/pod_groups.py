"""Who belongs to which pod group (scheduling.k8s.io/v1alpha2), kept from the pod informer's events.

A pod joins a group with ``spec.schedulingGroup.podGroupName`` (immutable). Whether a member is
placed is read from the pod itself (bound) or from the cache (assumed), so the counts never lag
behind a scheduling cycle: the pod-group cycle's trial placements count while they last. Each
group keeps the uids of its bound members as the informer's events come, and asks the cache for
its assumed uids as one set: GangScheduling's Permit counts the placed members of a 100-pod gang
for each member, so a set intersection instead of a call per member.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Protocol

from scheduler.api import Pod
from scheduler.client.informer import EventHandler
from scheduler.framework import ActionType, ClusterEvent
from scheduler.framework.interface import UNSCHEDULED_POD

# What upstream's event handler sends every queued pod when a member arrives (GangScheduling on).
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD, "UnscheduledPodAdd")


class ClusterEvents(Protocol):
    """Where a member's arrival is told as a cluster event (the scheduling queue)."""

    def on_cluster_event(
        self, event: ClusterEvent, old: object, new: object, *, exclude: str = ""
    ) -> None: ...


class AssumedPods(Protocol):
    """The cache's assumed pods, as the members read them."""

    def assumed_uids(self) -> Set[str]:
        """The uids of the pods assumed right now (a live view: read, never kept)."""

    def assumed_node(self, uid: str) -> str:
        """The node an assumed pod is accounted on ("" when it is not assumed)."""


class NoAssumedPods:
    """No cache: a member is placed only once bound."""

    def assumed_uids(self) -> Set[str]:
        return frozenset()

    def assumed_node(self, uid: str) -> str:
        return ""


class GroupMembers:
    """The members of one pod group (``framework.PodGroupState``)."""

    __slots__ = ("_assumed", "bound", "pods")

    def __init__(self, assumed: AssumedPods) -> None:
        self.pods: dict[str, Pod] = {}  # by uid, as the informer last saw them
        self.bound: set[str] = set()  # uids of the pods above with a node
        self._assumed = assumed

    @property
    def all_count(self) -> int:
        return len(self.pods)

    def put(self, pod: Pod) -> None:
        self.pods[pod.uid] = pod
        if pod.node_name:
            self.bound.add(pod.uid)
        else:
            self.bound.discard(pod.uid)

    def drop(self, uid: str) -> None:
        self.pods.pop(uid, None)
        self.bound.discard(uid)

    def scheduled_uids(self) -> set[str]:
        return self.bound | (self.pods.keys() & self._assumed.assumed_uids())

    def scheduled_pods(self) -> list[Pod]:
        placed: list[Pod] = []
        for pod in self.pods.values():
            if pod.node_name:
                placed.append(pod)
            elif node := self._assumed.assumed_node(pod.uid):
                placed.append(pod.on_node(node))
        return placed

    def unscheduled_pods(self) -> list[Pod]:
        placed = self.scheduled_uids()
        return [pod for uid, pod in self.pods.items() if uid not in placed]


class PodGroupMembers:
    """Every pod group's members by (namespace, name) (``framework.PodGroups``); ``assumed`` is
    the cache."""

    def __init__(self, assumed: AssumedPods | None = None) -> None:
        self._assumed = assumed or NoAssumedPods()
        self._groups: dict[tuple[str, str], GroupMembers] = {}

    def get(self, namespace: str, name: str) -> GroupMembers | None:
        return self._groups.get((namespace, name))

    def add(self, pod: Pod) -> None:
        if not pod.pod_group or pod.is_terminal:
            return
        key = (pod.namespace, pod.pod_group)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = GroupMembers(self._assumed)
        group.put(pod)

    def remove(self, pod: Pod) -> None:
        key = (pod.namespace, pod.pod_group)
        group = self._groups.get(key)
        if group is None:
            return
        group.drop(pod.uid)
        if not group.pods:
            del self._groups[key]

    def handler(self, inner: EventHandler[Pod], queue: ClusterEvents, *, wake_gangs: bool) -> MemberEvents:
        """The pod informer's ``inner`` handler, keeping the members first. ``wake_gangs``
        (GangScheduling): a new pending member is a cluster event for every queued pod, so a gang
        held at PreEnqueue re-checks its count, as upstream's handler does."""
        return MemberEvents(inner, self, queue, wake_gangs)


class MemberEvents:
    """Pod events: members updated before the scheduler's own handler sees the pod."""

    def __init__(
        self, inner: EventHandler[Pod], members: PodGroupMembers, queue: ClusterEvents, wake_gangs: bool
    ) -> None:
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
