"""What an operator does: run `helm test`, fail over, uninstall. Chart mode only."""

from __future__ import annotations

import pytest
from conftest import Scheduler, install_chart, uninstall_chart
from kube import Kubectl, pod, pod_spec, run, unique, wait_for


def test_helm_test_hook_passes(scheduler: Scheduler, helm_binary: str) -> None:
    argv = [helm_binary, "test", scheduler.release, "--namespace", scheduler.namespace, "--timeout", "3m"]
    run(argv, timeout=200)


def test_deleting_the_leader_hands_the_lease_to_a_standby_that_schedules(
    scheduler: Scheduler, helm_binary: str, kubectl: Kubectl, namespace: str, pytestconfig: pytest.Config
) -> None:
    if len(scheduler.pods()) < 2:
        pytest.skip("failover needs at least two scheduler replicas")
    old = wait_for("a leader", scheduler.leader)
    kubectl("delete", "pod", old, "-n", scheduler.namespace, "--wait=false")

    def new_leader() -> str | None:
        leader = scheduler.leader()
        return leader if leader != old else None

    wait_for("another replica to take the Lease", new_leader)
    name = unique("after-failover")
    kubectl.apply(pod(name, namespace, pod_spec(scheduler.name, pytestconfig.getoption("--pod-image"))))
    wait_for("the new leader to bind a pod", lambda: kubectl.node_of(name, namespace))
    wait_for("the Deployment to replace the deleted leader", lambda: len(scheduler.pods()) >= 2 or None)


def test_uninstall_leaves_nothing_behind(scheduler: Scheduler, helm_binary: str, kubectl: Kubectl) -> None:
    # A release of its own (own namespace, schedulerName and Lease), so the shared one stays up.
    gone = Scheduler(kubectl, "chart", unique("pyscheduler-gone"), unique("pyscheduler-gone"), "gone")
    image = scheduler.pods()[0]["spec"]["containers"][0]["image"]
    install_chart(helm_binary, gone, image, "--set", "replicas=1")
    try:
        wait_for("the lone replica to take the Lease", gone.leader, timeout=120)
        uninstall_chart(helm_binary, gone)
        selector = "app.kubernetes.io/instance=gone"
        kinds = "all,configmaps,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets"

        def leftovers() -> list[str]:
            left = kubectl("get", kinds, "-n", gone.namespace, "-l", selector, "-o", "name").split()
            left += kubectl("get", "clusterroles,clusterrolebindings", "-l", selector, "-o", "name").split()
            if kubectl.get_or_none("lease", gone.lease, gone.namespace) is not None:
                left.append(f"lease/{gone.lease}")
            return left

        wait_for("every object of the release to be deleted", lambda: not leftovers() or None, timeout=120)
        assert run([helm_binary, "list", "-n", gone.namespace, "-q"]).split() == []
    finally:
        kubectl("delete", "namespace", gone.namespace, "--wait=false", "--ignore-not-found")
