"""DynamicResources' batch Filter reuses a node's answer for the next pod of the same claim shape
only while nothing it read changed (scheduler.dra.settled): every batch answers as a fresh search."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler.api import Pod
from scheduler.dra.allocator import Allocator
from scheduler.dra.claims import claim_key
from scheduler.framework import CycleState, NodeInfo, Status
from scheduler.plugins.dynamicresources import CANNOT_ALLOCATE, DynamicResources
from scheduler.testing import make_node
from scheduler.testing.builders import Cluster, FakeHandle, expand_verdicts, pod_dict, table_of
from scheduler.testing.dra import (
    BROKEN_TAINT,
    DRIVER,
    claim,
    device,
    device_class,
    device_taint_rule,
    request,
    resource_slice,
)

CLASSES = [device_class("gpu", f'device.driver == "{DRIVER}"')]
BIG = f'device.attributes["{DRIVER}"].memory >= 32'
SHAPES = [(request("gpu", "gpu"),), (request("gpu", "gpu", BIG),), (request("gpu", "gpu", count=2),)]
RACK_0 = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["0"]}]}]}


def node_slice(node: str, *memories: int, version: int = 1) -> dict:
    made = resource_slice(
        f"{node}-gpus", [device(f"gpu-{i}", memory=m) for i, m in enumerate(memories)], node=node
    )
    made["metadata"]["resourceVersion"] = str(version)
    return made


class World:
    """Nodes in a node table, slices and claims in listers, one plugin (one memo) for every pod."""

    def __init__(self, nodes: dict[str, dict[str, str]], slices: list[dict], capacity: int = 4) -> None:
        self.cluster = table_of(
            [make_node(name, labels=labels) for name, labels in nodes.items()], capacity=capacity
        )
        self.handle = FakeHandle(
            self.cluster,
            listers={
                "resourceclaims": [],
                "resourceslices": slices,
                "deviceclasses": CLASSES,
                "devicetaintrules": [],
            },
        )
        self.plugin = DynamicResources(None, self.handle)
        self.pods = 0

    @property
    def names(self) -> list[str]:
        return [info.name for info in self.cluster.infos]

    def pod(self, shape: tuple[dict, ...]) -> Pod:
        """A new pod with a new claim of this shape."""
        self.pods += 1
        name = f"pod-{self.pods}"
        self.handle.lister("resourceclaims").put(claim(f"{name}-gpu", *copy.deepcopy(shape)))
        raw = pod_dict(name)
        raw["metadata"]["uid"] = f"uid-{name}"
        raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]
        return Pod.from_dict(raw)

    def batch(self, pod: Pod) -> tuple[CycleState, dict[str, Any]]:
        """The batch Filter over every node: per node, the devices found or the rejection."""
        state, verdicts = self.filter(pod, self.cluster)
        data = state.read("DynamicResources")
        found: dict[str, Any] = {}
        for name, status in zip(self.names, verdicts, strict=True):
            if status is not None:
                found[name] = status.message()
            else:
                found[name] = devices(data.found(name).results())
        return state, found

    def filter(self, pod: Pod, cluster: Cluster) -> tuple[CycleState, list[Status | None]]:
        """PreFilter, then the batch Filter over the nodes of ``cluster``."""
        state = CycleState()
        assert self.plugin.pre_filter(state, pod, None)[1] is None  # type: ignore[arg-type]
        slots = cluster.slots
        return state, expand_verdicts(self.plugin.filter_nodes(state, pod, cluster.table, slots), len(slots))

    def fresh(self, pod: Pod) -> dict[str, Any]:
        """Per node, what a search without any kept answer finds for the pod's claims."""
        shared = self.plugin.shared
        allocator = Allocator(
            shared.slice_index(self.handle),
            shared.tracker.allocated_devices(),
            self.handle.lister("deviceclasses").get,
            shared.selectors,
            [self.handle.lister("resourceclaims").get(f"default/{pod.name}-gpu") or {}],
        )
        found: dict[str, Any] = {}
        for info in self.cluster.infos:
            allocation = allocator.allocate(info.name, info.node.labels)
            found[info.name] = CANNOT_ALLOCATE if allocation is None else devices(allocation.results())
        return found

    @staticmethod
    def written(state: CycleState, version: str) -> dict:
        """The pod's claim as PreBind writes it: with the allocation Reserve assumed."""
        data = state.read("DynamicResources")
        answer = copy.deepcopy(dict(data.claims[0]))
        answer["metadata"]["resourceVersion"] = version
        answer["status"] = {"allocation": data.allocations[0]}
        return answer

    def relabel(self, name: str, labels: dict[str, str]) -> None:
        info = self.cluster.info(name)
        info.node = make_node(name, labels=labels)
        self.cluster.table.sync_row(info)

    def add(self, name: str, labels: dict[str, str]) -> None:
        """A node joins: in the first free slot (a removed node's), else in a grown table."""
        info = NodeInfo(make_node(name, labels=labels))
        self.cluster.table.add(info)
        self.cluster.infos.append(info)

    def remove(self, name: str) -> None:
        info = self.cluster.info(name)
        self.cluster.table.remove(info)
        self.cluster.infos.remove(info)


def devices(results: list[dict]) -> list[list[str]]:
    return [[f"{r['pool']}/{r['device']}" for r in a["devices"]["results"]] for a in results]


def test_a_device_one_pod_took_is_not_offered_to_the_next_pod_of_the_same_shape() -> None:
    world = World({"n0": {}, "n1": {}}, [node_slice("n0", 40), node_slice("n1", 40)])
    first = world.pod(SHAPES[0])
    state, found = world.batch(first)
    assert found == {"n0": [["n0/gpu-0"]], "n1": [["n1/gpu-0"]]}
    assert world.plugin.reserve(state, first, "n0") is None  # pending: the claim is not written yet

    second = world.pod(SHAPES[0])
    assert world.batch(second)[1] == {"n0": CANNOT_ALLOCATE, "n1": [["n1/gpu-0"]]}

    # written, and then shown by the informer: still taken
    taken = world.written(state, "2")
    world.plugin.tracker.written(taken)
    assert world.batch(world.pod(SHAPES[0]))[1]["n0"] == CANNOT_ALLOCATE
    world.handle.lister("resourceclaims").put(taken)
    assert world.batch(world.pod(SHAPES[0]))[1]["n0"] == CANNOT_ALLOCATE

    # the claim goes: its device is free again
    world.handle.lister("resourceclaims").delete(claim_key(taken))
    assert world.batch(world.pod(SHAPES[0]))[1] == {"n0": [["n0/gpu-0"]], "n1": [["n1/gpu-0"]]}


def test_a_slice_change_on_one_node_unsettles_that_nodes_answer() -> None:
    world = World({"n0": {}, "n1": {}}, [node_slice("n0", 40), node_slice("n1", 40)])
    assert world.batch(world.pod(SHAPES[1]))[1] == {"n0": [["n0/gpu-0"]], "n1": [["n1/gpu-0"]]}
    world.handle.lister("resourceslices").put(node_slice("n1", 16, version=2))
    assert world.batch(world.pod(SHAPES[1]))[1] == {"n0": [["n0/gpu-0"]], "n1": CANNOT_ALLOCATE}
    world.handle.lister("resourceslices").put(node_slice("n1", 16, 80, version=3))
    assert world.batch(world.pod(SHAPES[1]))[1] == {"n0": [["n0/gpu-0"]], "n1": [["n1/gpu-1"]]}


def test_a_relabelled_node_is_searched_again() -> None:
    rack = resource_slice("rack", [device("gpu-0", memory=40)], pool="rack", node_selector=RACK_0)
    world = World({"n0": {"rack": "0"}, "n1": {"rack": "1"}}, [rack])
    assert world.batch(world.pod(SHAPES[0]))[1] == {"n0": [["rack/gpu-0"]], "n1": CANNOT_ALLOCATE}
    world.relabel("n1", {"rack": "0"})
    assert world.batch(world.pod(SHAPES[0]))[1] == {"n0": [["rack/gpu-0"]], "n1": [["rack/gpu-0"]]}


def test_a_node_settled_in_one_batch_is_not_searched_in_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the reuse is for: only the node that changed hands is searched again."""
    world = World({f"n{i}": {} for i in range(4)}, [node_slice(f"n{i}", 40, 40) for i in range(4)])
    first = world.pod(SHAPES[0])
    state, _ = world.batch(first)
    assert world.plugin.reserve(state, first, "n2") is None
    searched: list[str] = []
    allocate = Allocator.allocate_settled

    def counting(self: Allocator, settled: Any, slot: int, node_name: str, labels: Any) -> Any:
        searched.append(node_name)
        return allocate(self, settled, slot, node_name, labels)

    monkeypatch.setattr(Allocator, "allocate_settled", counting)
    found = world.batch(world.pod(SHAPES[0]))[1]
    assert searched == ["n2"]
    assert found["n2"] == [["n2/gpu-1"]]


@pytest.mark.parametrize("later", ["a pool changes hands", "a batch on another node table"])
def test_a_cycle_keeps_the_settled_answers_it_was_given_when_a_later_batch_drops_them(later: str) -> None:
    """A cycle's Reserve (or explain's scoring) may come after another batch of the same shape,
    which forgets the answers that changed (all of them on another table, as explain's what-ifs
    run): the earlier cycle still finds the devices its Filter judged by."""
    world = World({"n0": {}, "n1": {}}, [node_slice("n0", 40, 40), node_slice("n1", 40)])
    world.batch(world.pod(SHAPES[0]))  # settles both nodes
    state, verdicts = world.filter(world.pod(SHAPES[0]), world.cluster)  # by the settled answers
    assert verdicts == [None, None]
    if later == "a pool changes hands":
        other = world.pod(SHAPES[0])
        assert world.plugin.reserve(world.filter(other, world.cluster)[0], other, "n1") is None
        assert world.batch(world.pod(SHAPES[0]))[1]["n1"] == CANNOT_ALLOCATE  # n1's answer dropped
    else:
        world.filter(world.pod(SHAPES[0]), table_of([make_node("m0")]))
    data = state.read("DynamicResources")
    assert devices(data.found("n0").results()) == [["n0/gpu-0"]]
    assert devices(data.found("n1").results()) == [["n1/gpu-0"]]


KINDS = ["reserve", "unreserve", "write", "echo", "delete", "relabel", "slice"]
KINDS += ["remove", "add", "rule", "class"]
OPS = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, len(SHAPES) - 1),
    st.integers(0, 4),  # n3 and n4 join only by "add" (the first one grows the table)
    st.integers(0, 50),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(OPS, min_size=1, max_size=20))
@example(  # each kind of node, rule and class change at least once, whatever is drawn
    [
        ("reserve", 0, 0, 0),
        ("add", 0, 3, 1),  # the table grows
        ("remove", 0, 1, 0),
        ("add", 0, 1, 0),  # in the slot n1 left
        ("add", 0, 0, 1),  # n0 replaced, relabelled
        ("rule", 0, 3, 1),
        ("class", 1, 0, 1),
        ("rule", 0, 3, 0),
        ("class", 1, 0, 0),
        ("reserve", 0, 3, 0),
    ]
)
def test_every_batch_answers_as_a_fresh_search(ops: list[tuple[str, int, int, int]]) -> None:
    nodes = {f"n{i}": {"rack": str(i % 2)} for i in range(3)}
    rack = resource_slice("rack", [device("gpu-0", memory=40)], pool="rack", node_selector=RACK_0)
    slices = [
        node_slice("n0", 40, 16),
        node_slice("n1", 40),
        node_slice("n2", 16, 16),
        node_slice("n3", 40),
        rack,
    ]
    world = World(nodes, slices, capacity=3)
    reserved: list[tuple[CycleState, Pod, str]] = []
    written: list[dict] = []
    versions = 10
    for kind, shape, node, pick in ops:
        pod = world.pod(SHAPES[shape])
        state, found = world.batch(pod)
        assert found == world.fresh(pod), (kind, shape)
        name = f"n{node}"
        present = name in found
        if kind == "reserve" and isinstance(found.get(name), list):
            assert world.plugin.reserve(state, pod, name) is None
            reserved.append((state, pod, name))
        elif kind == "unreserve" and reserved:
            world.plugin.unreserve(*reserved.pop(pick % len(reserved)))
        elif kind == "write" and reserved:
            done, _, _ = reserved.pop(pick % len(reserved))
            answer = world.written(done, str(100 + pick))
            world.plugin.tracker.written(answer)
            written.append(answer)
        elif kind == "echo" and written:
            world.handle.lister("resourceclaims").put(written.pop(pick % len(written)))
        elif kind == "delete":
            listed = [c for c in world.handle.lister("resourceclaims").list() if c.get("status")]
            if listed:
                world.handle.lister("resourceclaims").delete(claim_key(listed[pick % len(listed)]))
        elif kind == "relabel" and present:
            world.relabel(name, {"rack": str(pick % 2)})
        elif kind == "slice":
            versions += 1
            world.handle.lister("resourceslices").put(
                node_slice(name, 40 if pick % 2 else 16, version=versions)
            )
        elif kind == "remove" and present and len(found) > 1:
            world.remove(name)
        elif kind == "add":  # a present node is replaced: removed, then added again in its slot
            if present:
                world.remove(name)
            world.add(name, {"rack": str(pick % 2)})
        elif kind == "rule":  # the node's first device tainted, or untainted
            rules = world.handle.lister("devicetaintrules")
            if pick % 2:
                rules.put(device_taint_rule(name, BROKEN_TAINT, {"pool": name, "device": "gpu-0"}))
            else:
                rules.delete(name)
        elif kind == "class":  # the class narrowed to big GPUs, or widened again
            selectors = (
                (f'device.driver == "{DRIVER}"', BIG) if pick % 2 else (f'device.driver == "{DRIVER}"',)
            )
            world.handle.lister("deviceclasses").put(device_class("gpu", *selectors))
    pod = world.pod(SHAPES[0])
    assert world.batch(pod)[1] == world.fresh(pod)
