"""DeviceTaintRules (DRADeviceTaintRules): a rule's taint goes to the devices its selector names,
as if their slice carried it, and the allocator honours it like a device taint."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.dra.allocator import Allocator
from scheduler.dra.cel import SelectorCache
from scheduler.dra.model import SliceParser
from scheduler.testing.dra import (
    DRIVER,
    allocated_view,
    claim,
    counter_slice,
    device,
    device_class,
    device_taint_rule,
    partition,
    request,
    resource_slice,
)

GPU = device_class("gpu", f'device.driver == "{DRIVER}"')
NODE_A = resource_slice("a", [device("gpu-0"), device("gpu-1")], node="node-a")
OTHER_DRIVER = resource_slice("b", [device("gpu-0")], node="node-a", driver="nic.example.com", pool="node-a")
BROKEN = {"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"}


def rule(name: str = "r", taint: dict | None = None, **selector: str) -> dict[str, Any]:
    return device_taint_rule(
        name, {**(taint or BROKEN), "timeAdded": "2026-01-01T00:00:00Z"}, selector or None
    )


def taints(slices: list[dict], rules: list[dict]) -> dict[str, list[str]]:
    """Each device's taint keys, as "driver/pool/device"."""
    index = SliceParser().index(slices, rules)
    return {"/".join(d.id): [t["key"] for t in d.taints] for d in index.usable_devices("node-a", {})}


@pytest.mark.parametrize(
    ("case", "rules", "expected"),
    [
        ("no rules", [], {"gpu-0": [], "gpu-1": [], "nic": []}),
        (
            "a rule naming a device",
            [rule(driver=DRIVER, pool="node-a", device="gpu-1")],
            {"gpu-0": [], "gpu-1": ["example.com/broken"], "nic": []},
        ),
        # the device name alone matches it in every driver's pools
        (
            "a device name alone",
            [rule(device="gpu-0")],
            {"gpu-0": ["example.com/broken"], "gpu-1": [], "nic": ["example.com/broken"]},
        ),
        (
            "a driver",
            [rule(driver="nic.example.com")],
            {"gpu-0": [], "gpu-1": [], "nic": ["example.com/broken"]},
        ),
        ("another pool", [rule(pool="elsewhere")], {"gpu-0": [], "gpu-1": [], "nic": []}),
        # as upstream's tracker applies them: without a selector, every device
        (
            "no selector",
            [rule()],
            {"gpu-0": ["example.com/broken"], "gpu-1": ["example.com/broken"], "nic": ["example.com/broken"]},
        ),
        (
            "two rules add two taints",
            [rule("r1", device="gpu-0"), rule("r2", {**BROKEN, "key": "k2"}, device="gpu-0")],
            {"gpu-0": ["example.com/broken", "k2"], "gpu-1": [], "nic": ["example.com/broken", "k2"]},
        ),
    ],
)
def test_rules_taint_the_devices_they_select(case: str, rules: list, expected: dict) -> None:
    found = taints([NODE_A, OTHER_DRIVER], rules)
    short = {
        f"{DRIVER}/node-a/gpu-0": "gpu-0",
        f"{DRIVER}/node-a/gpu-1": "gpu-1",
        "nic.example.com/node-a/gpu-0": "nic",
    }
    assert {short[k]: v for k, v in found.items()} == expected, case


def test_a_rule_comes_after_the_slices_own_taints_and_goes_with_the_rule() -> None:
    own = {"key": "own", "effect": "NoExecute"}
    slices = [resource_slice("a", [device("gpu-0", taints=[own])], node="node-a")]
    parser = SliceParser()
    with_rule = parser.index(slices, [rule(device="gpu-0")])
    (tainted,) = with_rule.usable_devices("node-a", {})
    assert [t["key"] for t in tainted.taints] == ["own", "example.com/broken"]
    assert tainted.taints[1] == {**BROKEN, "timeAdded": "2026-01-01T00:00:00Z"}
    # the same slice objects, the rule deleted: the device keeps only its own taint
    (device_now,) = parser.index(slices, []).usable_devices("node-a", {})
    assert device_now is tainted and [t["key"] for t in device_now.taints] == ["own"]
    # a slice updated while a rule exists gets the rule's taint too
    updated = [resource_slice("a", [device("gpu-0", taints=[own])], node="node-a", generation=2)]
    rules = [rule(device="gpu-0")]
    parser.index(slices, rules)
    (fresh,) = parser.index(updated, rules).usable_devices("node-a", {})
    assert [t["key"] for t in fresh.taints] == ["own", "example.com/broken"]


def allocate(rules: list, tolerations: list | None = None, count: int = 1) -> list[str] | None:
    index = SliceParser().index([NODE_A], rules)
    claims = [claim("c", request(count=count, tolerations=tolerations))]
    found = Allocator(index, frozenset(), {"gpu": GPU}.get, SelectorCache(), claims).allocate("node-a", {})
    return None if found is None else [r["device"] for r in found.results()[0]["devices"]["results"]]


@pytest.mark.parametrize(
    ("case", "rules", "tolerations", "count", "expected"),
    [
        ("an untainted device is taken first", [], None, 1, ["gpu-0"]),
        ("a rule's NoSchedule taint keeps the device out", [rule(device="gpu-0")], None, 1, ["gpu-1"]),
        (
            "a NoExecute one too",
            [rule(taint={**BROKEN, "effect": "NoExecute"}, device="gpu-0")],
            None,
            1,
            ["gpu-1"],
        ),
        (
            "effect None does not",
            [rule(taint={**BROKEN, "effect": "None"}, device="gpu-0")],
            None,
            1,
            ["gpu-0"],
        ),
        ("every device tainted: no fit", [rule(driver=DRIVER)], None, 1, None),
        (
            "tolerated by key",
            [rule(driver=DRIVER)],
            [{"key": "example.com/broken", "operator": "Exists"}],
            2,
            ["gpu-0", "gpu-1"],
        ),
        (
            "tolerated by key and value",
            [rule(driver=DRIVER)],
            [{"key": "example.com/broken", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}],
            1,
            ["gpu-0"],
        ),
        (
            "another value is not tolerated",
            [rule(driver=DRIVER)],
            [{"key": "example.com/broken", "operator": "Equal", "value": "no"}],
            1,
            None,
        ),
    ],
)
def test_the_allocator_honours_rule_taints_like_device_taints(
    case: str, rules: list, tolerations: list | None, count: int, expected: list | None
) -> None:
    assert allocate(rules, tolerations, count) == expected, case


def test_a_rule_taints_a_partition_of_a_pool_with_counters() -> None:
    """A pool of shared counters: a rule on one partition leaves the other to the claim."""
    halves = resource_slice(
        "halves",
        [
            partition("part-a", {"memory": {"memory": "20Gi"}}),
            partition("part-b", {"memory": {"memory": "20Gi"}}),
        ],
        node="node-a",
        pool="gpu",
        count=2,
    )
    counters = counter_slice("counters", {"memory": {"memory": "40Gi"}}, pool="gpu", node="node-a")
    index = SliceParser().index([halves, counters], [rule(pool="gpu", device="part-a")])
    claims = [claim("c", request())]
    found = Allocator(index, allocated_view(), {"gpu": GPU}.get, SelectorCache(), claims).allocate(
        "node-a", {}
    )
    assert found is not None
    assert [r["device"] for r in found.results()[0]["devices"]["results"]] == ["part-b"]
