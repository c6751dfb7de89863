"""The pure parts of extended resources backed by DRA: which class serves a resource, the special
claim's requests and container mapping (upstream's cases), and finding an earlier special claim."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.dra.claims import ClaimTracker
from scheduler.dra.extended import (
    CLAIM_ANNOTATION,
    DEVICE_CLASS_PREFIX,
    IN_MEMORY_NAME,
    ClassMaps,
    class_map,
    in_memory_claim,
    is_dra_extended_resource_name,
    is_special_for,
    requests_and_mappings,
)
from scheduler.testing import FakeLister, make_pod

GPU = "example.com/gpu"
INIT = "example.com/init"


def device_class(name: str, resource: str | None = None, created: str = "2026-01-01T00:00:00Z") -> dict:
    spec: dict[str, Any] = {"extendedResourceName": resource} if resource else {}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def container(
    name: str, requests: dict[str, str] | None = None, restart: str | None = None
) -> dict[str, Any]:
    raw: dict[str, Any] = {"name": name, "image": "pause", "resources": {"requests": requests or {}}}
    if restart:
        raw["restartPolicy"] = restart
    return raw


def names(classes: dict) -> dict[str, str]:
    return {resource: cls["metadata"]["name"] for resource, cls in classes.items()}


def test_a_class_serves_its_explicit_and_its_implicit_name() -> None:
    classes = class_map([device_class("gpu", GPU), device_class("fpga")])
    assert names(classes) == {
        GPU: "gpu",
        DEVICE_CLASS_PREFIX + "gpu": "gpu",
        DEVICE_CLASS_PREFIX + "fpga": "fpga",
    }


@pytest.mark.parametrize(
    "classes, winner",
    [
        (
            [
                device_class("old", GPU, "2026-01-01T00:00:00Z"),
                device_class("new", GPU, "2026-02-01T00:00:00Z"),
            ],
            "new",
        ),
        (
            [
                device_class("new", GPU, "2026-02-01T00:00:00Z"),
                device_class("old", GPU, "2026-01-01T00:00:00Z"),
            ],
            "new",
        ),
        ([device_class("b", GPU), device_class("a", GPU)], "a"),  # same time: the smaller name
    ],
)
def test_of_classes_naming_the_same_resource_the_newest_wins(classes: list, winner: str) -> None:
    assert class_map(classes)[GPU]["metadata"]["name"] == winner


@pytest.mark.parametrize(
    "name, expected",
    [
        (GPU, True),
        (DEVICE_CLASS_PREFIX + "gpu", True),
        ("cpu", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/gpu", False),
        ("requests.example.com/gpu", False),
    ],
)
def test_dra_extended_resource_names(name: str, expected: bool) -> None:
    assert is_dra_extended_resource_name(name) is expected


CLASSES = class_map(
    [device_class("class", GPU), device_class("classInit", INIT), device_class("class1", GPU + "1")]
)


def exact(name: str, class_name: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count},
    }


def short(request: dict[str, Any]) -> tuple[str, str, int]:
    return request["name"], request["exactly"]["deviceClassName"], request["exactly"]["count"]


@pytest.mark.parametrize(
    "containers, init, resources, want",
    [
        # one container, one resource served; the other resource is not asked of DRA
        ([container("c", {GPU: "1", GPU + "1": "2"})], [], [GPU], [("container-0-request-0", "class", 1)]),
        (
            [container("c", {GPU: "1", GPU + "1": "2"})],
            [],
            [GPU, GPU + "1"],
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
        ),
        (
            [container("a", {GPU: "1"}), container("b", {GPU + "1": "2"})],
            [],
            [GPU, GPU + "1"],
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
        ),
        # an init container runs before the others: its own request
        (
            [container("c", {GPU: "1"})],
            [container("i", {INIT: "2"})],
            [GPU, INIT],
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
        ),
        # two init containers share the largest of their requests
        (
            [container("c", {GPU: "1"})],
            [container("i0", {INIT: "1"}), container("i1", {INIT: "2"})],
            [GPU, INIT],
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
        ),
        # an init container before a sidecar reuses the sidecar's devices
        (
            [container("c", {GPU: "1"})],
            [
                container("i0", {INIT: "1"}),
                container("side", {INIT: "1"}, "Always"),
                container("i2", {INIT: "2"}),
            ],
            [GPU, INIT],
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
        ),
        # the request is named after the resource's place among all the container's requests
        (
            [container("c", {"cpu": "1", "memory": "1Gi", GPU: "2"})],
            [],
            [GPU],
            [("container-0-request-1", "class", 2)],
        ),
        # a fractional request is no number of devices
        ([container("c", {GPU: "500m"})], [], [GPU], []),
    ],
)
def test_the_special_claims_requests(containers: list, init: list, resources: list, want: list) -> None:
    pod = make_pod("p", containers=containers, init_containers=init)
    requests, _ = requests_and_mappings(pod, resources, CLASSES)
    assert [short(r) for r in requests] == want


def test_the_container_mapping_points_init_containers_at_the_shared_request() -> None:
    pod = make_pod(
        "p",
        containers=[container("c", {GPU: "1"})],
        init_containers=[container("i0", {INIT: "1"}), container("i1", {INIT: "2"})],
    )
    requests, mappings = requests_and_mappings(pod, [GPU, INIT], CLASSES)
    assert requests == [
        exact("container-1-request-0", "classInit", 2),
        exact("container-2-request-0", "class", 1),
    ]
    assert mappings == [  # by resource name, then long-lived containers first
        {"containerName": "c", "resourceName": GPU, "requestName": "container-2-request-0"},
        {"containerName": "i0", "resourceName": INIT, "requestName": "container-1-request-0"},
        {"containerName": "i1", "resourceName": INIT, "requestName": "container-1-request-0"},
    ]


def test_a_sidecar_and_the_init_container_before_it_map_to_the_sidecars_request() -> None:
    pod = make_pod(
        "p",
        containers=[container("c")],
        init_containers=[container("i0", {INIT: "1"}), container("side", {INIT: "1"}, "Always")],
    )
    requests, mappings = requests_and_mappings(pod, [INIT], CLASSES)
    assert requests == [exact("container-1-request-0", "classInit", 1)]
    assert mappings == [
        {"containerName": "side", "resourceName": INIT, "requestName": "container-1-request-0"},
        {"containerName": "i0", "resourceName": INIT, "requestName": "container-1-request-0"},
    ]


def test_the_in_memory_claim_and_finding_the_one_an_earlier_cycle_created() -> None:
    pod = make_pod("p", uid="uid-p")
    special = in_memory_claim(pod)
    meta = special["metadata"]
    assert (meta["name"], meta["generateName"], meta["annotations"]) == (
        IN_MEMORY_NAME,
        "p-extended-resources-",
        {CLAIM_ANNOTATION: "true"},
    )
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}
    ]
    assert meta["uid"] != in_memory_claim(pod)["metadata"]["uid"]  # a temporary uid per cycle
    created = {"metadata": {**meta, "name": "p-extended-resources-abcde"}}
    other_pod = {"metadata": {**meta, "ownerReferences": [{**meta["ownerReferences"][0], "uid": "other"}]}}
    not_special = {"metadata": {**meta, "annotations": {}}}
    assert is_special_for(pod, created)
    assert not is_special_for(pod, other_pod) and not is_special_for(pod, not_special)


def test_the_tracker_finds_a_pods_special_claim_as_claims_come_and_go() -> None:
    pod = make_pod("p", uid="uid-p")
    claims = FakeLister()
    tracker = ClaimTracker(claims)
    special = {**in_memory_claim(pod), "metadata": {**in_memory_claim(pod)["metadata"], "name": "p-er-1"}}
    claims.put(special)
    claims.put({"metadata": {"name": "plain", "namespace": "default"}})
    tracker.allocated_devices()
    assert tracker.special_claim("uid-p") is special
    updated = copy.deepcopy(special)
    claims.put(updated)
    tracker.allocated_devices()
    assert tracker.special_claim("uid-p") is updated
    claims.delete("default/p-er-1")
    tracker.allocated_devices()
    assert tracker.special_claim("uid-p") is None


def test_class_maps_are_rebuilt_only_when_a_class_object_changes():
    gpu = {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/gpu"}}
    maps = ClassMaps()
    first = maps.of([gpu])
    assert first["example.com/gpu"] is gpu
    assert maps.of([gpu]) is first  # the informer's same objects: the same map
    renamed = {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/accel"}}
    changed = maps.of([renamed])  # an update replaces the object
    assert "example.com/gpu" not in changed and changed["example.com/accel"] is renamed
    assert maps.of([]) == {}
