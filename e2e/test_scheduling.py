"""What a user sees: pods that name the scheduler get placed, others are left alone, pods that
fit nowhere are reported the way kube-scheduler reports them."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Scheduler
from kube import Kubectl, condition, metric_names, pod, pod_spec, unique, wait_for


def events_for(kubectl: Kubectl, namespace: str, pod_name: str, reason: str) -> list[dict[str, Any]]:
    selector = f"involvedObject.kind=Pod,involvedObject.name={pod_name},reason={reason}"
    return kubectl.json("get", "events", "-n", namespace, "--field-selector", selector)["items"]


def reporter(event: dict[str, Any]) -> str:
    """Who reported an event: events.k8s.io's reportingController, or the core source."""
    return event.get("reportingComponent") or event.get("source", {}).get("component", "")


def test_scheduler_reports_ready(scheduler: Scheduler) -> None:
    if scheduler.installed:
        pods = scheduler.pods()
        assert pods, "the chart's Deployment has no pods"
        for each in pods:
            ready = condition(each, "Ready")
            assert ready and ready["status"] == "True", each["metadata"]["name"]
    # Open to anyone (--authorization-always-allow-paths), as the kubelet's probes need.
    assert scheduler.get_anonymous("/readyz").strip() == "ok"
    assert scheduler.get_anonymous("/healthz").strip() == "ok"


def test_deployment_with_our_scheduler_name_gets_every_pod_bound(
    scheduler: Scheduler, kubectl: Kubectl, namespace: str, pytestconfig: pytest.Config
) -> None:
    replicas, labels = 3, {"app": "e2e-placed"}
    template = {
        "metadata": {"labels": labels},
        "spec": pod_spec(scheduler.name, pytestconfig.getoption("--pod-image")),
    }
    kubectl.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "placed", "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
        }
    )

    def bound_pods() -> list[dict[str, Any]] | None:
        pods = kubectl.json("get", "pods", "-n", namespace, "-l", "app=e2e-placed")["items"]
        bound = [p for p in pods if p["spec"].get("nodeName")]
        return bound if len(bound) == replicas else None

    for each in wait_for(f"{replicas} pods bound", bound_pods):
        name, node = each["metadata"]["name"], each["spec"]["nodeName"]
        scheduled = condition(each, "PodScheduled")
        assert scheduled and scheduled["status"] == "True"
        (event,) = wait_for(
            f"the Scheduled event of {name}", lambda n=name: events_for(kubectl, namespace, n, "Scheduled")
        )
        assert reporter(event) == scheduler.name
        assert node in event["message"]
    if not pytestconfig.getoption("--no-kubelets"):
        kubectl("rollout", "status", "deployment/placed", "-n", namespace, "--timeout=120s", timeout=150)


def test_pod_for_another_scheduler_is_left_alone(
    scheduler: Scheduler, kubectl: Kubectl, namespace: str, pytestconfig: pytest.Config
) -> None:
    image = pytestconfig.getoption("--pod-image")
    other, ours = unique("other"), unique("ours")
    kubectl.apply(
        pod(other, namespace, pod_spec("no-such-scheduler", image)),
        pod(ours, namespace, pod_spec(scheduler.name, image)),
    )
    # Our pod being bound proves the scheduler has seen both (one watch stream, in order).
    wait_for("our pod bound", lambda: kubectl.node_of(ours, namespace))
    untouched = kubectl.json("get", "pod", other, "-n", namespace)
    assert not untouched["spec"].get("nodeName")
    assert condition(untouched, "PodScheduled") is None
    for reason in ("Scheduled", "FailedScheduling"):
        assert events_for(kubectl, namespace, other, reason) == []


def test_unschedulable_pod_gets_failed_scheduling_event_and_condition(
    scheduler: Scheduler, kubectl: Kubectl, namespace: str, pytestconfig: pytest.Config
) -> None:
    name = unique("nowhere")
    spec = pod_spec(scheduler.name, pytestconfig.getoption("--pod-image"))
    spec["nodeSelector"] = {"pyscheduler.e2e/no-such-label": "true"}
    kubectl.apply(pod(name, namespace, spec))

    def unschedulable() -> dict[str, Any] | None:
        found = condition(kubectl.json("get", "pod", name, "-n", namespace), "PodScheduled")
        return found if found and found["status"] == "False" else None

    scheduled = wait_for("PodScheduled=False", unschedulable)
    assert scheduled["reason"] == "Unschedulable"
    assert scheduled["message"].startswith("0/")
    events = wait_for(
        "a FailedScheduling event", lambda: events_for(kubectl, namespace, name, "FailedScheduling")
    )
    event = events[0]
    assert event["type"] == "Warning"
    assert reporter(event) == scheduler.name
    assert event["message"].startswith("0/")
    assert "didn't match Pod's node affinity/selector" in event["message"]


def test_metrics_are_served_with_upstream_names(scheduler: Scheduler) -> None:
    if not scheduler.token and not scheduler.plain_http:
        pytest.skip("--scheduler=external over HTTPS: pass --metrics-token to read /metrics")
    names = metric_names(scheduler.get("/metrics"))
    for expected in (
        "scheduler_schedule_attempts_total",
        "scheduler_pending_pods",
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "leader_election_master_status",
    ):
        assert expected in names
