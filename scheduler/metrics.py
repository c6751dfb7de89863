"""Prometheus metrics with kube-scheduler v1.36's names, types, labels and buckets.

Dashboards and alerts written for kube-scheduler work unchanged against pyscheduler, so every
metric here mirrors ``pkg/scheduler/metrics`` (plus client-go's ``leader_election_master_status``).
Each :class:`SchedulerMetrics` owns its own registry: several schedulers can share one process
(tests, simulations) without colliding in prometheus-client's global registry.
"""

from __future__ import annotations

import platform
import random
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.exposition import choose_encoder

from scheduler import __version__

SUBSYSTEM = "scheduler"

# kube-scheduler exposes no ``*_created`` series; without them our exposition matches its series set.
# (prometheus-client only offers this switch process-wide.)
disable_created_metrics()

# Percentage of scheduling cycles whose per-plugin durations are recorded (upstream's
# pluginMetricsSamplePercent): timing every plugin call costs more than the plugins themselves.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

# Attempt counts at or above this share one label value, to keep the SLI histogram's cardinality bounded.
MAX_ATTEMPTS_LABEL = 15

# Values of the ``result`` label (the last only of the pod-group metrics).
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
WAITING_ON_PREEMPTION = "waiting_on_preemption"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Bucket bounds start, start*factor, ... computed by repeated multiplication like Go's, so the
    ``le`` labels print exactly as kube-scheduler's do."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential buckets need count >= 1, start > 0 and factor > 1")
    bounds = []
    bound = start
    for _ in range(count):
        bounds.append(bound)
        bound *= factor
    return bounds


class LabelledChildren:
    """A metric's labelled children by label values, fetched once each.

    prometheus-client's ``labels()`` validates and locks on every call; the runtime asks for
    the same few children on every cycle, so they are remembered here (none is ever removed).
    """

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: Counter | Gauge | Histogram) -> None:
        self._metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._metric.labels(*values)
        return child


def attempts_label(attempts: int) -> str:
    """The ``attempts`` label of the SLI histogram: the count, capped at ``15+``."""
    return f"{MAX_ATTEMPTS_LABEL}+" if attempts >= MAX_ATTEMPTS_LABEL else str(attempts)


class PodGroupMetrics:
    """scheduler_podgroup_schedule_attempts_total, ..._scheduling_attempt_duration_seconds and
    ..._scheduling_algorithm_duration_seconds, and pyscheduler_pending_podgroups. One per
    registry (``SchedulerMetrics.pod_groups``), registered only once pod groups are scheduled: by
    the pod-group cycle (GenericWorkload on, as upstream) or by Coscheduling."""

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


class SchedulerMetrics:
    """All metrics of one scheduler process, registered in :attr:`registry`.

    The attributes are plain prometheus-client metrics for callers that need them directly; the
    ``observe_*`` / ``set_*`` helpers cover the calls the runtime makes on every cycle.
    """

    __slots__ = (
        "_attempt_duration",
        "_attempts",
        "_batch_attempts",
        "_batch_flushed",
        "_cache_size",
        "_extension_point_duration",
        "_incoming",
        "_last_cache_size",
        "_last_pending",
        "_node_hint_duration",
        "_pending",
        "_plugin_duration",
        "_pod_groups",
        "_resource_claim_creates",
        "_rng",
        "_sli_duration",
        "_store_results_duration",
        "batch_attempts",
        "batch_cache_flushed",
        "build_info",
        "cache_size",
        "dra_binding_conditions_allocations",
        "dra_binding_conditions_wait_duration",
        "event_handling_duration",
        "framework_extension_point_duration",
        "get_node_hint_duration",
        "leader_election_master_status",
        "pending_pods",
        "permit_wait_duration",
        "plugin_evaluation_total",
        "plugin_execution_duration",
        "pod_scheduling_attempts",
        "pod_scheduling_sli_duration",
        "preemption_attempts",
        "preemption_victims",
        "queue_incoming_pods",
        "queueing_hint_execution_duration",
        "registry",
        "resource_claim_creates",
        "sample_percent",
        "schedule_attempts",
        "scheduling_algorithm_duration",
        "scheduling_attempt_duration",
        "store_schedule_results_duration",
        "unschedulable_pods",
    )

    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT,
        rng: random.Random | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._pod_groups: PodGroupMetrics | None = None
        self.sample_percent = sample_percent
        self._rng = rng if rng is not None else random.Random()
        reg = self.registry
        ms_buckets = exponential_buckets(0.001, 2, 15)  # 1ms .. ~16s
        tenth_ms_buckets = exponential_buckets(0.0001, 2, 12)  # 0.1ms .. ~200ms
        fine_buckets = exponential_buckets(0.00001, 1.5, 20)  # 10us .. ~22ms, plugin calls are short

        self.schedule_attempts = Counter(
            "schedule_attempts_total",
            "Scheduling attempts by result: 'unschedulable' when no node fits the pod, "
            "'error' when the scheduler itself failed.",
            ["result", "profile"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.scheduling_attempt_duration = Histogram(
            "scheduling_attempt_duration_seconds",
            "Latency of one scheduling attempt in seconds (algorithm plus binding).",
            ["result", "profile"],
            namespace=SUBSYSTEM,
            buckets=ms_buckets,
            registry=reg,
        )
        self.scheduling_algorithm_duration = Histogram(
            "scheduling_algorithm_duration_seconds",
            "Latency of the scheduling algorithm (filter and score) in seconds.",
            namespace=SUBSYSTEM,
            buckets=ms_buckets,
            registry=reg,
        )
        self.event_handling_duration = Histogram(
            "event_handling_duration_seconds",
            "Latency of handling one cluster event in seconds.",
            ["event"],
            namespace=SUBSYSTEM,
            buckets=tenth_ms_buckets,
            registry=reg,
        )
        self.preemption_victims = Histogram(
            "preemption_victims",
            "Victims selected by one preemption of a single pod.",
            namespace=SUBSYSTEM,
            buckets=exponential_buckets(1, 2, 7),
            registry=reg,
        )
        # OpportunisticBatching (KEP-5598)
        ten_us_buckets = exponential_buckets(0.00001, 2, 12)  # 10us .. ~20ms
        self.batch_attempts = Counter(
            "batch_attempts_total",
            "Counts of results when we attempt to use batching.",
            ["profile", "result"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.batch_cache_flushed = Counter(
            "batch_cache_flushed_total",
            "Counts of cache flushes by reason.",
            ["profile", "reason"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.get_node_hint_duration = Histogram(
            "get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            ["hinted", "profile"],
            namespace=SUBSYSTEM,
            buckets=ten_us_buckets,
            registry=reg,
        )
        self.store_schedule_results_duration = Histogram(
            "store_schedule_results_duration_seconds",
            "Latency for storing a cycle's results for the batch.",
            ["profile"],
            namespace=SUBSYSTEM,
            buckets=ten_us_buckets,
            registry=reg,
        )
        self.preemption_attempts = Counter(
            "preemption_attempts_total",
            "Preemption attempts since the scheduler started.",
            namespace=SUBSYSTEM,
            registry=reg,
        )
        # DRAExtendedResource: the special claims DynamicResources creates at PreBind
        self.resource_claim_creates = Counter(
            "resourceclaim_creates_total",
            "Number of ResourceClaims creation requests within scheduler",
            ["status"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        # DRADeviceBindingConditions: PreBind's wait for devices that must be attached first
        self.dra_binding_conditions_allocations = Counter(
            "dra_bindingconditions_allocations_total",
            "Number of allocations using devices with BindingConditions, counted per driver per "
            "scheduling attempt",
            ["profile", "driver", "status"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.dra_binding_conditions_wait_duration = Histogram(
            "dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
            ["profile", "driver", "status"],
            namespace=SUBSYSTEM,
            buckets=exponential_buckets(0.1, 2, 14),  # 0.1s .. ~27min
            registry=reg,
        )
        self.pending_pods = Gauge(
            "pending_pods",
            "Pods waiting in the scheduling queue, by sub-queue: 'active' (activeQ), 'backoff' "
            "(backoffQ), 'unschedulable' (tried and failed, waiting for a cluster event), 'gated' "
            "(never tried because a PreEnqueue plugin holds them).",
            ["queue"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.pod_scheduling_sli_duration = Histogram(
            "pod_scheduling_sli_duration_seconds",
            "End-to-end latency of scheduling a pod, from entering the queue to being scheduled, "
            "across all of its attempts.",
            ["attempts"],
            namespace=SUBSYSTEM,
            buckets=exponential_buckets(0.01, 2, 20),  # 10ms .. ~88min
            registry=reg,
        )
        self.pod_scheduling_attempts = Histogram(
            "pod_scheduling_attempts",
            "Attempts it took to schedule a pod successfully.",
            namespace=SUBSYSTEM,
            buckets=exponential_buckets(1, 2, 5),
            registry=reg,
        )
        self.framework_extension_point_duration = Histogram(
            "framework_extension_point_duration_seconds",
            "Latency of running all plugins of one extension point.",
            ["extension_point", "status", "profile"],
            namespace=SUBSYSTEM,
            buckets=tenth_ms_buckets,
            registry=reg,
        )
        self.plugin_execution_duration = Histogram(
            "plugin_execution_duration_seconds",
            "Latency of one plugin at one extension point (sampled in a fraction of cycles).",
            ["plugin", "extension_point", "status"],
            namespace=SUBSYSTEM,
            buckets=fine_buckets,
            registry=reg,
        )
        self.queueing_hint_execution_duration = Histogram(
            "queueing_hint_execution_duration_seconds",
            "Latency of one plugin's queueing hint function.",
            ["plugin", "event", "hint"],
            namespace=SUBSYSTEM,
            buckets=fine_buckets,
            registry=reg,
        )
        self.queue_incoming_pods = Counter(
            "queue_incoming_pods_total",
            "Pods added to the scheduling queues, by queue and by the event that moved them.",
            ["queue", "event"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.permit_wait_duration = Histogram(
            "permit_wait_duration_seconds",
            "Time pods spent waiting at Permit.",
            ["result"],
            namespace=SUBSYSTEM,
            buckets=ms_buckets,
            registry=reg,
        )
        self.cache_size = Gauge(
            "cache_size",
            "Nodes, pods and assumed (binding in flight) pods held in the scheduler cache.",
            ["type"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.unschedulable_pods = Gauge(
            "unschedulable_pods",
            "Unschedulable pods by the plugin that rejected them; a pod counts once for every "
            "rejecting plugin, so only per-plugin values are meaningful.",
            ["plugin", "profile"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.plugin_evaluation_total = Counter(
            "plugin_evaluation_total",
            "Times each plugin ran at PreFilter, Filter, PreScore or Score.",
            ["plugin", "extension_point", "profile"],
            namespace=SUBSYSTEM,
            registry=reg,
        )
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "1 while this process holds the named lease (leader), 0 while it is a standby; "
            "aggregate by 'name'.",
            ["name"],
            registry=reg,
        )
        self.build_info = Gauge(
            "pyscheduler_build_info",
            "Constant 1, labelled with the pyscheduler version and the Python it runs on.",
            ["version", "python"],
            registry=reg,
        )
        self.build_info.labels(version=__version__, python=platform.python_version()).set(1)
        self._attempts = LabelledChildren(self.schedule_attempts)
        self._attempt_duration = LabelledChildren(self.scheduling_attempt_duration)
        self._sli_duration = LabelledChildren(self.pod_scheduling_sli_duration)
        self._extension_point_duration = LabelledChildren(self.framework_extension_point_duration)
        self._plugin_duration = LabelledChildren(self.plugin_execution_duration)
        self._incoming = LabelledChildren(self.queue_incoming_pods)
        self._pending = LabelledChildren(self.pending_pods)
        # the gauges' last values: the queue and the cache report after every change, and most
        # changes (a pod moving through a cycle) leave the counts where they were
        self._last_pending: tuple[int, int, int, int] | None = None
        self._last_cache_size: tuple[int, int, int] | None = None
        self._batch_attempts = LabelledChildren(self.batch_attempts)
        self._batch_flushed = LabelledChildren(self.batch_cache_flushed)
        self._node_hint_duration = LabelledChildren(self.get_node_hint_duration)
        self._store_results_duration = LabelledChildren(self.store_schedule_results_duration)
        self._cache_size = LabelledChildren(self.cache_size)
        self._resource_claim_creates = LabelledChildren(self.resource_claim_creates)

    # -------------------------------------------------------------------------- per-cycle helpers

    def should_sample_plugins(self) -> bool:
        """Whether this cycle records per-plugin durations (decide once per cycle)."""
        return self._rng.randrange(100) < self.sample_percent

    def observe_attempt(self, result: str, profile: str, duration: float) -> None:
        """One scheduling attempt finished with ``result`` (scheduled, unschedulable or error)."""
        self._attempts(result, profile).inc()
        self._attempt_duration(result, profile).observe(duration)

    def observe_algorithm(self, duration: float) -> None:
        self.scheduling_algorithm_duration.observe(duration)

    def observe_pod_scheduled(self, attempts: int, sli_duration: float | None) -> None:
        """A pod was bound after ``attempts`` attempts, ``sli_duration`` after it first entered the
        queue (None when unknown, as upstream skips the SLI then)."""
        self.pod_scheduling_attempts.observe(attempts)
        if sli_duration is not None:
            self._sli_duration(attempts_label(attempts)).observe(sli_duration)

    def observe_extension_point(
        self, extension_point: str, status: str, profile: str, duration: float
    ) -> None:
        self._extension_point_duration(extension_point, status, profile).observe(duration)

    def observe_plugin(self, plugin: str, extension_point: str, status: str, duration: float) -> None:
        self._plugin_duration(plugin, extension_point, status).observe(duration)

    def observe_preemption(self, victims: int | None) -> None:
        """One preemption attempt; ``victims`` is the chosen candidate's victim count, None when no
        candidate was found (upstream observes the histogram only when one was chosen)."""
        self.preemption_attempts.inc()
        if victims is not None:
            self.preemption_victims.observe(victims)

    def pod_groups(self) -> PodGroupMetrics:
        """The pod-group metrics, registered once, on first use: by the pod-group cycle
        (GenericWorkload on, as upstream) or by a profile's Coscheduling."""
        if self._pod_groups is None:
            self._pod_groups = PodGroupMetrics(self.registry)
        return self._pod_groups

    def observe_preemption_victims(self, victims: int) -> None:
        """Victims of an attempt counted earlier, evicted now (a pod group's deferred preemption)."""
        self.preemption_victims.observe(victims)

    def resource_claim_created(self, status: str) -> None:
        """One ResourceClaim creation request: ``success`` or ``failure``."""
        self._resource_claim_creates(status).inc()

    def binding_conditions_waited(
        self,
        profile: str,
        status: str,
        seconds: float,
        allocated_drivers: Iterable[str],
        conditioned_drivers: Iterable[str],
    ) -> None:
        """PreBind's wait for binding conditions ended (``status``: success, failure, timeout or error)
        after ``seconds``: as upstream, the wait is observed once per allocated device (by its
        driver) and counted once per device that has binding conditions."""
        for driver in allocated_drivers:
            self.dra_binding_conditions_wait_duration.labels(profile, driver, status).observe(seconds)
        for driver in conditioned_drivers:
            self.dra_binding_conditions_allocations.labels(profile, driver, status).inc()

    def batch_attempt(self, profile: str, result: str) -> None:
        """One use of the batch: ``no_hint``, ``hint_used`` or ``hint_not_used``."""
        self._batch_attempts(profile, result).inc()

    def batch_flushed(self, profile: str, reason: str) -> None:
        self._batch_flushed(profile, reason).inc()

    def observe_node_hint(self, hinted: bool, profile: str, duration: float) -> None:
        self._node_hint_duration("hint" if hinted else "no_hint", profile).observe(duration)

    def observe_store_results(self, profile: str, duration: float) -> None:
        self._store_results_duration(profile).observe(duration)

    def incoming_pod(self, queue: str, event: str) -> None:
        self._incoming(queue, event).inc()

    def set_pending(self, active: int, backoff: int, unschedulable: int, gated: int) -> None:
        values = (active, backoff, unschedulable, gated)
        if values == self._last_pending:
            return
        self._last_pending = values
        pending = self._pending
        pending("active").set(active)
        pending("backoff").set(backoff)
        pending("unschedulable").set(unschedulable)
        pending("gated").set(gated)

    def set_cache_size(self, nodes: int, pods: int, assumed_pods: int) -> None:
        values = (nodes, pods, assumed_pods)
        if values == self._last_cache_size:
            return
        self._last_cache_size = values
        size = self._cache_size
        size("nodes").set(nodes)
        size("pods").set(pods)
        size("assumed_pods").set(assumed_pods)

    def set_leader(self, name: str, leading: bool) -> None:
        self.leader_election_master_status.labels(name).set(1 if leading else 0)

    # ------------------------------------------------------------------------------- exposition

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The exposition body and its content type, negotiated from an HTTP Accept header
        (Prometheus text format unless OpenMetrics is asked for)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


# ------------------------------------------------------------------ the APIDispatcher's metrics


class AsyncAPICallMetrics:
    """The APIDispatcher's calls (``call_type``: pod_status_patch; ``result``: success, error).

    Upstream registers these only with SchedulerAsyncAPICalls on, the only case in which its
    dispatcher runs; pyscheduler always writes pod status through its dispatcher, so they are
    always there.
    """

    __slots__ = ("execution_duration", "executions", "pending_calls")

    def __init__(self, registry: CollectorRegistry) -> None:
        self.executions = Counter(
            "async_api_call_execution_total",
            "API calls the asynchronous dispatcher has sent, by call type and result.",
            ["call_type", "result"],
            namespace=SUBSYSTEM,
            registry=registry,
        )
        self.execution_duration = Histogram(
            "async_api_call_execution_duration_seconds",
            "Seconds one API call of the asynchronous dispatcher took, by call type and result.",
            ["call_type", "result"],
            namespace=SUBSYSTEM,
            buckets=exponential_buckets(0.001, 2, 15),
            registry=registry,
        )
        self.pending_calls = Gauge(
            "pending_async_api_calls",
            "API calls waiting in the asynchronous dispatcher's queue (not yet sent).",
            ["call_type"],
            namespace=SUBSYSTEM,
            registry=registry,
        )

    def executed(self, call_type: str, result: str, seconds: float) -> None:
        self.executions.labels(call_type, result).inc()
        self.execution_duration.labels(call_type, result).observe(seconds)

    def pending(self, call_type: str, change: int) -> None:
        self.pending_calls.labels(call_type).inc(change)
