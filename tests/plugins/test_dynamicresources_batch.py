"""DynamicResources' batch Filter gives every node the per-node form's answer, on random clusters."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.api import Pod
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.testing import make_node
from scheduler.testing.builders import FakeHandle, expand_verdicts, pod_dict, table_of
from scheduler.testing.dra import allocated, claim, device, device_class, request, resource_slice

CLASSES = [
    device_class("gpu", 'device.driver == "gpu.example.com"'),
    device_class("big", 'device.attributes["gpu.example.com"].memory >= 32'),
]
SELECTORS = ["", 'device.attributes["gpu.example.com"].memory >= 24']


def random_cluster(rng: random.Random, count: int) -> tuple[list, list[dict], list[dict]]:
    """Nodes, their slices (some nodes have none) and claims holding some of their devices."""
    nodes = [make_node(f"n{i}", labels={"zone": rng.choice(["a", "b"])}) for i in range(count)]
    slices, held = [], []
    for node in nodes:
        if rng.random() < 0.2:
            continue
        names = [f"gpu-{j}" for j in range(rng.randint(1, 4))]
        slices.append(
            resource_slice(
                f"{node.name}-slice",
                [device(name, memory=rng.choice([16, 40])) for name in names],
                node=node.name,
            )
        )
        for name in names:
            if rng.random() < 0.3:
                held.append(allocated(claim(f"held-{node.name}-{name}"), node.name, name))
    return nodes, slices, held


def random_pod(rng: random.Random, count: int) -> tuple[Pod, list[dict]]:
    """A pod with one or two claims: to allocate (of some count, class and selector), or one
    allocated already with a node selector, which only some nodes match."""
    raw = pod_dict("incoming")
    raw["metadata"]["uid"] = "uid-incoming"
    claims, refs = [], []
    for k in range(rng.randint(1, 2)):
        name = f"c{k}"
        if rng.random() < 0.2:
            node = f"n{rng.randrange(count)}"
            made = allocated(claim(name), node, "gpu-0", reserved=("uid-incoming",))
            made["status"]["allocation"]["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
        else:
            selector = rng.choice(SELECTORS)
            selectors = (selector,) if selector else ()
            made = claim(name, request("r", rng.choice(["gpu", "big"]), *selectors, count=rng.randint(1, 3)))
        claims.append(made)
        refs.append({"name": name, "resourceClaimName": name})
    raw["spec"]["resourceClaims"] = refs
    return Pod.from_dict(raw), claims


def plugin_for(nodes: list, slices: list[dict], claims: list[dict]) -> DynamicResources:
    """A plugin of its own (its own allocation memo), so neither form answers from the other's."""
    listers: dict[str, Any] = {"resourceclaims": claims, "resourceslices": slices, "deviceclasses": CLASSES}
    return DynamicResources(None, FakeHandle(table_of(nodes), listers=listers))


def described(status: Status | None) -> tuple[Code, str] | None:
    return None if status is None else (status.code, status.message())


@pytest.mark.parametrize("seed", range(40))
def test_the_batch_form_answers_each_node_as_the_per_node_form(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(1, 12)
    nodes, slices, held = random_cluster(rng, count)
    pod, claims = random_pod(rng, count)
    table = table_of(nodes).table
    slots = np.flatnonzero(table.valid).astype(np.int64)
    rng.shuffle(slots)  # the search hands over any order

    per_node_plugin = plugin_for(nodes, slices, [*held, *claims])
    per_node_state = CycleState()
    _, status = per_node_plugin.pre_filter(per_node_state, pod, None)  # type: ignore[arg-type]
    assert status is None
    per_node = [per_node_plugin.filter(per_node_state, pod, table.infos[slot]) for slot in slots.tolist()]

    batch_plugin = plugin_for(nodes, slices, [*held, *claims])
    batch_state = CycleState()
    assert batch_plugin.pre_filter(batch_state, pod, None)[1] is None  # type: ignore[arg-type]
    batch = expand_verdicts(batch_plugin.filter_nodes(batch_state, pod, table, slots), len(slots))

    assert [described(s) for s in batch] == [described(s) for s in per_node]
    found, expected = batch_state.read("DynamicResources"), per_node_state.read("DynamicResources")
    assert {name: a.results() for name, a in found.by_node.items()} == {
        name: a.results() for name, a in expected.by_node.items()
    }
    assert found.unavailable == expected.unavailable


def test_a_pod_the_plugin_skips_passes_every_node() -> None:
    nodes, slices, _ = random_cluster(random.Random(1), 3)
    plugin = plugin_for(nodes, slices, [])
    table = table_of(nodes).table
    slots = np.flatnonzero(table.valid).astype(np.int64)
    assert plugin.filter_nodes(CycleState(), Pod.from_dict(pod_dict("plain")), table, slots) is None
