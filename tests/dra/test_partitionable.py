"""Partitionable devices against the allocator: devices consuming a pool's shared counters."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.dra.allocator import Allocator, ClaimError, NodeFailure
from scheduler.dra.cel import SelectorCache
from scheduler.dra.claims import ClaimTracker
from scheduler.dra.model import SliceParser
from scheduler.testing import FakeLister
from scheduler.testing.dra import (
    DRIVER,
    allocated_view,
    claim,
    counter_slice,
    device,
    device_class,
    holding,
    partition,
    request,
    resource_slice,
)

GPU = device_class("gpu", f'device.driver == "{DRIVER}"')
HALF = 'device.attributes["gpu.example.com"].profile == "half"'
WHOLE = 'device.attributes["gpu.example.com"].profile == "whole"'

# The recorded pool: a counter set of 40Gi and three devices consuming it, in two slices.
COUNTERS = counter_slice("gpu-counters", {"gpu-0": {"memory": "40Gi"}}, pool="node-a", node="node-a")
PARTS = resource_slice(
    "gpu-devices",
    [
        partition("full", {"gpu-0": {"memory": "40Gi"}}, profile="whole"),
        partition("part-a", {"gpu-0": {"memory": "20Gi"}}, profile="half"),
        partition("part-b", {"gpu-0": {"memory": "20Gi"}}, profile="half"),
    ],
    node="node-a",
    count=2,
)
GPU_POOL = [COUNTERS, PARTS]


def allocate(
    claims: list[dict], slices: list[dict], held: Any = None, node: str = "node-a", labels: dict | None = None
) -> list[list[str]] | None:
    """Per claim, the devices allocated on ``node``; None when the claims do not fit."""
    view = held if held is not None else allocated_view()
    allocator = Allocator(SliceParser().index(slices), view, {"gpu": GPU}.get, SelectorCache(), claims)
    found = allocator.allocate(node, labels or {})
    if found is None:
        return None
    return [[r["device"] for r in a["devices"]["results"]] for a in found.results()]


def part(name: str = "c", selector: str = HALF, count: int = 1) -> dict:
    return claim(name, request("gpu", "gpu", selector, count=count))


def on(*names: str) -> tuple[tuple[str, str, str], ...]:
    return tuple((DRIVER, "node-a", n) for n in names)


CASES: list[tuple[str, dict[str, Any], list[list[str]] | None]] = [
    ("a part gets the first partition", dict(claims=[part()], slices=GPU_POOL), [["part-a"]]),
    (
        "the whole device fits an empty counter set",
        dict(claims=[part(selector=WHOLE)], slices=GPU_POOL),
        [["full"]],
    ),
    (
        "the whole device does not fit once a part is allocated",
        dict(claims=[part(selector=WHOLE)], slices=GPU_POOL, held=allocated_view(holding(*on("part-a")))),
        None,
    ),
    (
        "the next part is the second partition",
        dict(claims=[part()], slices=GPU_POOL, held=allocated_view(holding(*on("part-a")))),
        [["part-b"]],
    ),
    (
        "two parts fill the counter set: no third",
        dict(claims=[part()], slices=GPU_POOL, held=allocated_view(holding(*on("part-a", "part-b")))),
        None,
    ),
    ("one claim takes both parts", dict(claims=[part(count=2)], slices=GPU_POOL), [["part-a", "part-b"]]),
    (
        "the search counts its own choices: whole then a part does not fit",
        dict(claims=[part("w", WHOLE), part("p")], slices=GPU_POOL),
        None,
    ),
    ("without its counter slice the pool is incomplete", dict(claims=[part()], slices=[PARTS]), None),
    ("another node has no device of the pool", dict(claims=[part()], slices=GPU_POOL, node="node-b"), None),
]


@pytest.mark.parametrize(("case", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_partitions(case: str, kwargs: dict[str, Any], expected: list[list[str]] | None) -> None:
    assert allocate(**kwargs) == expected


def test_any_device_backtracks_from_the_whole_device_to_two_parts() -> None:
    # the first solution tried gives "x" the whole device; "y" then finds no counters and the
    # search takes part-a for "x" instead: upstream's first complete solution
    assert allocate([part("x", "true"), part("y", "true")], GPU_POOL) == [["part-a"], ["part-b"]]
    assert allocate([part("x", "true")], GPU_POOL) == [["full"]]


def test_counters_spread_over_two_slices() -> None:
    # two counter slices (one set each) and one device slice consuming from both sets
    pool = [
        counter_slice("c-0", {"gpu-0": {"memory": "40Gi"}}, pool="p", node="node-a", count=3),
        counter_slice("c-1", {"gpu-1": {"memory": "40Gi"}}, pool="p", node="node-a", count=3),
        resource_slice(
            "devices",
            [
                partition("gpu-0-full", {"gpu-0": {"memory": "40Gi"}}, profile="whole"),
                partition("gpu-1-full", {"gpu-1": {"memory": "40Gi"}}, profile="whole"),
                partition("gpu-0-half", {"gpu-0": {"memory": "20Gi"}}, profile="half"),
                partition("gpu-1-half", {"gpu-1": {"memory": "20Gi"}}, profile="half"),
            ],
            node="node-a",
            pool="p",
            count=3,
        ),
    ]
    assert allocate([part(selector=WHOLE, count=2)], pool) == [["gpu-0-full", "gpu-1-full"]]
    held = allocated_view(holding((DRIVER, "p", "gpu-0-half")))
    assert allocate([part(selector=WHOLE)], pool, held) == [["gpu-1-full"]]
    assert allocate([part(selector=WHOLE, count=2)], pool, held) is None
    assert allocate([part(count=2)], pool, held) is None  # gpu-0-half is taken: one half is left
    assert allocate([part()], pool, held) == [["gpu-1-half"]]
    # with one counter slice missing the pool is incomplete: nothing from it
    assert allocate([part(selector=WHOLE)], [pool[0], pool[2]]) is None


def test_counters_exhausted_by_assumed_claims() -> None:
    # allocations decided at Reserve but not written yet hold their counters at once
    lister = FakeLister([part("first"), part("second")])
    tracker = ClaimTracker(lister)
    reserved = holding(*on("part-a"))
    tracker.reserve({**part("first"), "status": reserved["status"]})
    assert allocate([part(selector=WHOLE)], GPU_POOL, tracker.allocated_devices()) is None
    assert allocate([part()], GPU_POOL, tracker.allocated_devices()) == [["part-b"]]
    tracker.reserve({**part("second"), "status": holding(*on("part-b"))["status"]})
    assert allocate([part()], GPU_POOL, tracker.allocated_devices()) is None
    tracker.restore("default/first")
    tracker.restore("default/second")
    assert allocate([part(selector=WHOLE)], GPU_POOL, tracker.allocated_devices()) == [["full"]]


def test_counters_left_are_kept_until_the_pools_allocations_change() -> None:
    index = SliceParser().index(GPU_POOL)
    pool = (DRIVER, "node-a")
    claims = FakeLister()
    tracker = ClaimTracker(claims)
    first = index.available_counters(pool, 1, tracker.allocated_devices())
    assert first == ({("gpu-0", "memory"): 40 * 2**30}, False)
    # the next cycle, nothing changed: the same answer, not computed again
    assert index.available_counters(pool, 1, tracker.allocated_devices()) is first
    claims.put(holding(*on("part-a")))
    taken = index.available_counters(pool, 1, tracker.allocated_devices())
    assert taken == ({("gpu-0", "memory"): 20 * 2**30}, False)
    # more allocated than the set holds (e.g. the counters shrank): below zero
    claims.put(holding(*on("full")))
    overdrawn = index.available_counters(pool, 1, tracker.allocated_devices())
    assert overdrawn == ({("gpu-0", "memory"): -20 * 2**30}, True)
    # another tracker's allocations are not this one's
    assert index.available_counters(pool, 1, allocated_view()) == first


def test_a_pool_overdrawn_by_its_allocations_fits_no_device_consuming_counters() -> None:
    # upstream compares every counter of the pool: one below zero refuses every partition
    pool = [
        counter_slice("c", {"a": {"m": "1"}, "b": {"m": "1"}}, pool="node-a", node="node-a"),
        resource_slice(
            "d",
            [
                partition("a-0", {"a": {"m": "1"}}),
                partition("a-1", {"a": {"m": "1"}}),
                partition("b-0", {"b": {"m": "1"}}),
            ],
            node="node-a",
            count=2,
        ),
    ]
    assert allocate([part("c", "true")], pool, allocated_view(holding(*on("a-0")))) == [["b-0"]]
    assert allocate([part("c", "true")], pool, allocated_view(holding(*on("a-0", "a-1")))) is None


def test_devices_on_other_nodes_consume_the_shared_counters() -> None:
    # one counter set for the whole pool, devices selecting their node each
    counters = counter_slice("shared", {"fabric": {"links": "2"}}, pool="fabric", count=2)
    per_device = resource_slice(
        "links",
        [
            {**partition("link-a", {"fabric": {"links": "1"}}), "nodeName": "node-a"},
            {**partition("link-b", {"fabric": {"links": "1"}}), "nodeName": "node-b"},
            {**partition("link-any", {"fabric": {"links": "1"}}), "allNodes": True},
        ],
        pool="fabric",
        count=2,
    )
    per_device["spec"]["perDeviceNodeSelection"] = True
    slices = [counters, per_device]
    assert allocate([part("c", "true")], slices) == [["link-a"]]
    assert allocate([part("c", "true", count=2)], slices, node="node-b") == [["link-b", "link-any"]]
    # link-b on node-b and link-any hold both links: nothing is left for node-a
    held = allocated_view(holding((DRIVER, "fabric", "link-b"), (DRIVER, "fabric", "link-any")))
    assert allocate([part("c", "true")], slices, held) is None


def test_a_per_device_node_gets_its_node_in_the_result() -> None:
    per_device = resource_slice("links", [{**device("link-a"), "nodeName": "node-a"}], pool="fabric")
    per_device["spec"]["perDeviceNodeSelection"] = True
    view = allocated_view()
    allocator = Allocator(
        SliceParser().index([per_device]), view, {"gpu": GPU}.get, SelectorCache(), [part("c", "true")]
    )
    found = allocator.allocate("node-a", {})
    assert found is not None
    assert found.results()[0]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
        ]
    }


@pytest.mark.parametrize(
    ("slices", "reason"),
    [
        (
            [
                counter_slice("c", {"gpu-0": {"memory": "40Gi"}}, pool="node-a", node="node-a"),
                resource_slice("d", [partition("x", {"gpu-9": {"memory": "1Gi"}})], node="node-a", count=2),
            ],
            "counter set gpu-9 not found",
        ),
        (
            [
                counter_slice("c", {"gpu-0": {"memory": "40Gi"}}, pool="node-a", node="node-a"),
                resource_slice("d", [partition("x", {"gpu-0": {"cores": "1"}})], node="node-a", count=2),
            ],
            "counter cores not found in counter set gpu-0",
        ),
        (
            [
                counter_slice("c", {"gpu-0": {"memory": "40Gi"}}, pool="node-a", node="node-a", count=3),
                counter_slice("c2", {"gpu-0": {"memory": "40Gi"}}, pool="node-a", node="node-a", count=3),
                resource_slice("d", [partition("x", {"gpu-0": {"memory": "1Gi"}})], node="node-a", count=3),
            ],
            "duplicate counter set name gpu-0",
        ),
    ],
)
def test_a_pool_with_bad_counters_is_invalid(slices: list[dict], reason: str) -> None:
    [pool] = SliceParser().index(slices).pools_for("node-a", {})
    assert pool.invalid == reason
    with pytest.raises(NodeFailure, match="invalid resource pools were encountered"):
        allocate([part("c", "true")], slices)


def test_a_counter_slice_of_another_nodes_pool_counts_on_every_node() -> None:
    # as upstream, counter slices serve every node: a pool of node-a being updated (its device
    # slice missing) makes an All request fail on node-b too
    counters = counter_slice("c", {"gpu-0": {"memory": "40Gi"}}, pool="node-a", node="node-a")
    everywhere = resource_slice("plain", [{"name": "d0", "attributes": {}}], pool="plain", all_nodes=True)
    with pytest.raises(
        ClaimError, match=r"resource pool gpu\.example\.com/node-a is currently being updated"
    ):
        allocate([claim("c", request(mode="All"))], [counters, everywhere], node="node-b")
    assert allocate([claim("c")], [counters, everywhere], node="node-b") == [["d0"]]


def test_a_tainted_partition_keeps_its_counters_for_the_rest_of_the_search() -> None:
    # upstream takes the counters before looking at taints and does not give them back when the
    # taint then refuses the device: the parts after it find the set full on that node
    tainted = {
        **partition("full", {"gpu-0": {"memory": "40Gi"}}),
        "taints": [{"key": "k", "effect": "NoSchedule"}],
    }
    parts = resource_slice(
        "gpu-devices",
        [tainted, partition("part-a", {"gpu-0": {"memory": "20Gi"}})],
        node="node-a",
        count=2,
    )
    assert allocate([part("c", "true")], [COUNTERS, parts]) is None
    untainted = resource_slice(
        "gpu-devices",
        [partition("part-a", {"gpu-0": {"memory": "20Gi"}}), tainted],
        node="node-a",
        count=2,
    )
    assert allocate([part("c", "true")], [COUNTERS, untainted]) == [["part-a"]]
