"""Metric names, types, labels and buckets as kube-scheduler v1.36 exposes them."""

from __future__ import annotations

import platform
import random

import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler import __version__
from scheduler.metrics import AsyncAPICallMetrics, SchedulerMetrics, attempts_label, exponential_buckets


def families(metrics: SchedulerMetrics) -> dict[str, object]:
    body, content_type = metrics.render()
    assert content_type.startswith("text/plain; version=0.0.4")
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


def touch_every_metric(m: SchedulerMetrics) -> None:
    """Give every labelled metric one child so it shows up in the exposition."""
    m.observe_attempt("scheduled", "p", 0.01)
    m.observe_algorithm(0.002)
    m.event_handling_duration.labels("PodAdd").observe(0.0002)
    m.observe_preemption(2)
    m.set_pending(1, 2, 3, 4)
    m.observe_pod_scheduled(1, 0.5)
    m.observe_extension_point("Filter", "Success", "p", 0.001)
    m.observe_plugin("NodeResourcesFit", "Filter", "Success", 0.00002)
    m.queueing_hint_execution_duration.labels("NodeAffinity", "NodeAdd", "Queue").observe(0.00001)
    m.incoming_pod("active", "PodAdd")
    m.permit_wait_duration.labels("Success").observe(0.001)
    m.set_cache_size(3, 10, 1)
    m.unschedulable_pods.labels("NodeResourcesFit", "p").set(1)
    m.plugin_evaluation_total.labels("NodeResourcesFit", "Filter", "p").inc()
    m.set_leader("pyscheduler", True)
    m.batch_attempt("p", "hint_used")
    m.batch_flushed("p", "expired")
    m.observe_node_hint(True, "p", 0.00002)
    m.observe_store_results("p", 0.00002)
    m.resource_claim_created("success")
    m.binding_conditions_waited("p", "success", 1.5, ["gpu.example.com"], ["gpu.example.com"])


# (exposed family name, type, label names, bucket bounds or None)
EXPECTED = [
    ("scheduler_schedule_attempts", "counter", {"result", "profile"}, None),
    ("scheduler_scheduling_attempt_duration_seconds", "histogram", {"result", "profile"}, (0.001, 2, 15)),
    ("scheduler_scheduling_algorithm_duration_seconds", "histogram", set(), (0.001, 2, 15)),
    ("scheduler_event_handling_duration_seconds", "histogram", {"event"}, (0.0001, 2, 12)),
    ("scheduler_preemption_victims", "histogram", set(), (1, 2, 7)),
    ("scheduler_preemption_attempts", "counter", set(), None),
    ("scheduler_pending_pods", "gauge", {"queue"}, None),
    ("scheduler_pod_scheduling_sli_duration_seconds", "histogram", {"attempts"}, (0.01, 2, 20)),
    ("scheduler_pod_scheduling_attempts", "histogram", set(), (1, 2, 5)),
    (
        "scheduler_framework_extension_point_duration_seconds",
        "histogram",
        {"extension_point", "status", "profile"},
        (0.0001, 2, 12),
    ),
    (
        "scheduler_plugin_execution_duration_seconds",
        "histogram",
        {"plugin", "extension_point", "status"},
        (0.00001, 1.5, 20),
    ),
    (
        "scheduler_queueing_hint_execution_duration_seconds",
        "histogram",
        {"plugin", "event", "hint"},
        (0.00001, 1.5, 20),
    ),
    ("scheduler_queue_incoming_pods", "counter", {"queue", "event"}, None),
    ("scheduler_permit_wait_duration_seconds", "histogram", {"result"}, (0.001, 2, 15)),
    ("scheduler_cache_size", "gauge", {"type"}, None),
    ("scheduler_unschedulable_pods", "gauge", {"plugin", "profile"}, None),
    ("scheduler_plugin_evaluation", "counter", {"plugin", "extension_point", "profile"}, None),
    ("scheduler_batch_attempts", "counter", {"profile", "result"}, None),
    ("scheduler_batch_cache_flushed", "counter", {"profile", "reason"}, None),
    ("scheduler_get_node_hint_duration_seconds", "histogram", {"hinted", "profile"}, (0.00001, 2, 12)),
    ("scheduler_store_schedule_results_duration_seconds", "histogram", {"profile"}, (0.00001, 2, 12)),
    ("scheduler_resourceclaim_creates", "counter", {"status"}, None),
    ("scheduler_dra_bindingconditions_allocations", "counter", {"profile", "driver", "status"}, None),
    (
        "scheduler_dra_bindingconditions_wait_duration_seconds",
        "histogram",
        {"profile", "driver", "status"},
        (0.1, 2, 14),
    ),
    ("leader_election_master_status", "gauge", {"name"}, None),
    ("pyscheduler_build_info", "gauge", {"version", "python"}, None),
]


@pytest.fixture
def exposed() -> dict[str, object]:
    m = SchedulerMetrics()
    touch_every_metric(m)
    return families(m)


@pytest.mark.parametrize(("name", "kind", "labels", "buckets"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_every_upstream_metric_is_exposed_with_its_type_labels_and_buckets(
    exposed, name, kind, labels, buckets
):
    family = exposed[name]
    assert family.type == kind
    sample = family.samples[0]
    assert set(sample.labels) - {"le"} == labels
    if buckets is not None:
        bounds = [float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")][
            : buckets[2] + 1
        ]
        assert bounds[:-1] == pytest.approx(exponential_buckets(*buckets))
        assert bounds[-1] == float("inf")


def test_nothing_else_is_exposed_and_no_created_series(exposed):
    assert set(exposed) == {e[0] for e in EXPECTED}
    body = SchedulerMetrics().render()[0].decode()
    assert "_created" not in body


def test_counters_keep_their_total_suffix_on_the_wire():
    m = SchedulerMetrics()
    m.observe_attempt("error", "p", 0.1)
    body = m.render()[0].decode()
    assert 'scheduler_schedule_attempts_total{profile="p",result="error"} 1.0' in body


def test_build_info_names_the_version_and_python():
    (sample,) = families(SchedulerMetrics())["pyscheduler_build_info"].samples
    assert sample.labels == {"version": __version__, "python": platform.python_version()}
    assert sample.value == 1


def test_observe_attempt_counts_and_times_by_result_and_profile():
    m = SchedulerMetrics()
    m.observe_attempt("unschedulable", "a", 0.003)
    m.observe_attempt("unschedulable", "a", 0.005)
    m.observe_attempt("scheduled", "b", 0.001)
    assert (
        m.registry.get_sample_value(
            "scheduler_schedule_attempts_total", {"result": "unschedulable", "profile": "a"}
        )
        == 2
    )
    assert (
        m.registry.get_sample_value(
            "scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "b"}
        )
        == 1
    )
    assert m.registry.get_sample_value(
        "scheduler_scheduling_attempt_duration_seconds_sum", {"result": "unschedulable", "profile": "a"}
    ) == pytest.approx(0.008)


@pytest.mark.parametrize(("attempts", "label"), [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")])
def test_sli_attempt_labels_are_capped_at_15(attempts, label):
    assert attempts_label(attempts) == label


def test_pod_scheduled_without_a_queue_timestamp_skips_the_sli():
    m = SchedulerMetrics()
    m.observe_pod_scheduled(3, None)
    fams = families(m)
    assert fams["scheduler_pod_scheduling_sli_duration_seconds"].samples == []
    count = [s for s in fams["scheduler_pod_scheduling_attempts"].samples if s.name.endswith("_count")]
    assert count[0].value == 1


def test_pending_and_cache_gauges_cover_every_queue_and_type():
    m = SchedulerMetrics()
    m.set_pending(active=1, backoff=2, unschedulable=3, gated=4)
    m.set_cache_size(nodes=5, pods=6, assumed_pods=7)
    fams = families(m)
    assert {s.labels["queue"]: s.value for s in fams["scheduler_pending_pods"].samples} == {
        "active": 1,
        "backoff": 2,
        "unschedulable": 3,
        "gated": 4,
    }
    assert {s.labels["type"]: s.value for s in fams["scheduler_cache_size"].samples} == {
        "nodes": 5,
        "pods": 6,
        "assumed_pods": 7,
    }


def test_pending_and_cache_gauges_follow_changes_after_repeated_reports():
    m = SchedulerMetrics()
    for active in (3, 3, 0, 0, 2):  # reports that repeat the counts write nothing new
        m.set_pending(active=active, backoff=0, unschedulable=1, gated=0)
    for pods in (4, 4, 5):
        m.set_cache_size(nodes=1, pods=pods, assumed_pods=0)
    fams = families(m)
    pending = {s.labels["queue"]: s.value for s in fams["scheduler_pending_pods"].samples}
    assert pending == {"active": 2, "backoff": 0, "unschedulable": 1, "gated": 0}
    sizes = {s.labels["type"]: s.value for s in fams["scheduler_cache_size"].samples}
    assert sizes == {"nodes": 1, "pods": 5, "assumed_pods": 0}


def test_preemption_without_a_candidate_counts_the_attempt_only():
    m = SchedulerMetrics()
    m.observe_preemption(None)
    m.observe_preemption(3)
    assert m.registry.get_sample_value("scheduler_preemption_attempts_total") == 2
    assert m.registry.get_sample_value("scheduler_preemption_victims_sum") == 3


def test_leader_gauge_switches_per_lease_name():
    m = SchedulerMetrics()
    m.set_leader("pyscheduler", True)
    m.set_leader("other", False)
    samples = {s.labels["name"]: s.value for s in families(m)["leader_election_master_status"].samples}
    assert samples == {"pyscheduler": 1, "other": 0}


@pytest.mark.parametrize(("percent", "low", "high"), [(0, 0, 0), (10, 50, 150), (100, 1000, 1000)])
def test_plugin_sampling_follows_the_sample_percent(percent, low, high):
    m = SchedulerMetrics(sample_percent=percent, rng=random.Random(7))
    sampled = sum(m.should_sample_plugins() for _ in range(1000))
    assert low <= sampled <= high


def test_two_instances_do_not_share_a_registry():
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.observe_attempt("scheduled", "p", 0.1)
    assert (
        b.registry.get_sample_value(
            "scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "p"}
        )
        is None
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((1, 2, 3), [1, 2, 4]),
        ((0.001, 2, 2), [0.001, 0.002]),
        ((0.00001, 1.5, 3), [0.00001, 0.000015, 0.0000225]),
    ],
)
def test_exponential_buckets_multiply_from_the_start(args, expected):
    assert exponential_buckets(*args) == pytest.approx(expected)


@pytest.mark.parametrize("args", [(0, 2, 3), (1, 1, 3), (1, 2, 0)])
def test_exponential_buckets_refuse_degenerate_shapes(args):
    with pytest.raises(ValueError):
        exponential_buckets(*args)


def test_a_binding_conditions_wait_is_timed_per_device_and_counted_per_conditioned_device():
    m = SchedulerMetrics()
    # two devices of two drivers were allocated; only the fabric one had binding conditions
    m.binding_conditions_waited(
        "p", "timeout", 600.0, ["gpu.example.com", "fabric.example.com"], ["fabric.example.com"]
    )
    got = {
        (s.name, s.labels.get("driver"), s.labels.get("status")): s.value
        for f in families(m).values()
        for s in f.samples
        if s.name.startswith("scheduler_dra_bindingconditions") and not s.name.endswith("_bucket")
    }
    assert got == {
        ("scheduler_dra_bindingconditions_wait_duration_seconds_count", "gpu.example.com", "timeout"): 1.0,
        ("scheduler_dra_bindingconditions_wait_duration_seconds_sum", "gpu.example.com", "timeout"): 600.0,
        ("scheduler_dra_bindingconditions_wait_duration_seconds_count", "fabric.example.com", "timeout"): 1.0,
        ("scheduler_dra_bindingconditions_wait_duration_seconds_sum", "fabric.example.com", "timeout"): 600.0,
        ("scheduler_dra_bindingconditions_allocations_total", "fabric.example.com", "timeout"): 1.0,
    }


def test_the_api_dispatchers_metrics_have_upstreams_names_labels_and_buckets():
    m = SchedulerMetrics()
    calls = AsyncAPICallMetrics(m.registry)
    calls.executed("pod_status_patch", "success", 0.003)
    calls.pending("pod_status_patch", +2)
    calls.pending("pod_status_patch", -1)
    fams = families(m)
    executions = fams["scheduler_async_api_call_execution"]
    assert executions.type == "counter"
    assert executions.samples[0].labels == {"call_type": "pod_status_patch", "result": "success"}
    duration = fams["scheduler_async_api_call_execution_duration_seconds"]
    bounds = [float(s.labels["le"]) for s in duration.samples if s.name.endswith("_bucket")]
    assert bounds[:-1] == pytest.approx(exponential_buckets(0.001, 2, 15))
    [pending] = fams["scheduler_pending_async_api_calls"].samples
    assert (pending.labels, pending.value) == ({"call_type": "pod_status_patch"}, 1)
