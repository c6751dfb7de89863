"""Pod-group metrics with upstream's names, registered when pod groups are scheduled: by the pod-group
cycle (GenericWorkload on, as upstream) or by Coscheduling."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from scheduler.metrics import SUBSYSTEM, exponential_buckets

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
WAITING_ON_PREEMPTION = "waiting_on_preemption"
ERROR = "error"


class PodGroupMetrics:
    """scheduler_podgroup_schedule_attempts_total, ..._scheduling_attempt_duration_seconds and
    ..._scheduling_algorithm_duration_seconds, and pyscheduler_pending_podgroups. One per
    registry (``SchedulerMetrics.pod_groups``), shared by both gang APIs."""

    def __init__(self, registry: CollectorRegistry) -> None:
        buckets = exponential_buckets(0.001, 2, 15)
        self.attempts = Counter(
            "podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod "
            "group could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            namespace=SUBSYSTEM,
            registry=registry,
        )
        self.attempt_duration = Histogram(
            "podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            namespace=SUBSYSTEM,
            buckets=buckets,
            registry=registry,
        )
        # pyscheduler's own: upstream v1.36 has no count of groups waiting
        self.pending = Gauge(
            "pyscheduler_pending_podgroups",
            "Pod groups with pods waiting to be scheduled (attempted, not placed yet), by profile.",
            ["profile"],
            registry=registry,
        )
        self.algorithm_duration = Histogram(
            "podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            namespace=SUBSYSTEM,
            buckets=buckets,
            registry=registry,
        )

    def set_pending(self, profile: str, count: int) -> None:
        self.pending.labels(profile=profile).set(count)

    def observe_attempt(self, result: str, profile: str, duration: float) -> None:
        self.attempts.labels(result=result, profile=profile).inc()
        self.attempt_duration.labels(result=result, profile=profile).observe(duration)

    def observe_algorithm(self, duration: float) -> None:
        self.algorithm_duration.observe(duration)
