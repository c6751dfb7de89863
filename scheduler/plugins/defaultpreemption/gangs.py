"""Victims that belong to a gang are evicted with their whole group, or not at all (pyscheduler's rule).

Upstream v1.36 with WorkloadAwarePreemption off picks victims pod by pod, so a preemptor may evict
one member of a running gang and leave the rest holding their nodes with nothing to do. Here a
candidate whose victims would leave a gang (a scheduling.k8s.io/v1alpha2 PodGroup with a gang
policy, or a scheduling.x-k8s.io PodGroup) with some members running but fewer than its minimum
takes the group's other members as victims too, on whatever node they run; a candidate for which
one of those members is not of lower priority than the preemptor is refused. Groups the scheduler
does not watch, and pods outside any group, are victims one by one as upstream.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api import Pod
from scheduler.framework import Handle, NodeInfo, ObjectLister, Status, Victims
from scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL, PodGroups
from scheduler.plugins.coscheduling.podgroup import PODGROUPS as COSCHEDULING_PODGROUPS
from scheduler.plugins.defaultpreemption.candidates import Candidate
from scheduler.plugins.defaultpreemption.pdb import Budget, split_by_violation
from scheduler.plugins.defaultpreemption.victims import importance
from scheduler.plugins.gangscheduling.podgroups import PODGROUPS as WORKLOAD_PODGROUPS
from scheduler.plugins.gangscheduling.podgroups import gang_min_count

WHOLE_GANG_REFUSED = "preemption would leave a pod group with fewer than its minimum pods running"


def _lister(handle: Handle, kind: str) -> ObjectLister | None:
    try:
        return handle.lister(kind)
    except KeyError:  # the scheduler does not watch that kind: no such gangs here
        return None


def _may_be_gang_member(pod: Pod) -> bool:
    return bool(pod.pod_group) or POD_GROUP_LABEL in pod.labels


class Gangs:
    """The gangs of one preemption attempt: each victim's group and minimum, and the group's
    running members, read from the snapshot once."""

    def __init__(self, handle: Handle, nodes: Sequence[NodeInfo]) -> None:
        self._workload = _lister(handle, WORKLOAD_PODGROUPS)
        coscheduling = _lister(handle, COSCHEDULING_PODGROUPS)
        self._coscheduling = PodGroups(coscheduling) if coscheduling is not None else None
        self._nodes = nodes
        self._members: dict[str, list[Pod]] | None = None

    def gang_of(self, pod: Pod) -> tuple[str, int] | None:
        """(the group's key, its minimum) for a gang member; None for any other pod."""
        if pod.pod_group and self._workload is not None:
            group = self._workload.get(f"{pod.namespace}/{pod.pod_group}")
            minimum = gang_min_count(group) if group is not None else None
            if minimum:
                return f"{WORKLOAD_PODGROUPS}/{pod.namespace}/{pod.pod_group}", minimum
        name = pod.labels.get(POD_GROUP_LABEL, "")
        if name and self._coscheduling is not None:
            cosched = self._coscheduling.get(f"{pod.namespace}/{name}")
            if cosched is not None and cosched.min_member > 0:
                return f"{COSCHEDULING_PODGROUPS}/{pod.namespace}/{name}", cosched.min_member
        return None

    def members(self, key: str) -> list[Pod]:
        """The group's members on nodes and not being deleted."""
        if self._members is None:
            self._members = {}
            for info in self._nodes:
                for pod in info.pods.values():
                    if pod.is_terminating or not _may_be_gang_member(pod):
                        continue
                    gang = self.gang_of(pod)
                    if gang is not None:
                        self._members.setdefault(gang[0], []).append(pod)
        return self._members.get(key, [])


def whole_gangs(
    handle: Handle,
    pod: Pod,
    candidates: list[Candidate],
    nodes: Sequence[NodeInfo],
    budgets: Sequence[Budget],
) -> tuple[list[Candidate], dict[str, Status]]:
    """The candidates with their victims' gangs taken whole, and the status of those refused.
    Candidates without a gang member among their victims are returned as they are."""
    if not any(_may_be_gang_member(v) for c in candidates for v in c.victims.pods):
        return candidates, {}
    gangs = Gangs(handle, nodes)
    kept: list[Candidate] = []
    refused: dict[str, Status] = {}
    for candidate in candidates:
        widened = _widen(gangs, pod, candidate.victims, budgets)
        if widened is None:
            refused[candidate.node_name] = Status.unschedulable(WHOLE_GANG_REFUSED)
        else:
            kept.append(
                candidate if widened is candidate.victims else Candidate(candidate.node_name, widened)
            )
    return kept, refused


def _widen(gangs: Gangs, pod: Pod, victims: Victims, budgets: Sequence[Budget]) -> Victims | None:
    """``victims`` plus the rest of each gang they would leave short; None when one of those
    members may not be preempted by ``pod``."""
    chosen = {v.uid for v in victims.pods}
    extra: list[Pod] = []
    seen: set[str] = set()
    for victim in victims.pods:
        gang = gangs.gang_of(victim) if _may_be_gang_member(victim) else None
        if gang is None or gang[0] in seen:
            continue
        key, minimum = gang
        seen.add(key)
        members = gangs.members(key)
        rest = [m for m in members if m.uid not in chosen]
        if not rest or len(rest) >= minimum:  # nothing left running, or still enough
            continue
        if any(m.priority >= pod.priority for m in rest):
            return None
        extra += rest
        chosen.update(m.uid for m in rest)
    if not extra:
        return victims
    violating, _ = split_by_violation(extra, budgets)
    return Victims(
        sorted([*victims.pods, *extra], key=importance), victims.num_pdb_violations + len(violating)
    )
