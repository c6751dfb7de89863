"""The nodes with nominated pods added that the search keeps across cycles: given again only
while the node and the nominated pods are the same, and always what a fresh copy would be."""

from __future__ import annotations

import random

from scheduler.framework import NodeInfo
from scheduler.runtime.nominated import NominatedViews
from scheduler.testing.builders import make_node, make_pod


def summary(info: NodeInfo) -> tuple[object, ...]:
    """What filters read of a node: its pods, what they request, their ports and claims."""
    return (
        tuple(info.pods),
        info.requested.milli_cpu,
        info.requested.memory,
        info.non_zero_requested.milli_cpu,
        {key: frozenset(ips) for key, ips in info.used_ports.items()},
        dict(info.pvc_ref_counts),
    )


def fresh(info: NodeInfo, nominated: list) -> NodeInfo:
    copied = info.clone()
    for pod in nominated:
        copied.add_pod(pod)
    return copied


def test_a_kept_copy_is_given_while_the_node_and_the_pods_stand() -> None:
    info = NodeInfo(make_node("n", cpu="8"))
    info.add_pod(make_pod("placed", node_name="n", requests={"cpu": "1"}))
    nominated = [make_pod("preemptor", requests={"cpu": "2"}, priority=100)]
    views = NominatedViews()

    first = views.of(info, nominated)
    assert views.of(info, list(nominated)) is first  # the same pods, another list
    assert summary(first) == summary(fresh(info, nominated)) and "preemptor" not in str(tuple(info.pods))

    again = [make_pod("preemptor", requests={"cpu": "2"}, priority=100)]  # a new version of the pod
    assert views.of(info, again) is not first
    info.add_pod(make_pod("late", node_name="n", requests={"cpu": "1"}))  # the node changed
    changed = views.of(info, again)
    assert summary(changed) == summary(fresh(info, again))
    assert views.of(info.clone(), again) is not changed  # another NodeInfo object: copied afresh


def test_keep_only_forgets_nodes_without_nominations() -> None:
    views = NominatedViews()
    nominated = [make_pod("p", requests={"cpu": "1"})]
    for name in ("a", "b", "c"):
        views.of(NodeInfo(make_node(name)), nominated)
    views.keep_only({"b"})
    assert len(views) == 1


def test_random_changes_always_give_what_a_fresh_copy_would() -> None:
    rng = random.Random(11)
    infos = {name: NodeInfo(make_node(name, cpu="64")) for name in ("a", "b")}
    pods = [
        make_pod(f"p{i}", requests={"cpu": f"{rng.choice([100, 500])}m"}, host_ports=[(8080 + i % 2, "TCP")])
        for i in range(8)
    ]
    views = NominatedViews()
    nominated: dict[str, list] = {"a": [], "b": []}
    for _ in range(400):
        name = rng.choice(("a", "b"))
        step = rng.random()
        if step < 0.3:
            infos[name].add_pod(rng.choice(pods))
        elif step < 0.5 and infos[name].pods:
            infos[name].remove_pod(rng.choice(list(infos[name].pods)))
        elif step < 0.7:
            nominated[name] = rng.sample(pods, rng.randint(1, 3))
        elif step < 0.75:
            infos[name] = infos[name].clone()
        view = views.of(infos[name], nominated[name])
        assert summary(view) == summary(fresh(infos[name], nominated[name]))
