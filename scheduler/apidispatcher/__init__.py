"""The scheduler's asynchronous writes to the API server (kube-scheduler's APIDispatcher).

- ``dispatcher``: the queue: one call per object, coalesced, relevance-ordered, retried, bounded.
- ``pod_status``: the pod status patch call and ``PodStatusUpdates``, the scheduler's way in.
- ``events``: the Event recorder (series aggregation), on a dispatcher of its own.
"""

from scheduler.apidispatcher.dispatcher import APICall, APIDispatcher, CallMetrics
from scheduler.apidispatcher.events import NORMAL, WARNING, EventRecorder
from scheduler.apidispatcher.pod_status import RELEVANCES, PodStatusPatchCall, PodStatusUpdates

__all__ = [
    "NORMAL",
    "RELEVANCES",
    "WARNING",
    "APICall",
    "APIDispatcher",
    "CallMetrics",
    "EventRecorder",
    "PodStatusPatchCall",
    "PodStatusUpdates",
]
