"""The claim tracker: pending allocations and written claims on top of the informer's."""

from __future__ import annotations

from scheduler.dra.claims import ClaimTracker
from scheduler.testing import FakeLister
from scheduler.testing.dra import DRIVER, allocated, claim


def version(obj: dict, rv: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}


def test_a_pending_allocation_holds_its_devices_whatever_the_informer_shows() -> None:
    lister = FakeLister([claim("c")])
    tracker = ClaimTracker(lister)
    tracker.reserve(allocated(claim("c"), "node-a", "gpu-0"))
    assert (DRIVER, "node-a", "gpu-0") in tracker.allocated_devices()
    lister.put(version(claim("c"), "2"))  # e.g. a label added meanwhile
    assert tracker.is_pending("default/c")
    assert (DRIVER, "node-a", "gpu-0") in tracker.allocated_devices()
    assert tracker.restore("default/c")
    assert (DRIVER, "node-a", "gpu-0") not in tracker.allocated_devices()
    assert not tracker.restore("default/c")


def test_a_written_claim_stands_until_the_informer_moves_on() -> None:
    lister = FakeLister([claim("c")])
    tracker = ClaimTracker(lister)
    tracker.reserve(allocated(claim("c"), "node-a", "gpu-0"))
    answer = version(allocated(claim("c"), "node-a", "gpu-0"), "5")
    tracker.written(answer)
    assert not tracker.is_pending("default/c")
    assert tracker.get("default/c") is answer
    assert (DRIVER, "node-a", "gpu-0") in tracker.allocated_devices()
    lister.put(version(claim("c"), "6"))  # deallocated since
    assert tracker.get("default/c")["metadata"]["resourceVersion"] == "6"
    assert (DRIVER, "node-a", "gpu-0") not in tracker.allocated_devices()


def test_allocated_devices_follow_the_informer_and_skip_admin_access() -> None:
    lister = FakeLister([allocated(claim("a"), "node-a", "gpu-0"), claim("b")])
    tracker = ClaimTracker(lister)
    assert (DRIVER, "node-a", "gpu-0") in tracker.allocated_devices()
    lister.delete("default/a")
    admin = allocated(claim("b"), "node-a", "gpu-1")
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    lister.put(admin)
    devices = tracker.allocated_devices()
    assert (DRIVER, "node-a", "gpu-0") not in devices
    assert (DRIVER, "node-a", "gpu-1") not in devices
