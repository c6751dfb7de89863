"""Consumable capacity against the allocator: shared devices, request policies and their rounding."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.quantity import Quantity
from scheduler.dra import capacity
from scheduler.dra.allocator import Allocator
from scheduler.dra.cel import SelectorCache
from scheduler.dra.claims import ClaimTracker
from scheduler.dra.model import Capacity, RequestPolicy, SliceParser
from scheduler.testing import FakeLister
from scheduler.testing.dra import (
    DRIVER,
    allocated_view,
    claim,
    counter_slice,
    device,
    device_class,
    holding,
    request,
    resource_slice,
    shared_device,
    with_capacity,
)

NIC = device_class("nic", f'device.driver == "{DRIVER}"')
# The recorded NIC: 10G of bandwidth, 1G by default, in steps of 1G from 1G.
BANDWIDTH = {"value": "10G", "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}}}
NIC_SLICE = resource_slice("nics", [shared_device("nic-0", {"bandwidth": BANDWIDTH})], node="node-a")
NIC_ID = (DRIVER, "node-a", "nic-0")


def results(claims: list[dict], slices: list[dict], held: Any = None) -> list[list[dict]] | None:
    view = held if held is not None else allocated_view()
    allocator = Allocator(SliceParser().index(slices), view, {"nic": NIC}.get, SelectorCache(), claims)
    found = allocator.allocate("node-a", {})
    return None if found is None else [a["devices"]["results"] for a in found.results()]


def asking(name: str = "c", **amounts: str) -> dict:
    req = request("nic", "nic")
    return claim(name, with_capacity(req, **amounts) if amounts else req)


def consumed(result: list[list[dict]] | None) -> list[tuple[str, dict | None]]:
    """Per claim's first device: its name and consumed capacity, by value."""
    assert result is not None
    return [
        (
            r[0]["device"],
            {k: Quantity.parse(v).value for k, v in (r[0].get("consumedCapacity") or {}).items()},
        )
        for r in result
    ]


G = 10**9


def test_a_shared_device_gives_each_claim_a_share_with_what_it_consumes() -> None:
    found = results([asking("a", bandwidth="4G"), asking("b", bandwidth="4G")], [NIC_SLICE])
    assert consumed(found) == [("nic-0", {"bandwidth": 4 * G}), ("nic-0", {"bandwidth": 4 * G})]
    assert found is not None
    share_a, share_b = found[0][0]["shareID"], found[1][0]["shareID"]
    assert share_a and share_b and share_a != share_b
    # 4G rounded to a step is written as upstream writes it: BinarySI
    assert found[0][0]["consumedCapacity"] == {"bandwidth": "3906250Ki"}


def test_the_recorded_nic_takes_two_4g_shares_then_only_the_default() -> None:
    two = allocated_view(
        holding(shares=((NIC_ID, {"bandwidth": "4G"}), (NIC_ID, {"bandwidth": "3906250Ki"})))
    )
    assert results([asking(bandwidth="4G")], [NIC_SLICE], two) is None
    found = results([asking()], [NIC_SLICE], two)
    assert found is not None and found[0][0]["consumedCapacity"] == {
        "bandwidth": "1G"
    }  # the default as written


def test_assumed_shares_count_at_once() -> None:
    lister = FakeLister([asking("first"), asking("second")])
    tracker = ClaimTracker(lister)
    tracker.reserve({**asking("first"), "status": holding(shares=((NIC_ID, {"bandwidth": "8G"}),))["status"]})
    assert results([asking(bandwidth="4G")], [NIC_SLICE], tracker.allocated_devices()) is None
    assert consumed(results([asking(bandwidth="2G")], [NIC_SLICE], tracker.allocated_devices())) == [
        ("nic-0", {"bandwidth": 2 * G})
    ]
    tracker.restore("default/first")
    assert results([asking(bandwidth="4G")], [NIC_SLICE], tracker.allocated_devices()) is not None


def test_the_search_counts_its_own_shares() -> None:
    # two requests of one claim may share the device; their sum must fit
    two_requests = claim(
        "c",
        with_capacity(request("a", "nic"), bandwidth="6G"),
        with_capacity(request("b", "nic"), bandwidth="4G"),
    )
    found = results([two_requests], [NIC_SLICE])
    assert found is not None and [r["device"] for r in found[0]] == ["nic-0", "nic-0"]
    too_much = claim(
        "c",
        with_capacity(request("a", "nic"), bandwidth="6G"),
        with_capacity(request("b", "nic"), bandwidth="5G"),
    )
    assert results([too_much], [NIC_SLICE]) is None


def test_distinct_attribute_keeps_two_requests_off_one_shared_device() -> None:
    nics = resource_slice(
        "nics",
        [
            shared_device("nic-0", {"bandwidth": BANDWIDTH}, port=0),
            shared_device("nic-1", {"bandwidth": BANDWIDTH}, port=1),
        ],
        node="node-a",
    )
    reqs = (
        with_capacity(request("a", "nic"), bandwidth="2G"),
        with_capacity(request("b", "nic"), bandwidth="2G"),
    )
    found = results([claim("c", *reqs)], [nics])
    assert found is not None and [r["device"] for r in found[0]] == ["nic-0", "nic-0"]
    distinct = claim("c", *reqs, constraints=[{"distinctAttribute": f"{DRIVER}/port"}])
    found = results([distinct], [nics])
    assert found is not None and [r["device"] for r in found[0]] == ["nic-0", "nic-1"]
    one_nic = resource_slice(
        "nics", [shared_device("nic-0", {"bandwidth": BANDWIDTH}, port=0)], node="node-a"
    )
    assert results([distinct], [one_nic]) is None


def test_a_request_naming_a_capacity_the_device_lacks_skips_it() -> None:
    assert results([asking(memory="1Gi")], [NIC_SLICE]) is None


def test_an_exclusive_device_fits_a_request_up_to_its_capacity() -> None:
    gpus = resource_slice(
        "gpus",
        [device("small", {"memory": "16Gi"}), device("big", {"memory": "40Gi"})],
        node="node-a",
    )
    found = results([asking(memory="32Gi")], [gpus])
    assert found is not None
    assert found[0] == [{"request": "nic", "driver": DRIVER, "pool": "node-a", "device": "big"}]  # no share
    assert results([asking(memory="64Gi")], [gpus]) is None


def test_a_shared_device_takes_its_counters_once() -> None:
    counters = counter_slice("c", {"nic": {"vfs": "1"}}, pool="node-a", node="node-a")
    nic = shared_device("nic-0", {"bandwidth": BANDWIDTH})
    nic["consumesCounters"] = [{"counterSet": "nic", "counters": {"vfs": {"value": "1"}}}]
    slices = [counters, resource_slice("nics", [nic], node="node-a", count=2)]
    found = results([asking("a", bandwidth="2G"), asking("b", bandwidth="2G")], slices)
    assert found is not None and [r[0]["device"] for r in found] == ["nic-0", "nic-0"]
    in_use = allocated_view(holding(shares=((NIC_ID, {"bandwidth": "2G"}),)))
    assert results([asking(bandwidth="2G")], slices, in_use) is not None


def policy(**raw: Any) -> Capacity:
    valid_range = raw.get("validRange") or {}

    def q(value: str | None) -> Quantity | None:
        return None if value is None else Quantity.parse(value)

    return Capacity(
        Quantity.parse(raw.get("value", "10G")),
        RequestPolicy(
            default=q(raw.get("default")),
            valid_values=tuple(Quantity.parse(v) for v in raw.get("validValues", ())),
            has_range="validRange" in raw,
            min=q(valid_range.get("min")),
            max=q(valid_range.get("max")),
            step=q(valid_range.get("step")),
        ),
    )


STEPPED = policy(default="1G", validRange={"min": "1G", "step": "1G"})
BOUNDED = policy(default="1G", validRange={"min": "1G", "max": "4G", "step": "1G"})
FREE_RANGE = policy(default="1G", validRange={"min": "1G"})
VALUES = policy(default="1G", validValues=["1G", "5G", "10G"])


@pytest.mark.parametrize(
    ("cap", "requested", "amount", "text", "allowed"),
    [
        (STEPPED, None, 1 * G, "1G", True),  # the default
        (STEPPED, "1500M", 2 * G, "1953125Ki", True),  # up to the next step
        (STEPPED, "4G", 4 * G, "3906250Ki", True),  # on a step: the same value, BinarySI
        (STEPPED, "500M", 1 * G, "1G", True),  # below min: min
        (BOUNDED, "4G", 4 * G, "3906250Ki", True),
        (BOUNDED, "4500M", 5 * G, "5000000000", False),  # rounded past max (5e9 is no multiple of 1Ki)
        (FREE_RANGE, "1500M", 1500 * 10**6, "1500M", True),  # no step: as asked
        (VALUES, "2G", 5 * G, "5G", True),  # the next valid value
        (VALUES, "11G", 11 * G, "11G", False),  # past every valid value
        (policy(value="10G"), "3G", 3 * G, "3G", True),  # a policy with nothing in it
        (Capacity(Quantity.parse("10G"), None), None, 10 * G, "10G", True),  # no policy: all of it
    ],
)
def test_capacity_rounding(
    cap: Capacity, requested: str | None, amount: int, text: str, allowed: bool
) -> None:
    got = capacity.consumed(None if requested is None else Quantity.parse(requested), cap)
    assert (got.value, str(got)) == (amount, text)
    assert capacity.violates(got, cap.policy) is not allowed
