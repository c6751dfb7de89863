from __future__ import annotations

import pytest

from scheduler.api import Pod
from scheduler.framework import CycleState
from scheduler.plugins.imagelocality import ImageLocality, calculate_priority, normalized_image_name
from scheduler.testing.builders import (
    FakeHandle,
    image_states,
    make_node,
    make_pod,
    per_node_and_batch_score,
    pod_dict,
    table_of,
)

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("registry.local:5000/app", "registry.local:5000/app:latest"),
        ("registry.local:5000/app:v2", "registry.local:5000/app:v2"),
    ],
)
def test_an_untagged_image_means_latest(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


@pytest.mark.parametrize(
    ("case", "summed", "containers", "expected"),
    [
        ("below the minimum threshold scores zero", 10 * MB, 1, 0),
        ("at the per-container maximum scores 100", 1000 * MB, 1, 100),
        ("above the maximum is capped", 5000 * MB, 2, 100),
        ("in between scales linearly", 170 * MB, 2, 7),
    ],
)
def test_calculate_priority(case: str, summed: int, containers: int, expected: int) -> None:
    assert calculate_priority(summed, containers) == expected


def run(pod_images: list[str], nodes: list) -> list[int]:
    cluster = table_of(nodes)
    plugin = ImageLocality(None, FakeHandle(cluster))
    pod = make_pod("incoming", images=pod_images)
    state = CycleState()
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch
    return per_node


def test_image_sizes_count_in_proportion_to_how_many_nodes_have_them() -> None:
    nodes = [
        make_node("a", images=[(["gcr.io/40:latest"], 40 * MB), (["gcr.io/300:latest"], 300 * MB)]),
        make_node("b", images=[(["gcr.io/250:latest"], 250 * MB)]),
    ]
    # node a: (40 + 300) MB x 1/2 spread = 170 MB -> 100 * 147 / 1977 = 7
    assert run(["gcr.io/40", "gcr.io/300"], nodes) == [7, 0]


def test_an_image_everywhere_still_scores_by_its_size() -> None:
    nodes = [make_node(n, images=[(["big:1"], 2000 * MB)]) for n in "ab"]
    assert run(["big:1"], nodes) == [100, 100]


def test_a_pod_whose_images_are_nowhere_scores_zero() -> None:
    assert run(["absent:1"], [make_node("a", images=[(["other:1"], 500 * MB)])]) == [0]


def test_batch_scores_follow_other_nodes_pulling_the_image() -> None:
    # A node's score depends on how many nodes hold the image: any node change must refresh it.
    nodes = [make_node("a", images=[(["app:1"], 900 * MB)]), make_node("b"), make_node("c")]
    cluster = table_of(nodes)
    plugin = ImageLocality(None, FakeHandle(cluster))
    pod = make_pod("incoming", images=["app:1"])

    def scores() -> list[int]:
        state = CycleState()
        plugin.pre_score(state, pod, cluster.infos)
        per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
        assert per_node == batch
        return batch

    before = scores()
    cluster.info("b").node = make_node("b", images=[(["app:1"], 900 * MB)])
    cluster.table.sync_row(cluster.info("b"))
    for info, states in zip(cluster.infos, image_states([info.node for info in cluster.infos]), strict=True):
        info.image_states = states  # the cache keeps every node's image counts in step
    after = scores()
    assert after[0] > before[0], "a's image is now on two of three nodes: it weighs more"
    assert after[1] == after[0] and after[2] == 0


def test_image_volumes_count_towards_the_sum_but_not_the_container_count() -> None:
    raw = pod_dict("incoming", images=["app:1"])
    raw["spec"]["volumes"] = [
        {"name": "models", "image": {"reference": "models/llm", "pullPolicy": "IfNotPresent"}},
        {"name": "scratch", "emptyDir": {}},
    ]
    pod = Pod.from_dict(raw)
    cluster = table_of([make_node("a", images=[(["models/llm:latest"], 500 * MB)])])
    plugin = ImageLocality(None, FakeHandle(cluster))
    state = CycleState()
    plugin.pre_score(state, pod, cluster.infos)
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    # one container: 100 * (500 - 23) / (1000 - 23) = 48 (the volume does not widen the range)
    assert per_node == batch == [48]
