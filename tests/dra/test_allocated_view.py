"""The claim tracker's allocated-devices view, kept up to date as claims come and go (and not
looked at again while the lister's revision stands), against one made from scratch."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.dra.claims import ClaimTracker, claim_key
from scheduler.dra.extended import CLAIM_ANNOTATION
from scheduler.framework.changes import KEPT
from scheduler.testing import FakeLister
from scheduler.testing.dra import DRIVER, claim

DEVICES = [(DRIVER, pool, f"gpu-{d}") for pool in ("node-a", "node-b") for d in range(4)]


def allocated_claim(name: str, rv: int, exclusive: list[int], shares: list[int], owner: str = "") -> dict:
    """A claim holding devices of ``DEVICES`` (by position) exclusively and as shares."""
    results: list[dict[str, Any]] = []
    for i in exclusive:
        driver, pool, device = DEVICES[i]
        results.append({"request": "r", "driver": driver, "pool": pool, "device": device})
    for n, i in enumerate(shares):
        driver, pool, device = DEVICES[i]
        share = {"request": "r", "driver": driver, "pool": pool, "device": device, "shareID": f"s{n}"}
        share["consumedCapacity"] = {"memory": f"{n + 1}Gi"}
        results.append(share)
    made = claim(name)
    made["metadata"]["resourceVersion"] = str(rv)
    if owner:
        made["metadata"]["annotations"] = {CLAIM_ANNOTATION: "true"}
        made["metadata"]["ownerReferences"] = [
            {"kind": "Pod", "name": owner, "uid": owner, "controller": True}
        ]
    made["status"] = {"allocation": {"devices": {"results": results}}}
    return made


def view_of(tracker: ClaimTracker) -> tuple[Any, ...]:
    """All the view's answers, device by device, and the special claims found."""
    view = tracker.allocated_devices()
    return (
        [(d in view, view.is_allocated(d), view.consumed_capacity(d)) for d in DEVICES],
        view.count_in(frozenset(DEVICES)),
        [claim_key(c) if (c := tracker.special_claim(owner)) else None for owner in OWNERS],
    )


OWNERS = [f"pod-{which}" for which in range(6)]
HOLDINGS = st.tuples(
    st.lists(st.integers(0, len(DEVICES) - 1), max_size=3, unique=True),
    st.lists(st.integers(0, len(DEVICES) - 1), max_size=2, unique=True),
)
OPS = st.tuples(
    st.sampled_from(["add", "update", "same", "delete", "reserve", "restore", "write", "echo", "look"]),
    st.integers(0, 5),
    HOLDINGS,
    st.booleans(),  # a special claim (extended resources), of its own pod
)


@settings(max_examples=100, deadline=None)
@given(st.lists(OPS, min_size=1, max_size=40))
def test_the_kept_view_equals_one_made_from_scratch(ops: list[tuple[str, int, Any, bool]]) -> None:
    lister = FakeLister()
    tracker = ClaimTracker(lister)
    pending: dict[str, dict] = {}  # reserved, not written
    written: dict[str, dict] = {}  # written, the informer not there yet
    rv = 1
    for kind, which, (exclusive, shares), special in ops:
        rv += 1
        owner = f"pod-{which}" if special else ""
        name = f"claim-{which}"
        key = f"default/{name}"
        busy = key in pending or key in written
        if kind in ("add", "update") and not busy:
            lister.put(allocated_claim(name, rv, exclusive, shares, owner))
        elif kind == "same" and lister.get(key) is not None:
            lister.put(lister.get(key) or {})  # the same object again: nothing changed
        elif kind == "delete" and not busy:
            lister.delete(key)
        elif kind == "reserve" and not busy:
            pending[key] = allocated_claim(name, rv, exclusive, shares)
            tracker.reserve(pending[key])
        elif kind == "restore" and key in pending:
            del pending[key]
            tracker.restore(key)
        elif kind == "write" and key in pending:
            answer = copy.deepcopy(pending.pop(key))
            answer["metadata"]["resourceVersion"] = str(rv)
            tracker.written(answer)
            written[key] = answer
        elif kind == "echo" and key in written:
            lister.put(written.pop(key))
        if kind == "look":  # what changed since the last look, seen at once
            assert view_of(tracker) == from_scratch(lister, pending, written)
    assert view_of(tracker) == from_scratch(lister, pending, written)


def from_scratch(lister: FakeLister, pending: dict[str, dict], written: dict[str, dict]) -> tuple[Any, ...]:
    """A new tracker over the same claims, told the same pending and written ones."""
    fresh = ClaimTracker(FakeLister(copy.deepcopy(lister.list())))
    for claim_obj in pending.values():
        fresh.reserve(claim_obj)
    for answer in written.values():
        fresh.written(answer)
    return view_of(fresh)


def test_an_update_between_two_looks_is_seen() -> None:
    lister = FakeLister([allocated_claim("a", 2, [0], [])])
    tracker = ClaimTracker(lister)
    assert DEVICES[0] in tracker.allocated_devices()
    lister.put(allocated_claim("a", 3, [1], []))
    view = tracker.allocated_devices()
    assert DEVICES[0] not in view and DEVICES[1] in view


def test_more_changes_than_the_log_keeps_between_two_looks_are_all_seen() -> None:
    lister = FakeLister([allocated_claim("a", 2, [0], [])])
    tracker = ClaimTracker(lister)
    tracker.allocated_devices()
    assert lister.changed_since(lister.revision) == []
    for i in range(KEPT + 1):
        lister.put(allocated_claim(f"other-{i % 3}", 3 + i, [], []))
    assert lister.changed_since(lister.revision - KEPT - 1) is None
    lister.put(allocated_claim("a", 3, [1], []))
    view = tracker.allocated_devices()
    assert DEVICES[0] not in view and DEVICES[1] in view
