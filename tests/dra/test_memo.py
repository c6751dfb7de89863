"""The allocation search's memo (scheduler.dra.memo): a kept answer is always the one a fresh
search finds, whatever happened to the claims in between."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.dra.allocator import Allocator, ClaimError
from scheduler.dra.cel import SelectorCache
from scheduler.dra.claims import ClaimTracker, PoolsMark, claim_key
from scheduler.dra.memo import _MAX_SHAPES, MAX_SETTLED, Answer, SearchMemo
from scheduler.dra.model import PoolKey, SliceParser
from scheduler.dra.settled import UNKNOWN
from scheduler.testing import FakeLister, make_node
from scheduler.testing.builders import table_of
from scheduler.testing.dra import (
    DRIVER,
    claim,
    counter_slice,
    device,
    device_class,
    first_available,
    partition,
    request,
    resource_slice,
)

CLASSES = {"gpu": device_class("gpu", f'device.driver == "{DRIVER}"')}
BIG = f'device.attributes["{DRIVER}"].memory > 32'
HALF = f'device.attributes["{DRIVER}"].profile == "half"'
NODES = ("node-a", "node-b", "node-c")

# node-a: four plain GPUs; node-b: two GPUs of 40Gi as partitions sharing counters; every
# node: two GPUs of a cluster-wide pool; the nodes labelled rack=0 (or 1): rack 0's (1's) GPU
SLICES = [
    resource_slice(
        "a",
        [device(f"gpu-{i}", memory=40 if i % 2 else 80, profile="whole") for i in range(4)],
        node="node-a",
    ),
    counter_slice(
        "b-counters", {f"gpu-{g}": {"memory": "40Gi"} for g in range(2)}, pool="node-b", node="node-b"
    ),
    resource_slice(
        "b-devices",
        [
            partition(f"gpu-{g}-{part}", {f"gpu-{g}": {"memory": memory}}, profile=profile, memory=40)
            for g in range(2)
            for part, memory, profile in (
                ("full", "40Gi", "whole"),
                ("a", "20Gi", "half"),
                ("b", "20Gi", "half"),
            )
        ],
        node="node-b",
        count=2,
    ),
    resource_slice(
        "net", [device(f"net-{i}", memory=80, profile="whole") for i in range(2)], pool="net", all_nodes=True
    ),
    *(
        resource_slice(
            f"rack-{rack}",
            [device(f"rack-{rack}-gpu", memory=80, profile="half")],
            pool=f"rack-{rack}",
            node_selector={
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "rack", "operator": "In", "values": [rack]}]}
                ]
            },
        )
        for rack in ("0", "1")
    ),
]

# what the pods ask: each shape a claim's spec
SHAPES = [
    (request("gpu", "gpu"),),
    (request("gpu", "gpu", BIG),),
    (request("gpu", "gpu", HALF),),
    (request("gpu", "gpu", count=2),),
    (first_available("gpu", ("half", "gpu", HALF), ("any", "gpu", "")),),
    (request("one", "gpu", BIG), request("two", "gpu")),
]


def outcome(allocator: Allocator, node: str, labels: dict[str, str]) -> object:
    """The devices found on the node, or the error."""
    try:
        return allocation(allocator.allocate(node, labels))
    except ClaimError as exc:
        return str(exc)


def allocation(found: Any) -> list[list[str]] | None:
    if found is None:
        return None
    return [[f"{r['pool']}/{r['device']}" for r in a["devices"]["results"]] for a in found.results()]


class Cluster:
    """Claims as the informer shows them and the tracker's pending and assumed ones on top."""

    def __init__(self) -> None:
        self.lister = FakeLister()
        self.tracker = ClaimTracker(self.lister)
        self.index = SliceParser().index(SLICES, [])
        self.selectors = SelectorCache()
        self.memo = SearchMemo()  # kept from one step to the next, as the scheduler keeps it
        self.labels = {node: {"kubernetes.io/hostname": node, "rack": "0"} for node in NODES}
        self.serial = 0

    def allocator(self, spec: tuple[dict, ...], memo: SearchMemo | None) -> Allocator:
        self.serial += 1
        wanted = claim(f"c{self.serial}", *copy.deepcopy(spec))
        view = self.tracker.allocated_devices()
        return Allocator(self.index, view, CLASSES.get, self.selectors, [wanted], memo=memo)

    def check_every_node(self) -> None:
        for spec in SHAPES:
            remembering, fresh = self.allocator(spec, self.memo), self.allocator(spec, None)
            for node in NODES:
                labels = self.labels[node]
                assert outcome(remembering, node, labels) == outcome(fresh, node, labels), (spec, node)

    def allocated_claim(self, shape: int, node: str) -> dict | None:
        allocator = self.allocator(SHAPES[shape], None)
        found = allocator.allocate(node, self.labels[node])
        if found is None:
            return None
        return {**allocator.claims[0].claim, "status": {"allocation": found.results()[0]}}


OPS = st.tuples(
    st.sampled_from(["pend", "hold", "restore", "write", "echo", "delete", "relabel"]),
    st.integers(0, len(SHAPES) - 1),
    st.sampled_from(NODES),
    st.integers(0, 50),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(OPS, min_size=1, max_size=25))
def test_kept_answers_equal_a_fresh_search(ops: list[tuple[str, int, str, int]]) -> None:
    cluster = Cluster()
    pending: list[dict] = []  # reserved, not written
    written: list[dict] = []  # the API's answers the informer has not shown yet
    cluster.check_every_node()
    for kind, shape, node, pick in ops:
        if kind in ("pend", "hold"):
            made = cluster.allocated_claim(shape, node)
            if made is not None and kind == "pend":
                cluster.tracker.reserve(made)
                pending.append(made)
            elif made is not None:
                cluster.lister.put(made)
        elif kind == "restore" and pending:
            cluster.tracker.restore(claim_key(pending.pop(pick % len(pending))))
        elif kind == "write" and pending:
            made = pending.pop(pick % len(pending))
            answer = copy.deepcopy(made)
            answer["metadata"]["resourceVersion"] = str(100 + pick)
            cluster.tracker.written(answer)
            written.append(answer)
        elif kind == "echo" and written:
            cluster.lister.put(written.pop(pick % len(written)))
        elif kind == "delete" and cluster.lister.list():
            listed = cluster.lister.list()
            cluster.lister.delete(claim_key(listed[pick % len(listed)]))
        elif kind == "relabel":
            cluster.labels[node] = {**cluster.labels[node], "rack": str(pick % 2)}
        cluster.check_every_node()


def test_a_kept_answer_names_the_new_claims_request_and_goes_with_an_allocation() -> None:
    cluster = Cluster()
    first = cluster.allocator(SHAPES[0], cluster.memo)
    assert allocation(first.allocate("node-a", cluster.labels["node-a"])) == [["net/net-0"]]
    again = cluster.allocator(SHAPES[0], cluster.memo)
    found = again.allocate("node-a", cluster.labels["node-a"])
    # the same devices, given to the new allocator's own claim and request
    assert allocation(found) == [["net/net-0"]]
    assert found is not None and found.results()[0]["devices"]["results"][0]["request"] == "gpu"
    cluster.lister.put(cluster.allocated_claim(0, "node-a") or {})
    after = cluster.allocator(SHAPES[0], cluster.memo)
    assert allocation(after.allocate("node-a", cluster.labels["node-a"])) == [["net/net-1"]]


def test_the_batch_answers_of_a_bounded_number_of_shapes_are_kept() -> None:
    memo = SearchMemo()
    shapes = [memo.shape(("shape", i)) for i in range(MAX_SETTLED + 1)]
    first = memo.settled(shapes[0])
    for shape in shapes[1:MAX_SETTLED]:
        memo.settled(shape)
    assert memo.settled(shapes[0]) is first  # still among the kept
    memo.settled(shapes[MAX_SETTLED])  # one more: the table starts over
    assert memo.settled(shapes[0]) is not first


class _NoChanges:
    """A view of the allocations in which no pool ever changes hands."""

    def mark(self) -> PoolsMark:
        return PoolsMark(_HELD, 0, {})

    def pools_changed_since(self, mark: PoolsMark) -> set[PoolKey]:
        return set()


_HELD: Any = object()


def test_a_new_shape_never_inherits_the_batch_answers_of_a_gone_one() -> None:
    """Records are found by the shape's identity: one that outlived its shape (made for an
    allocator from before the shape table started over) must not answer for a new shape that
    happens to get the gone one's id."""
    memo = SearchMemo()
    table = table_of([make_node("n0")]).table
    index, view = object(), _NoChanges()
    old = memo.shape(("shape", str(-1)))
    for i in range(_MAX_SHAPES):  # the shape table starts over: ``old`` is no longer interned
        memo.shape(("shape", str(i)))
    record = memo.settled(old)  # as an allocator from before the start-over asks
    record.update(table, index, view)
    record.settle(0, "n0", Answer(old, {}, (), (), picks=None))  # no fit: the record keeps no answer
    gone = id(old)
    del old, record
    new: Any = None
    for i in range(10_000):  # a new shape object, at the gone one's address when it is free
        new = ("new", str(i))
        if id(new) == gone:
            break
    fresh = memo.settled(memo.shape(new))
    fresh.update(table, index, view)
    assert fresh.state[0] == UNKNOWN
    assert fresh.answers == {}
