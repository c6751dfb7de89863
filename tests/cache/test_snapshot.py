"""Snapshot order (zones interleaved), incremental refresh, and image num_nodes."""

from __future__ import annotations

import pytest

from scheduler.cache import Cache, NodeTree, zone_key
from scheduler.testing import make_node, make_pod, required_pod_affinity

# the required (anti-)affinity terms the cache tracks per node
AFFINITY = required_pod_affinity({"app": "x"})
ANTI_AFFINITY = required_pod_affinity({"app": "x"}, anti=True)


def names(cache: Cache) -> list[str]:
    return [info.name for info in cache.snapshot().node_infos()]


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ([("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", "c"), ("b2", "b")], ["a1", "b1", "c1", "a2", "b2"]),
        ([("x", ""), ("y", ""), ("z", "")], ["x", "y", "z"]),
        ([("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")], ["a1", "b1", "a2", "a3"]),
        ([("n", ""), ("a1", "a"), ("n2", "")], ["n", "a1", "n2"]),
    ],
    ids=["three zones", "no zones", "uneven zones", "zoneless nodes form their own zone"],
)
def test_snapshot_lists_nodes_round_robin_across_zones(nodes, expected):
    cache = Cache()
    for name, zone in nodes:
        cache.add_node(make_node(name, zone=zone))
    assert names(cache) == expected
    snap = cache.snapshot()
    assert [cache.table.info(int(slot)).name for slot in snap.order] == expected
    assert len(snap) == len(expected)


def test_zone_key_combines_region_and_zone_and_accepts_legacy_labels():
    assert zone_key(make_node("n")) == ""
    assert zone_key(make_node("n", zone="z1", region="r1")) == "r1:\x00:z1"
    legacy = make_node("n", extra=None)
    legacy.labels = {"failure-domain.beta.kubernetes.io/zone": "z1"}
    assert zone_key(legacy) == ":\x00:z1"


def test_removing_the_last_node_of_a_zone_drops_the_zone_from_the_rotation():
    cache = Cache()
    for name, zone in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("c1", "c")]:
        cache.add_node(make_node(name, zone=zone))
    cache.remove_node(make_node("b1", zone="b"))
    assert names(cache) == ["a1", "c1", "a2"]


def test_a_zone_change_moves_the_node_to_the_end_of_its_new_zone():
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        cache.add_node(make_node(name, zone=zone))
    cache.update_node(make_node("a1", zone="a"), make_node("a1", zone="b"))
    assert names(cache) == ["a2", "b1", "a1"]


def test_the_snapshot_is_one_object_refreshed_only_when_something_changed():
    cache = Cache()
    cache.add_node(make_node("n1", zone="a"))
    cache.add_node(make_node("n2", zone="b"))
    first = cache.snapshot()
    node_list, order = first.node_infos(), first.order
    affinity = first.have_pods_with_required_anti_affinity()

    # Nothing changed: nothing rebuilt.
    assert cache.snapshot() is first
    assert first.node_infos() is node_list and first.order is order

    # A pod without affinity changes no list.
    cache.add_pod(make_pod("plain", uid="uid-plain", requests={"cpu": "1"}, node_name="n1"))
    cache.snapshot()
    assert first.node_infos() is node_list
    assert first.have_pods_with_required_anti_affinity() is affinity

    # A node update that keeps the zone keeps the order.
    cache.update_node(make_node("n2", zone="b"), make_node("n2", zone="b", cpu="32"))
    cache.snapshot()
    assert first.node_infos() is node_list

    # A pod with anti-affinity flips n2's membership: the affinity lists are rebuilt, not the order.
    anti = make_pod("anti", uid="uid-anti", affinity=ANTI_AFFINITY, node_name="n2")
    cache.add_pod(anti)
    cache.snapshot()
    assert first.node_infos() is node_list
    assert [i.name for i in first.have_pods_with_required_anti_affinity()] == ["n2"]
    assert [i.name for i in first.have_pods_with_affinity()] == ["n2"]

    # A second anti-affinity pod on the same node changes no membership.
    lists = first.have_pods_with_required_anti_affinity()
    cache.add_pod(make_pod("anti2", uid="uid-anti2", affinity=ANTI_AFFINITY, node_name="n2"))
    cache.snapshot()
    assert first.have_pods_with_required_anti_affinity() is lists

    # A new node rebuilds the order.
    cache.add_node(make_node("n3", zone="a"))
    cache.snapshot()
    assert first.node_infos() is not node_list
    assert [i.name for i in first.node_infos()] == ["n1", "n2", "n3"]


def test_the_snapshot_sees_assumed_pods_without_copying():
    cache = Cache()
    cache.add_node(make_node("n1"))
    snap = cache.snapshot()
    info = snap.get("n1")
    cache.assume_pod(make_pod("a", uid="uid-a", requests={"cpu": "1"}, node_name="n1"))
    assert snap.get("n1") is info
    assert "uid-a" in info.pods
    assert snap.get("missing") is None


def test_affinity_lists_follow_the_node_order():
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        cache.add_node(make_node(name, zone=zone))
    for node in ("a2", "b1", "a1"):
        cache.add_pod(make_pod(f"p-{node}", uid=f"uid-p-{node}", affinity=AFFINITY, node_name=node))
    snap = cache.snapshot()
    assert [i.name for i in snap.have_pods_with_affinity()] == ["a1", "b1", "a2"]
    assert snap.have_pods_with_required_anti_affinity() == []


def test_node_tree_generation_moves_only_on_real_changes():
    tree = NodeTree()
    tree.add(make_node("n1", zone="a"))
    generation = tree.generation
    tree.add(make_node("n1", zone="a"))
    tree.update(make_node("n1", zone="a"))
    tree.remove("unknown")
    assert tree.generation == generation
    tree.update(make_node("n1", zone="b"))
    assert tree.generation != generation


# ---------------------------------------------------------------------------- images


def test_image_num_nodes_counts_the_nodes_having_the_image_as_they_come_and_go():
    cache = Cache()
    shared = (["registry/app:1", "registry/app@sha256:abc"], 300)
    cache.add_node(make_node("n1", images=[shared, (["only-n1:1"], 10)]))
    cache.add_node(make_node("n2", images=[shared]))
    n1 = cache.get_node_info("n1")
    n2 = cache.get_node_info("n2")
    assert n1.image_states["registry/app:1"].num_nodes == 2
    assert n1.image_states["registry/app@sha256:abc"].num_nodes == 2
    assert n1.image_states["only-n1:1"].num_nodes == 1
    assert n1.image_states["registry/app:1"].size == 300
    assert n2.image_states["registry/app:1"] is n1.image_states["registry/app:1"]

    cache.add_node(make_node("n3", images=[shared]))
    assert n1.image_states["registry/app:1"].num_nodes == 3

    cache.remove_node(make_node("n2"))
    assert n1.image_states["registry/app:1"].num_nodes == 2

    # n1 drops the image in a status update.
    cache.update_node(make_node("n1"), make_node("n1", images=[(["only-n1:1"], 10)]))
    assert "registry/app:1" not in n1.image_states
    assert cache.get_node_info("n3").image_states["registry/app:1"].num_nodes == 1


def test_an_image_gone_from_every_node_starts_counting_afresh():
    cache = Cache()
    cache.add_node(make_node("n1", images=[(["img"], 5)]))
    old_summary = cache.get_node_info("n1").image_states["img"]
    cache.remove_node(make_node("n1"))
    assert old_summary.num_nodes == 0
    cache.add_node(make_node("n2", images=[(["img"], 7)]))
    summary = cache.get_node_info("n2").image_states["img"]
    assert (summary.size, summary.num_nodes) == (7, 1)
