"""The structured allocator, table-driven: which devices a set of claims gets on one node."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.dra.allocator import AllocationTimeout, Allocator, ClaimError, NodeFailure
from scheduler.dra.cel import SelectorCache
from scheduler.dra.model import SliceParser
from scheduler.testing.dra import (
    DRIVER,
    allocated_view,
    claim,
    device,
    device_class,
    first_available,
    holding,
    request,
    resource_slice,
)

GPU = device_class("gpu", f'device.driver == "{DRIVER}"')
BIG = 'device.attributes["gpu.example.com"].memory >= 32'


def allocate(
    claims: list[dict],
    slices: list[dict],
    classes: list[dict] = (GPU,),  # type: ignore[assignment]
    allocated: set[tuple[str, str, str]] = frozenset(),  # type: ignore[assignment]
    node: str = "node-a",
    labels: dict[str, str] | None = None,
) -> list[dict[str, Any]] | None:
    by_name = {c["metadata"]["name"]: c for c in classes}
    held = allocated_view(holding(*allocated)) if allocated else allocated_view()
    allocator = Allocator(SliceParser().index(slices), held, by_name.get, SelectorCache(), claims)
    found = allocator.allocate(node, labels or {})
    return None if found is None else found.results()


def picked(result: list[dict[str, Any]] | None) -> list[list[str]] | None:
    """Per claim, the devices allocated ("request:device")."""
    if result is None:
        return None
    return [[f"{r['request']}:{r['device']}" for r in a["devices"]["results"]] for a in result]


NODE_A = resource_slice("a", [device("gpu-0", memory=16), device("gpu-1", memory=40)], node="node-a")
NUMA = resource_slice(
    "numa",
    [device("d0", numa=0), device("d1", numa=1), device("d2", numa=0), device("d3", numa=1)],
    node="node-a",
)

CASES: list[tuple[str, dict[str, Any], list[list[str]] | None]] = [
    ("first device of the node", dict(claims=[claim("c")], slices=[NODE_A]), [["gpu:gpu-0"]]),
    (
        "selector picks the big one",
        dict(claims=[claim("c", request("gpu", "gpu", BIG))], slices=[NODE_A]),
        [["gpu:gpu-1"]],
    ),
    (
        "class selector applies too",
        dict(claims=[claim("c")], slices=[NODE_A], classes=[device_class("gpu", BIG)]),
        [["gpu:gpu-1"]],
    ),
    ("count 2", dict(claims=[claim("c", request(count=2))], slices=[NODE_A]), [["gpu:gpu-0", "gpu:gpu-1"]]),
    ("count 3 does not fit", dict(claims=[claim("c", request(count=3))], slices=[NODE_A]), None),
    (
        "All takes every matching device",
        dict(claims=[claim("c", request(mode="All"))], slices=[NODE_A]),
        [["gpu:gpu-0", "gpu:gpu-1"]],
    ),
    (
        "All with none matching fails",
        dict(claims=[claim("c", request("gpu", "gpu", "false", mode="All"))], slices=[NODE_A]),
        None,
    ),
    (
        "allocated devices are skipped",
        dict(claims=[claim("c")], slices=[NODE_A], allocated={(DRIVER, "node-a", "gpu-0")}),
        [["gpu:gpu-1"]],
    ),
    (
        "exhausted",
        dict(
            claims=[claim("c")],
            slices=[NODE_A],
            allocated={(DRIVER, "node-a", "gpu-0"), (DRIVER, "node-a", "gpu-1")},
        ),
        None,
    ),
    (
        "admin access shares an allocated device",
        dict(
            claims=[claim("c", request(admin=True))], slices=[NODE_A], allocated={(DRIVER, "node-a", "gpu-0")}
        ),
        [["gpu:gpu-0"]],
    ),
    (
        "two claims never share a device",
        dict(claims=[claim("c1"), claim("c2")], slices=[NODE_A]),
        [["gpu:gpu-0"], ["gpu:gpu-1"]],
    ),
    (
        "three claims on two devices fail",
        dict(claims=[claim("c1"), claim("c2"), claim("c3")], slices=[NODE_A]),
        None,
    ),
    (
        "another node's slice is not this node's",
        dict(claims=[claim("c")], slices=[NODE_A], node="node-b"),
        None,
    ),
    (
        "matchAttribute keeps a numa group together",
        dict(
            claims=[claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
            slices=[NUMA],
        ),
        [["gpu:d0", "gpu:d2"]],
    ),
    (
        "matchAttribute backtracks to the second group",
        dict(
            claims=[claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
            slices=[NUMA],
            allocated={(DRIVER, "node-a", "d0")},
        ),
        [["gpu:d1", "gpu:d3"]],
    ),
    (
        "matchAttribute on a missing attribute fails",
        dict(
            claims=[claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/nope"}])],
            slices=[NUMA],
        ),
        None,
    ),
    (
        "firstAvailable takes the first alternative that fits",
        dict(
            claims=[
                claim(
                    "c",
                    first_available(
                        "gpu",
                        ("big", "gpu", 'device.attributes["gpu.example.com"].memory >= 64'),
                        ("any", "gpu", ""),
                    ),
                )
            ],
            slices=[NODE_A],
        ),
        [["gpu/any:gpu-0"]],
    ),
    (
        "firstAvailable prefers the first when it fits",
        dict(
            claims=[claim("c", first_available("gpu", ("big", "gpu", BIG), ("any", "gpu", "")))],
            slices=[NODE_A],
        ),
        [["gpu/big:gpu-1"]],
    ),
    (
        "allNodes pool serves every node",
        dict(
            claims=[claim("c")],
            slices=[resource_slice("net", [device("nic")], pool="net", all_nodes=True)],
            node="anywhere",
        ),
        [["gpu:nic"]],
    ),
    (
        "nodeSelector pool serves matching nodes",
        dict(
            claims=[claim("c")],
            labels={"rack": "r1"},
            slices=[
                resource_slice(
                    "rack",
                    [device("fpga")],
                    pool="rack",
                    node_selector={
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
                        ]
                    },
                )
            ],
        ),
        [["gpu:fpga"]],
    ),
    (
        "nodeSelector pool does not serve others",
        dict(
            claims=[claim("c")],
            labels={"rack": "r2"},
            slices=[
                resource_slice(
                    "rack",
                    [device("fpga")],
                    pool="rack",
                    node_selector={
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
                        ]
                    },
                )
            ],
        ),
        None,
    ),
    (
        "only the newest pool generation counts",
        dict(
            claims=[claim("c")],
            slices=[
                resource_slice("old", [device("stale")], node="node-a", pool="p", generation=1),
                resource_slice("new", [device("fresh")], node="node-a", pool="p", generation=2),
            ],
        ),
        [["gpu:fresh"]],
    ),
    (
        "an incomplete pool is skipped",
        dict(claims=[claim("c")], slices=[resource_slice("half", [device("x")], node="node-a", count=2)]),
        None,
    ),
    (
        "a complete pool of two slices",
        dict(
            claims=[claim("c", request(count=2))],
            slices=[
                resource_slice("s1", [device("x")], node="node-a", pool="p", count=2),
                resource_slice("s2", [device("y")], node="node-a", pool="p", count=2),
            ],
        ),
        [["gpu:x", "gpu:y"]],
    ),
    (
        "a tainted device is not allocated",
        dict(
            claims=[claim("c")],
            slices=[
                resource_slice(
                    "t",
                    [device("bad", taints=[{"key": "broken", "effect": "NoSchedule"}]), device("good")],
                    node="node-a",
                )
            ],
        ),
        [["gpu:good"]],
    ),
    (
        "a tolerated taint allows it",
        dict(
            claims=[claim("c", request(tolerations=[{"key": "broken", "operator": "Exists"}]))],
            slices=[
                resource_slice(
                    "t", [device("bad", taints=[{"key": "broken", "effect": "NoSchedule"}])], node="node-a"
                )
            ],
        ),
        [["gpu:bad"]],
    ),
]


@pytest.mark.parametrize(("case", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_allocation(case: str, kwargs: dict[str, Any], expected: list[list[str]] | None) -> None:
    assert picked(allocate(**kwargs)) == expected


def test_node_local_result_has_the_node_selector_and_the_device_ids() -> None:
    [result] = allocate([claim("c")], [NODE_A]) or []
    assert result["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}
    ]
    assert result["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
        ]
    }


def test_all_nodes_result_has_no_node_selector() -> None:
    [result] = (
        allocate([claim("c")], [resource_slice("net", [device("nic")], pool="net", all_nodes=True)]) or []
    )
    assert "nodeSelector" not in result


def test_admin_access_is_recorded_in_the_result() -> None:
    [result] = allocate([claim("c", request(admin=True))], [NODE_A]) or []
    assert result["devices"]["results"][0]["adminAccess"] is True


def test_class_and_claim_config_are_carried_into_the_allocation() -> None:
    opaque = {"opaque": {"driver": DRIVER, "parameters": {"sharing": "timeslice"}}}
    classes = [device_class("gpu", config=[{"opaque": {"driver": DRIVER, "parameters": {"mode": "x"}}}])]
    claims = [claim("c", config=[{"requests": ["gpu"], **opaque}, {**opaque}])]
    [result] = allocate(claims, [NODE_A], classes=classes) or []
    assert result["devices"]["config"] == [
        {
            "source": "FromClass",
            "requests": ["gpu"],
            "opaque": {"driver": DRIVER, "parameters": {"mode": "x"}},
        },
        {"source": "FromClaim", "requests": ["gpu"], **opaque},
        {"source": "FromClaim", "requests": [], **opaque},
    ]


def test_a_bad_selector_is_the_claims_error_with_upstreams_wording() -> None:
    with pytest.raises(ClaimError) as err:
        allocate([claim("c", request("gpu", "gpu", "device.driver =="))], [NODE_A])
    assert str(err.value).startswith("claim default/c: selector #0: CEL compile error: compilation failed: ")


def test_a_runtime_error_names_the_missing_key() -> None:
    with pytest.raises(ClaimError) as err:
        allocate(
            [claim("c", request("gpu", "gpu", 'device.attributes["gpu.example.com"].nothere > 1'))], [NODE_A]
        )
    assert str(err.value) == "claim default/c: selector #0: CEL runtime error: no such key: nothere"


def test_a_bad_class_selector_names_the_class() -> None:
    with pytest.raises(ClaimError) as err:
        allocate([claim("c")], [NODE_A], classes=[device_class("gpu", "1")])
    assert str(err.value) == (
        "class gpu: selector #0: CEL compile error: must evaluate to bool or the unknown type, not int"
    )


def test_all_over_a_pool_being_updated_is_an_error() -> None:
    with pytest.raises(
        ClaimError,
        match=r"asks for all devices, but resource pool gpu\.example\.com/half is currently being updated",
    ):
        allocate(
            [claim("c", request(mode="All"))],
            [resource_slice("half", [device("x")], node="node-a", pool="half", count=2)],
        )


def test_duplicate_device_names_make_the_pool_invalid_for_the_node() -> None:
    slices = [
        resource_slice("s1", [device("x")], node="node-a", pool="p", count=2),
        resource_slice("s2", [device("x")], node="node-a", pool="p", count=2),
    ]
    with pytest.raises(NodeFailure, match="invalid resource pools were encountered"):
        allocate([claim("c")], slices)


def test_too_many_devices_in_one_claim() -> None:
    with pytest.raises(ClaimError, match="number of requested devices 33 exceeds the claim limit of 32"):
        allocate([claim("c", request(count=33))], [NODE_A])


def test_selector_results_are_cached_per_slice_version() -> None:
    parser = SliceParser()
    slices = [NODE_A]
    claims = [claim("c", request("gpu", "gpu", BIG))]
    allocator = Allocator(parser.index(slices), allocated_view(), {"gpu": GPU}.get, SelectorCache(), claims)
    allocator.allocate("node-a", {})
    [pool] = parser.index(slices).pools_for("node-a", {})
    assert [d.matches for d in pool.devices()] == [
        {f'device.driver == "{DRIVER}"': True, BIG: False},
        {f'device.driver == "{DRIVER}"': True, BIG: True},
    ]
    updated = [{**NODE_A, "metadata": {"name": "a", "resourceVersion": "2"}}]
    [pool] = parser.index(updated).pools_for("node-a", {})
    assert [d.matches for d in pool.devices()] == [{}, {}]


def test_a_search_past_its_time_limit_stops() -> None:
    # 40 devices, no two alike: a pair with one numa value is never found, after many steps
    slices = [resource_slice("many", [device(f"d{i}", numa=i) for i in range(40)], node="node-a")]
    claims = [claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])]
    ticks = iter(range(0, 10**9, 100))  # every look at the clock is 100 s later
    index = SliceParser().index(slices)
    slow = Allocator(
        index,
        allocated_view(),
        {"gpu": GPU}.get,
        SelectorCache(),
        claims,
        timeout=10,
        clock=lambda: next(ticks),
    )
    with pytest.raises(AllocationTimeout):
        slow.allocate("node-a", {})
    unbounded = Allocator(index, allocated_view(), {"gpu": GPU}.get, SelectorCache(), claims)
    assert unbounded.allocate("node-a", {}) is None


def test_a_malformed_slice_is_left_out_and_named_once() -> None:
    parser = SliceParser()
    bad = resource_slice("bad", [{"name": "x", "capacity": {"memory": {"value": "lots"}}}], node="node-a")
    index = parser.index([bad, resource_slice("good", [device("ok")], node="node-a", pool="good")])
    assert [d.name for p in index.pools_for("node-a", {}) for d in p.devices()] == ["ok"]
    assert list(parser.errors) == ["bad"]
    assert "capacity memory" in parser.errors["bad"]


# ---------------------------------------------------------------- compared with upstream v1.36.2

MANY = resource_slice("many", [device(f"d{i:02}") for i in range(45)], node="node-a")
TAINTED = resource_slice(
    "t",
    [
        device("noexec", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}]),
        device("nosched", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    ],
    node="node-a",
)
RACK = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
OTHER_RACK = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}]
}


def counted(name: str, *alternatives: tuple[str, int]) -> dict:
    """A firstAvailable request whose alternatives (name, count) all use class gpu."""
    return {
        "name": name,
        "firstAvailable": [{"name": sub, "deviceClassName": "gpu", "count": n} for sub, n in alternatives],
    }


def distinct(attribute: str, *requests: str) -> dict:
    return {
        "distinctAttribute": f"{DRIVER}/{attribute}",
        **({"requests": list(requests)} if requests else {}),
    }


UPSTREAM_CASES: list[tuple[str, dict[str, Any], list[list[str]] | None]] = [
    (
        "firstAvailable skips an alternative that would pass 32 devices",
        dict(
            claims=[claim("c", counted("a", ("many", 30), ("few", 1)), request("b", count=10))], slices=[MANY]
        ),
        [["a/few:d00", *(f"b:d{i:02}" for i in range(1, 11))]],
    ),
    (
        "All fails when one of its devices is allocated",
        dict(
            claims=[claim("c", request(mode="All"))], slices=[NODE_A], allocated={(DRIVER, "node-a", "gpu-0")}
        ),
        None,
    ),
    (
        "All with admin access takes allocated devices too",
        dict(
            claims=[claim("c", request(mode="All", admin=True))],
            slices=[NODE_A],
            allocated={(DRIVER, "node-a", "gpu-0")},
        ),
        [["gpu:gpu-0", "gpu:gpu-1"]],
    ),
    (
        "distinctAttribute across requests",
        dict(
            claims=[claim("c", request("x"), request("y"), constraints=[distinct("numa")])],
            slices=[NUMA],
        ),
        [["x:d0", "y:d1"]],
    ),
    (
        "distinctAttribute within a request",
        dict(claims=[claim("c", request(count=2), constraints=[distinct("numa")])], slices=[NUMA]),
        [["gpu:d0", "gpu:d1"]],
    ),
    (
        "distinctAttribute compares a later request with the last device of an earlier one",
        dict(
            claims=[claim("c", request("r", count=2), request("s"), constraints=[distinct("a")])],
            slices=[
                resource_slice("q", [device("e0", a=1), device("e1", a=1), device("e2", a=2)], node="node-a")
            ],
        ),
        [["r:e0", "r:e2", "s:e1"]],
    ),
    (
        "distinctAttribute on a missing attribute fails",
        dict(claims=[claim("c", constraints=[distinct("nope")])], slices=[NUMA]),
        None,
    ),
    (
        "matchAttribute limited to one request leaves the other free",
        dict(
            claims=[
                claim(
                    "c",
                    request("x", count=2),
                    request("y"),
                    constraints=[{"matchAttribute": f"{DRIVER}/numa", "requests": ["x"]}],
                )
            ],
            slices=[NUMA],
        ),
        [["x:d0", "x:d2", "y:d1"]],
    ),
    (
        "matchAttribute across two requests",
        dict(
            claims=[
                claim("c", request("x"), request("y"), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
            ],
            slices=[NUMA],
        ),
        [["x:d0", "y:d2"]],
    ),
    ("a NoExecute taint blocks too", dict(claims=[claim("c", request(count=2))], slices=[TAINTED]), None),
    (
        "a toleration without effect tolerates both",
        dict(
            claims=[
                claim("c", request(count=2, tolerations=[{"key": "k", "operator": "Equal", "value": "v"}]))
            ],
            slices=[TAINTED],
        ),
        [["gpu:noexec", "gpu:nosched"]],
    ),
    (
        "a toleration for NoSchedule leaves NoExecute",
        dict(
            claims=[
                claim("c", request(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]))
            ],
            slices=[TAINTED],
        ),
        [["gpu:nosched"]],
    ),
    (
        "an Equal toleration with another value tolerates nothing",
        dict(
            claims=[claim("c", request(tolerations=[{"key": "k", "operator": "Equal", "value": "w"}]))],
            slices=[TAINTED],
        ),
        None,
    ),
    (
        "a taint with effect None does not block",
        dict(
            claims=[claim("c")],
            slices=[
                resource_slice("n", [device("x", taints=[{"key": "k", "effect": "None"}])], node="node-a")
            ],
        ),
        [["gpu:x"]],
    ),
    (
        "one pool's slices for other nodes may reuse device names",
        dict(
            claims=[claim("c")],
            labels={"rack": "r1"},
            slices=[
                resource_slice("r1", [device("x")], pool="racks", count=2, node_selector=RACK),
                resource_slice("r2", [device("x")], pool="racks", count=2, node_selector=OTHER_RACK),
            ],
        ),
        [["gpu:x"]],
    ),
    (
        "a pool complete on this node is used while a newer generation serves another",
        dict(
            claims=[claim("c")],
            slices=[
                resource_slice("old", [device("stale")], node="node-a", pool="p", generation=1),
                resource_slice("new", [device("fresh")], node="node-b", pool="p", generation=2),
            ],
        ),
        [["gpu:stale"]],
    ),
    (
        "an incomplete generation made obsolete elsewhere is left out",
        dict(
            claims=[claim("c", request(mode="All"))],
            slices=[
                resource_slice("old", [device("stale")], node="node-a", pool="p", generation=1, count=2),
                resource_slice("new", [device("fresh")], node="node-b", pool="p", generation=2),
            ],
        ),
        None,
    ),
    (
        "pools are searched by driver, then pool name; slices by name",
        dict(
            claims=[claim("c", request(count=3))],
            slices=[
                resource_slice("z", [device("z0")], node="node-a", pool="b-pool", count=2),
                resource_slice("y", [device("y0")], node="node-a", pool="b-pool", count=2),
                resource_slice("x", [device("x0")], node="node-a", pool="a-pool"),
            ],
        ),
        [["gpu:x0", "gpu:y0", "gpu:z0"]],
    ),
]


@pytest.mark.parametrize(("case", "kwargs", "expected"), UPSTREAM_CASES, ids=[c[0] for c in UPSTREAM_CASES])
def test_allocation_as_upstream(case: str, kwargs: dict[str, Any], expected: list[list[str]] | None) -> None:
    assert picked(allocate(**kwargs)) == expected


def test_all_over_more_than_32_devices_is_too_many() -> None:
    with pytest.raises(ClaimError) as err:
        allocate([claim("c", request(mode="All"))], [MANY])
    assert str(err.value) == "claim default/c: number of requested devices 45 exceeds the claim limit of 32"


def test_node_selectors_merge_requirements_with_the_same_values_once() -> None:
    both = {"key": "rack", "operator": "In", "values": ["r1", "r2"]}
    slices = [
        resource_slice(
            "s1",
            [device("x")],
            pool="p1",
            node_selector={"nodeSelectorTerms": [{"matchExpressions": [both]}]},
        ),
        resource_slice(
            "s2",
            [device("y")],
            pool="p2",
            node_selector={"nodeSelectorTerms": [{"matchExpressions": [{**both, "values": ["r2", "r1"]}]}]},
        ),
    ]
    [result] = allocate([claim("c", request(count=2))], slices, labels={"rack": "r1"}) or []
    assert result["nodeSelector"] == {"nodeSelectorTerms": [{"matchExpressions": [both]}]}


def test_first_available_result_names_the_alternative_and_its_tolerations() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    toleration = {"key": "k", "operator": "Exists"}
    req = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": BIG}}]},
            {"name": "any", "deviceClassName": "gpu", "tolerations": [toleration]},
        ],
    }
    slices = [resource_slice("t", [device("small", memory=8, taints=[taint])], node="node-a")]
    [result] = allocate([claim("c", req)], slices) or []
    assert result["devices"]["results"] == [
        {
            "request": "gpu/any",
            "driver": DRIVER,
            "pool": "node-a",
            "device": "small",
            "tolerations": [toleration],
        }
    ]


def test_class_and_request_selectors_must_both_match() -> None:
    slices = [
        resource_slice(
            "m", [device("a", memory=40, model="x"), device("b", memory=40, model="y")], node="node-a"
        )
    ]
    classes = [device_class("gpu", BIG)]
    claims = [claim("c", request("gpu", "gpu", 'device.attributes["gpu.example.com"].model == "y"'))]
    assert picked(allocate(claims, slices, classes=classes)) == [["gpu:b"]]
    small = [claim("c", request("gpu", "gpu", 'device.attributes["gpu.example.com"].memory < 32'))]
    assert allocate(small, slices, classes=classes) is None


def test_all_devices_that_break_a_constraint_are_the_claims_error() -> None:
    claims = [claim("c", request(mode="All"), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])]
    with pytest.raises(ClaimError) as err:
        allocate(claims, [NUMA])
    assert str(err.value) == (
        "claim default/c, request gpu: cannot add device gpu.example.com/node-a/d1 because a claim "
        "constraint would not be satisfied"
    )


def test_the_next_device_of_a_request_is_searched_after_the_previous_one() -> None:
    # upstream tries {e0,e1}, {e0,e2}, {e1,e2} for r, never (e1, e0): with distinctAttribute's
    # per-request memory that order decides whether s finds a device
    slices = [resource_slice("q", [device("e0", a=1), device("e1", a=2), device("e2", a=2)], node="node-a")]
    claims = [claim("c", request("r", count=2), request("s"), constraints=[distinct("a")])]
    assert allocate(claims, slices) is None


def test_32_claims_of_32_devices_do_not_run_out_of_stack() -> None:
    slices = [resource_slice("big", [device(f"d{i:04}") for i in range(1024)], node="node-a")]
    result = allocate([claim(f"c{i}", request(count=32)) for i in range(32)], slices) or []
    assert [len(a["devices"]["results"]) for a in result] == [32] * 32


def test_first_available_config_follows_the_alternative_taken() -> None:
    def opaque(value: str) -> dict:
        return {"opaque": {"driver": DRIVER, "parameters": {"v": value}}}

    classes = [GPU, device_class("other", config=[opaque("class")])]
    req = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": BIG}}]},
            {"name": "any", "deviceClassName": "other"},
        ],
    }
    config = [{"requests": ["gpu/big"], **opaque("big")}, {"requests": ["gpu/any"], **opaque("any")}]
    small = [resource_slice("s", [device("small", memory=8)], node="node-a")]
    [result] = allocate([claim("c", req, config=config)], small, classes=classes) or []
    assert result["devices"]["config"] == [
        {"source": "FromClass", "requests": ["gpu/any"], **opaque("class")},
        {"source": "FromClaim", "requests": ["gpu/any"], **opaque("any")},
    ]
