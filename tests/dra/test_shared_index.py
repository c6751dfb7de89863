"""The slice index the DRA plugins share (scheduler.dra.shared) is kept while the ResourceSlice and
DeviceTaintRule listers say nothing changed, and made anew as soon as one of them changed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Mapping
from typing import Any

from scheduler.dra.shared import shared_dra
from scheduler.testing import FakeLister
from scheduler.testing.builders import FakeHandle
from scheduler.testing.dra import device, device_taint_rule, resource_slice


class CountingLister(FakeLister):
    """A FakeLister counting how often it is listed."""

    def __init__(self, objects: list[dict]) -> None:
        super().__init__(objects)
        self.listed = 0

    def list(self) -> list[Mapping[str, Any]]:
        self.listed += 1
        return super().list()


class PlainLister:
    """A lister that does not say when its objects change (no revision)."""

    def __init__(self, objects: list[dict]) -> None:
        self.objects = list(objects)

    def get(self, key: str) -> Mapping[str, Any] | None:
        return next((o for o in self.objects if o["metadata"]["name"] == key), None)

    def list(self) -> list[Mapping[str, Any]]:
        return list(self.objects)

    def with_label(self, namespace: str, key: str, value: str) -> list[Mapping[str, Any]]:
        return []


def gpus(index: Any, node: str) -> list[str]:
    return [d.name for d in index.devices_on(node, {})]


def handle_with(slices: Any, rules: Any) -> FakeHandle:
    handle = FakeHandle(listers={"resourceclaims": []})
    handle.listers["resourceslices"] = slices
    handle.listers["devicetaintrules"] = rules
    return handle


def test_the_index_is_kept_while_both_revisions_stand() -> None:
    slices = CountingLister([resource_slice("a", [device("gpu-0")], node="n")])
    rules = CountingLister([])
    handle = handle_with(slices, rules)
    shared = shared_dra(handle)
    first = shared.slice_index(handle)
    assert shared.slice_index(handle) is first
    assert (slices.listed, rules.listed) == (1, 1)

    slices.put(resource_slice("a", [device("gpu-0"), device("gpu-1")], node="n"))
    second = shared.slice_index(handle)
    assert gpus(second, "n") == ["gpu-0", "gpu-1"]
    assert shared.slice_index(handle) is second

    rules.put(device_taint_rule())
    tainted = shared.slice_index(handle)
    assert [bool(d.taints) for d in tainted.devices_on("n", {})] == [True, True]
    assert (slices.listed, rules.listed) == (3, 3)


def test_a_lister_without_revisions_is_listed_every_time() -> None:
    slices = PlainLister([resource_slice("a", [device("gpu-0")], node="n")])
    handle = handle_with(slices, FakeLister())
    shared = shared_dra(handle)
    assert gpus(shared.slice_index(handle), "n") == ["gpu-0"]
    slices.objects = [resource_slice("a", [device("gpu-1")], node="n")]
    assert gpus(shared.slice_index(handle), "n") == ["gpu-1"]


def test_another_lister_with_the_same_revision_is_read() -> None:
    handle = handle_with(FakeLister([resource_slice("a", [device("gpu-0")], node="n")]), FakeLister())
    shared = shared_dra(handle)
    assert gpus(shared.slice_index(handle), "n") == ["gpu-0"]
    handle.listers["resourceslices"] = FakeLister([resource_slice("a", [device("gpu-1")], node="n")])
    assert gpus(shared.slice_index(handle), "n") == ["gpu-1"]


def test_a_replaced_lister_is_not_kept() -> None:
    """Only the current listers are held: the ones replaced since are freed."""
    handle = handle_with(FakeLister([resource_slice("a", [device("gpu-0")], node="n")]), FakeLister())
    shared = shared_dra(handle)
    shared.slice_index(handle)
    replaced = [
        weakref.ref(handle.listers["resourceslices"]),
        weakref.ref(handle.listers["devicetaintrules"]),
    ]
    for i in range(3):  # each index read from new listers of both kinds
        handle.listers["resourceslices"] = FakeLister([resource_slice("a", [device(f"gpu-{i}")], node="n")])
        handle.listers["devicetaintrules"] = FakeLister()
        assert gpus(shared.slice_index(handle), "n") == [f"gpu-{i}"]
        replaced += [
            weakref.ref(handle.listers["resourceslices"]),
            weakref.ref(handle.listers["devicetaintrules"]),
        ]
    gc.collect()
    assert [ref() is None for ref in replaced] == [True] * (len(replaced) - 2) + [False, False]
