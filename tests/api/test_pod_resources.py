"""Pod requests as upstream's resource helpers compute them (component-helpers PodRequests and
the scheduler's PodInfo.CalculateResource / resourceAllocationScorer at v1.36 defaults)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import Resource, pod_resources
from scheduler.api.resources import DEFAULT_MEMORY_REQUEST

MI = 1024 * 1024


def container(name: str, requests: dict | None = None, limits: dict | None = None, **extra: Any) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "app", "resources": resources, **extra}


def sidecar(name: str, requests: dict) -> dict:
    return container(name, requests, restartPolicy="Always")


def status_of(name: str, actuated: dict | None, allocated: dict | None = None) -> dict:
    """A container status as the kubelet reports it during (or after) a resize."""
    status: dict[str, Any] = {"name": name}
    if actuated is not None:
        status["resources"] = {"requests": actuated}
    if allocated is not None:
        status["allocatedResources"] = allocated
    return status


def resize_pending(reason: str) -> dict:
    return {"type": "PodResizePending", "status": "True", "reason": reason}


def cpu_memory(resource: Resource) -> tuple[int, int]:
    return resource.milli_cpu, resource.memory


@pytest.mark.parametrize(
    ("case", "spec", "expected"),
    [
        (
            "regular containers add up",
            {"containers": [container("a", {"cpu": "1"}), container("b", {"cpu": "500m", "memory": "1Mi"})]},
            (1500, MI),
        ),
        (
            "limits stand in for missing requests",
            {"containers": [container("a", {}, {"cpu": "2"})]},
            (2000, 0),
        ),
        (
            "the larger of the init phase and the running phase counts",
            {"containers": [container("a", {"cpu": "1"})], "initContainers": [container("i", {"cpu": "3"})]},
            (3000, 0),
        ),
        (
            "a sidecar runs alongside later init containers and the regular ones",
            {
                "containers": [container("a", {"cpu": "1"})],
                "initContainers": [sidecar("s", {"cpu": "1"}), container("i", {"cpu": "2"})],
            },
            (3000, 0),
        ),
        (
            "pod-level cpu and memory replace the containers' sum",
            {
                "containers": [container("a", {"cpu": "1", "memory": "1Mi"})],
                "resources": {"requests": {"cpu": "3", "memory": "4Mi"}},
            },
            (3000, 4 * MI),
        ),
        (
            "pod-level requests replace only what they name",
            {
                "containers": [container("a", {"cpu": "1", "memory": "1Mi"})],
                "resources": {"requests": {"memory": "4Mi"}},
            },
            (1000, 4 * MI),
        ),
        (
            "overhead adds on after pod-level requests",
            {
                "containers": [container("a", {"cpu": "1"})],
                "resources": {"requests": {"cpu": "2"}},
                "overhead": {"cpu": "250m"},
            },
            (2250, 0),
        ),
    ],
)
def test_spec_requests(case: str, spec: dict, expected: tuple[int, int]) -> None:
    assert cpu_memory(pod_resources(spec).requests) == expected


def test_pod_level_hugepages_requests_replace_the_containers_sum() -> None:
    spec = {
        "containers": [container("a", {"hugepages-2Mi": "2Mi", "ephemeral-storage": "1Mi"})],
        "resources": {"requests": {"hugepages-2Mi": "8Mi", "ephemeral-storage": "5Mi"}},
    }
    requests = pod_resources(spec).requests
    # hugepages are a pod-level resource; ephemeral storage is not, so its pod-level value is ignored
    assert (requests.scalar["hugepages-2Mi"], requests.ephemeral_storage) == (8 * MI, MI)


@pytest.mark.parametrize(
    ("case", "actuated", "allocated", "conditions", "expected_cpu"),
    [
        ("a resize upward counts the new spec before the kubelet acts", {"cpu": "1"}, {"cpu": "1"}, [], 2000),
        (
            "a resize downward counts the old requests until the kubelet allocates the new ones",
            {"cpu": "3"},
            {"cpu": "3"},
            [],
            3000,
        ),
        (
            "the larger of actuated and allocated counts during a resize",
            {"cpu": "1"},
            {"cpu": "4"},
            [],
            4000,
        ),
        (
            "an infeasible resize counts only what the kubelet actuated or allocated",
            {"cpu": "1"},
            {"cpu": "1"},
            [resize_pending("Infeasible")],
            1000,
        ),
        (
            "a deferred resize still counts its spec",
            {"cpu": "1"},
            {"cpu": "1"},
            [resize_pending("Deferred")],
            2000,
        ),
        (
            "a container status without resources leaves the spec alone",
            None,
            {"cpu": "4"},
            [],
            2000,
        ),
    ],
)
def test_container_status_during_a_resize(
    case: str, actuated: dict | None, allocated: dict, conditions: list, expected_cpu: int
) -> None:
    spec = {"containers": [container("a", {"cpu": "2"})]}
    status = {"containerStatuses": [status_of("a", actuated, allocated)], "conditions": conditions}
    assert pod_resources(spec, status).requests.milli_cpu == expected_cpu


def test_only_sidecar_init_containers_follow_their_status() -> None:
    spec = {
        "containers": [container("a", {"cpu": "1"})],
        "initContainers": [container("i", {"cpu": "1"}), sidecar("s", {"cpu": "1"})],
    }
    status = {
        "initContainerStatuses": [status_of("i", {"cpu": "9"}, {"cpu": "9"}), status_of("s", {"cpu": "3"})],
    }
    # init phase max(i 1, s 3) = 3; running a 1 + s 3 = 4; the plain init container's status is ignored
    assert pod_resources(spec, status).requests.milli_cpu == 4000


def test_a_pod_level_resize_counts_the_pod_status_resources() -> None:
    spec = {"containers": [container("a")], "resources": {"requests": {"cpu": "1", "memory": "1Mi"}}}
    status = {
        "resources": {"requests": {"cpu": "2", "memory": "1Mi"}},
        "allocatedResources": {"memory": "3Mi"},
    }
    assert cpu_memory(pod_resources(spec, status).requests) == (2000, 3 * MI)


@pytest.mark.parametrize(
    ("case", "spec", "non_zero", "scoring"),
    [
        (
            "each container without cpu or memory requests counts the defaults",
            {"containers": [container("a", {"cpu": "1"}), container("b")]},
            (1100, 2 * DEFAULT_MEMORY_REQUEST),
            (1100, 2 * DEFAULT_MEMORY_REQUEST),
        ),
        (
            "an explicit zero request is not replaced by the default",
            {"containers": [container("a", {"cpu": "0", "memory": "0"})]},
            (0, 0),
            (0, 0),
        ),
        (
            # a node's total defaults cpu only when nothing in the pod states cpu (upstream's
            # getNonMissingContainerRequests); the scorers default every container without it
            "with pod-level requests a node counts defaults only for resources nothing states",
            {
                "containers": [container("a", {"cpu": "500m"}), container("b")],
                "resources": {"requests": {"memory": "1Mi"}},
            },
            (500, MI),
            (600, MI),
        ),
        (
            "with pod-level requests a resource nothing states still gets the default per container",
            {"containers": [container("a"), container("b")], "resources": {"requests": {"cpu": "1"}}},
            (1000, 2 * DEFAULT_MEMORY_REQUEST),
            (1000, 2 * DEFAULT_MEMORY_REQUEST),
        ),
    ],
)
def test_non_zero_requests(
    case: str, spec: dict, non_zero: tuple[int, int], scoring: tuple[int, int]
) -> None:
    resources = pod_resources(spec)
    assert (cpu_memory(resources.non_zero), cpu_memory(resources.scoring)) == (non_zero, scoring)
