"""The scheduling queue: activeQ, backoffQ, the unschedulable pool, gated pods, nominations."""

from scheduler.queue.events import event_label, pod_update_events
from scheduler.queue.policy import ProfilesPolicy
from scheduler.queue.scheduling_queue import QueuePolicy, SchedulingQueue, backoff_duration

__all__ = [
    "ProfilesPolicy",
    "QueuePolicy",
    "SchedulingQueue",
    "backoff_duration",
    "event_label",
    "pod_update_events",
]
