"""Which pods on one node must go for the preemptor to fit there (upstream's SelectVictimsOnNode)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.api import Pod
from scheduler.framework import CycleState, NodeInfo, PluginsRunner, Status, Victims
from scheduler.plugins.defaultpreemption.pdb import Budget, split_by_violation

NO_VICTIMS = "No preemption victims found for incoming pod"
# A pod without a start time counts as started now: the least important among equals.
_NOT_STARTED = "9999-12-31T23:59:59Z"


def start_time(pod: Pod) -> str:
    """When the pod started (``status.startTime``), as an RFC 3339 string that sorts in time
    order; a pod that has not started counts as starting now, i.e. last, as upstream treats it."""
    return pod.start_time or _NOT_STARTED


def importance(pod: Pod) -> tuple[int, str]:
    """Sort key, most important first: higher priority, then the longer-running pod."""
    return (-pod.priority, start_time(pod))


def select_victims(
    runner: PluginsRunner,
    state: CycleState,
    pod: Pod,
    info: NodeInfo,
    budgets: Sequence[Budget],
    extensions: bool = True,
    fits: Callable[[NodeInfo], bool] | None = None,
) -> tuple[Victims | None, Status | None]:
    """The fewest, least important lower-priority pods whose removal lets ``pod`` fit on ``info``.

    ``info`` is the caller's copy and is changed, and so is ``state`` unless ``extensions`` is
    False (the caller knows no PreFilter extension is active, so none is called). All
    lower-priority pods are removed first; if the pod fits then, they are added back one at a
    time (PDB-protected ones first, most important first) and kept whenever the pod still fits,
    as ``fits`` tells when given (a cheaper check the caller knows to agree with the filters
    once they passed on this node) or else the filters.
    """
    potential = [p for p in info.pods.values() if p.priority < pod.priority]

    def remove(victim: Pod) -> Status | None:
        info.remove_pod(victim.uid)
        if not extensions:
            return None
        return runner.run_pre_filter_extension_remove_pod(state, pod, victim, info)

    def add(victim: Pod) -> Status | None:
        info.add_pod(victim)
        if not extensions:
            return None
        return runner.run_pre_filter_extension_add_pod(state, pod, victim, info)

    for victim in potential:
        if (status := remove(victim)) is not None:
            return None, status
    if not potential:
        return None, Status.unresolvable(NO_VICTIMS)
    # Preemption does not try to satisfy affinity to the pods it would remove (as upstream).
    if (status := runner.run_filter_plugins_with_nominated_pods(state, pod, info)) is not None:
        return None, status

    potential.sort(key=importance)
    violating, non_violating = split_by_violation(potential, budgets)
    victims: list[Pod] = []

    def still_fits() -> bool:
        if fits is not None:
            return fits(info)
        return runner.run_filter_plugins_with_nominated_pods(state, pod, info) is None

    def reprieve(candidate: Pod) -> tuple[bool, Status | None]:
        if (status := add(candidate)) is not None:
            return False, status
        if still_fits():
            return True, None
        victims.append(candidate)
        return False, remove(candidate)

    num_violations = 0
    for candidate in violating:
        kept, status = reprieve(candidate)
        if status is not None:
            return None, status
        num_violations += not kept
    for candidate in non_violating:
        _, status = reprieve(candidate)
        if status is not None:
            return None, status
    if violating and non_violating:
        victims.sort(key=importance)
    return Victims(victims, num_violations), None
