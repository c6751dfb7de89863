"""Cluster-event labels as upstream reports them, and the events a pod update amounts to.

Metric labels (``queue_incoming_pods{event}``) and logs use upstream's spelling: the resource
followed by the action (``NodeAdd``, ``AssignedPodDelete``, ``UnschedulablePodUpdate``) or a
queue-internal label (``ScheduleAttemptFailure``, ``BackoffComplete``, ...).
"""

from __future__ import annotations

from scheduler.api import Pod
from scheduler.framework import ActionType, ClusterEvent
from scheduler.framework.interface import ASSIGNED_POD, UNSCHEDULED_POD, WILDCARD

# Queue-internal event labels (upstream's framework constants).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"

# Wildcard events: they may move any pod, whatever plugins rejected it.
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, FORCE_ACTIVATE)

EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)

# Upstream names the pending-pod resource "UnschedulablePod" in labels.
_RESOURCE_LABELS = {UNSCHEDULED_POD: "UnschedulablePod"}
_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_OTHER: "Update",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}


def event_label(event: ClusterEvent) -> str:
    """``event.label`` if set, else resource + action, e.g. ``NodeAdd`` or ``UnschedulablePodUpdate``."""
    if event.label:
        return event.label
    action = _ACTION_LABELS.get(event.action)
    if action is None:
        action = "|".join(_ACTION_LABELS[flag] for flag in ActionType if flag in event.action)
    return _RESOURCE_LABELS.get(event.resource, event.resource) + action


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == WILDCARD and event.action == ActionType.ALL


def pod_update_events(old: Pod, new: Pod) -> list[ClusterEvent]:
    """What changed between two versions of a pod, as the cluster events plugins register for.

    Mirrors upstream's PodSchedulingPropertiesChange: label changes, request decreases, removed
    scheduling gates and added tolerations each make an event; anything else is a plain update.
    """
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if dict(old.labels) != dict(new.labels):
        actions.append(ActionType.UPDATE_POD_LABEL)
    if any(old.requests.get(name) > new.requests.get(name) for name in old.requests.names()):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if old.tolerations != new.tolerations:
        actions.append(ActionType.UPDATE_POD_TOLERATIONS)
    if old.resource_claim_statuses != new.resource_claim_statuses:
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    return [ClusterEvent(resource, action) for action in actions or [ActionType.UPDATE_OTHER]]
