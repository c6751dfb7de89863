"""Preempting for a Coscheduling member only when its whole group could then be placed
(pyscheduler's guard; scheduler-plugins v0.35 lets DefaultPreemption evict for any member).

A member of a scheduling.x-k8s.io PodGroup that still needs other members placed preempts only
when, on the cluster as it would be after this preemption, the group's pending members can take
the room left, each by evicting pods of lower priority than itself. The check models what
NodeResourcesFit counts (CPU, memory, ephemeral storage, pod slots) and places the members first
fit; the members' own cycles still run every filter. When it fails, DefaultPreemption evicts
nothing and Coscheduling's PostFilter rejects the group as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api import Pod
from scheduler.framework import Handle, NodeInfo, Status
from scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL, PodGroups
from scheduler.plugins.coscheduling.podgroup import PODGROUPS as COSCHEDULING_PODGROUPS
from scheduler.plugins.defaultpreemption.candidates import Candidate


def group_refusal(handle: Handle, pod: Pod, best: Candidate, nodes: Sequence[NodeInfo]) -> Status | None:
    """Why preempting ``best`` for Coscheduling member ``pod`` would not get its group placed;
    None when it would, or when ``pod`` is no such member."""
    name = pod.labels.get(POD_GROUP_LABEL, "")
    if not name:
        return None
    try:
        group = PodGroups(handle.lister(COSCHEDULING_PODGROUPS)).get(f"{pod.namespace}/{name}")
        pods = handle.lister("pods").with_label(pod.namespace, POD_GROUP_LABEL, name)
    except KeyError:  # Coscheduling is not in use: nothing to guard
        return None
    if group is None or group.min_member <= 1:
        return None
    placed = sum(
        1
        for info in nodes
        for other in info.pods.values()
        if not other.is_terminating
        and other.namespace == pod.namespace
        and other.labels.get(POD_GROUP_LABEL) == name
    )
    needed = group.min_member - placed - 1
    if needed <= 0:  # this member completes the group
        return None
    pending = sorted(
        (
            p
            for p in pods
            if isinstance(p, Pod) and p.uid != pod.uid and not p.node_name and not p.is_terminating
        ),
        key=lambda p: -p.priority,
    )
    room = _Room(nodes, best, pod)
    fitted = 0
    for sibling in pending:
        if fitted == needed:
            break
        fitted += room.place(sibling)
    if fitted >= needed:
        return None
    return Status.unschedulable(
        f"not eligible: PodGroup {pod.namespace}/{name} cannot be placed even with preemption, "
        f"{placed + 1 + fitted} of its minMember {group.min_member} pods would fit"
    )


class _Room:
    """Each node's pods after the preemption (victims gone, the preemptor on its node), by
    priority: a member may take what pods of lower priority than its own use. What the pods of
    at least a given priority use on a node is summed once and kept up to date as members are
    counted in, so each member costs one pass over the nodes."""

    def __init__(self, nodes: Sequence[NodeInfo], best: Candidate, pod: Pod) -> None:
        victims = {v.uid for v in best.victims.pods}
        self._nodes = list(nodes)
        self._pods: list[list[Pod]] = []
        for info in self._nodes:
            kept = [p for p in info.pods.values() if not p.is_terminating and p.uid not in victims]
            if info.name == best.node_name:
                kept.append(pod)
            self._pods.append(kept)
        # priority -> per node [cpu, memory, ephemeral storage, pods] of the pods at or above it
        self._staying: dict[int, list[list[int]]] = {}

    def _used(self, priority: int) -> list[list[int]]:
        used = self._staying.get(priority)
        if used is None:
            used = self._staying[priority] = [[0, 0, 0, 0] for _ in self._nodes]
            for index, pods in enumerate(self._pods):
                for other in pods:
                    if other.priority >= priority:
                        _add(used[index], other)
        return used

    def place(self, member: Pod) -> int:
        """1 when ``member`` fits somewhere (it is then counted there), else 0."""
        want = member.requests
        used = self._used(member.priority)
        for index, info in enumerate(self._nodes):
            alloc = info.node.allocatable
            cpu, memory, storage, count = used[index]
            if (
                count + 1 <= alloc.allowed_pod_number
                and want.milli_cpu + cpu <= alloc.milli_cpu
                and want.memory + memory <= alloc.memory
                and want.ephemeral_storage + storage <= alloc.ephemeral_storage
            ):
                self._pods[index].append(member)
                for threshold, totals in self._staying.items():
                    if member.priority >= threshold:
                        _add(totals[index], member)
                return 1
        return 0


def _add(totals: list[int], pod: Pod) -> None:
    requests = pod.requests
    totals[0] += requests.milli_cpu
    totals[1] += requests.memory
    totals[2] += requests.ephemeral_storage
    totals[3] += 1
