"""The batch forms of the hot plugins must agree with their per-node forms on any cluster."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.config.args import (
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler.framework import CycleState, NodeInfo
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import BalancedAllocation, Fit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.testing.builders import (
    Cluster,
    FakeHandle,
    FakeSnapshot,
    expand_verdicts,
    image_states,
    make_node,
    make_pod,
    table_of,
)

GPU = "example.com/gpu"
ZONES = ["z1", "z2", "z3"]
TAINTS = [
    ("dedicated", "gpu", "NoSchedule"),
    ("dedicated", "db", "NoExecute"),
    ("spot", "true", "PreferNoSchedule"),
    ("arch", "arm", "PreferNoSchedule"),
]
IMAGES = [("app:1", 300), ("db:2", 800), ("tiny:1", 5)]


def random_requests(rng: random.Random) -> dict:
    requests = {}
    if rng.random() < 0.8:
        requests["cpu"] = f"{rng.choice([0, 100, 250, 500, 1000, 2500])}m"
    if rng.random() < 0.8:
        requests["memory"] = f"{rng.choice([0, 64, 512, 2048, 6000])}Mi"
    if rng.random() < 0.2:
        requests["ephemeral-storage"] = f"{rng.choice([1, 5, 30])}Gi"
    if rng.random() < 0.2:
        requests[GPU] = str(rng.choice([1, 2]))
    return requests


def random_node(rng: random.Random, name: str):
    extra = {GPU: rng.choice([1, 2, 4])} if rng.random() < 0.3 else None
    return make_node(
        name,
        cpu=rng.choice(["1", "2", "4", "8"]),
        memory=rng.choice(["2Gi", "8Gi", "16Gi"]),
        pods=rng.choice([3, 10, 110]),
        ephemeral_storage=rng.choice([None, "20Gi", "100Gi"]),
        extra=extra,
        labels={"zone": rng.choice(ZONES), **({"disk": "ssd"} if rng.random() < 0.5 else {})},
        taints=rng.sample(TAINTS, rng.choice([0, 0, 1, 2])),
        unschedulable=rng.random() < 0.1,
        images=[([name], size * 1024 * 1024) for name, size in IMAGES if rng.random() < 0.4],
    )


def random_existing_pod(rng: random.Random, name: str, node_name: str):
    return make_pod(
        name,
        node_name=node_name,
        requests=random_requests(rng),
        host_ports=[(rng.choice([80, 443]), "TCP", rng.choice(["0.0.0.0", "10.0.0.1"]))]
        if rng.random() < 0.15
        else (),
    )


def random_cluster(rng: random.Random, count: int):
    nodes = [random_node(rng, f"n{i}") for i in range(count)]
    pods = [random_existing_pod(rng, f"e{j}", rng.choice(nodes).name) for j in range(count * 2)]
    return table_of(nodes, pods)


def random_pod(rng: random.Random, count: int):
    kwargs: dict = {"requests": random_requests(rng)}
    if rng.random() < 0.3:
        kwargs["node_selector"] = {"zone": rng.choice(ZONES)}
    if rng.random() < 0.3:
        kwargs["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "disk", "operator": rng.choice(["Exists", "DoesNotExist"])}
                            ]
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": rng.randint(1, 100),
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": [z]}]
                        },
                    }
                    for z in rng.sample(ZONES, 2)
                ],
            }
        }
    if rng.random() < 0.5:
        key, value, effect = rng.choice(TAINTS)
        kwargs["tolerations"] = [
            {"key": key, "operator": "Equal", "value": value, "effect": rng.choice([effect, ""])}
        ]
    if rng.random() < 0.3:
        kwargs["host_ports"] = [(rng.choice([80, 443, 8080]), "TCP")]
    if rng.random() < 0.1:
        kwargs["node_name"] = f"n{rng.randrange(count)}"
    if rng.random() < 0.1:
        kwargs["tolerations"] = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    kwargs["images"] = rng.sample(
        [name.split(":")[0] + ":" + name.split(":")[1] for name, _ in IMAGES], rng.randint(1, 2)
    )
    return make_pod("incoming", **kwargs)


ADDED = NodeAffinityArgs(
    added_affinity={
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z3"]}]}
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 7, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
        ],
    }
)
FIT_STRATEGIES = [
    NodeResourcesFitArgs(),
    NodeResourcesFitArgs(
        ignored_resource_groups=["example.com"],
        scoring_strategy=ScoringStrategy(
            MOST_ALLOCATED, [ResourceSpec("cpu", 2), ResourceSpec("memory", 1), ResourceSpec(GPU, 3)]
        ),
    ),
    NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            REQUESTED_TO_CAPACITY_RATIO,
            [
                ResourceSpec("cpu", 1),
                ResourceSpec("memory", 1),
                ResourceSpec("ephemeral-storage", 1),
                ResourceSpec(GPU, 2),
            ],
            [
                UtilizationShapePoint(0, 10),
                UtilizationShapePoint(40, 2),
                UtilizationShapePoint(80, 7),
                UtilizationShapePoint(100, 3),
            ],
        )
    ),
]
BALANCED = [
    NodeResourcesBalancedAllocationArgs(),
    NodeResourcesBalancedAllocationArgs(
        [ResourceSpec("cpu"), ResourceSpec("memory"), ResourceSpec("ephemeral-storage"), ResourceSpec(GPU)]
    ),
]


def hot_plugins(handle: FakeHandle) -> tuple[list, list]:
    """(filters, scorers): every batch plugin in every configuration the tests cover."""
    filters = [
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(),
        NodeAffinity(None, handle),
        NodeAffinity(ADDED, handle),
        NodePorts(),
    ]
    filters += [Fit(args) for args in FIT_STRATEGIES]
    scorers = [
        TaintToleration(),
        NodeAffinity(None, handle),
        NodeAffinity(ADDED, handle),
        ImageLocality(None, handle),
    ]
    scorers += [Fit(args) for args in FIT_STRATEGIES] + [BalancedAllocation(args) for args in BALANCED]
    return filters, scorers


def assert_forms_agree(filters, scorers, cluster, handle, pod, chosen, seed) -> int:
    """Both forms of every plugin over the ``chosen`` nodes; returns how many rejections were seen."""
    slots = np.array([info.slot for info in chosen], dtype=np.int64)
    rejections = 0
    for plugin in filters:
        state = CycleState()
        pre_filter = getattr(plugin, "pre_filter", None)
        if pre_filter is not None:
            _, status = pre_filter(state, pod, handle.snapshot)
            if status is not None and status.is_skip:
                continue
        per_node = [plugin.filter(state, pod, info) for info in chosen]
        batch = expand_verdicts(plugin.filter_nodes(state, pod, cluster.table, slots), len(slots))
        assert batch == per_node, f"{plugin.name} disagrees for seed {seed}"
        rejections += sum(s is not None for s in per_node)
    for plugin in scorers:
        state = CycleState()
        status = plugin.pre_score(state, pod, chosen)
        if status is not None and status.is_skip:
            continue
        per_node_scores = [plugin.score(state, pod, info) for info in chosen]
        batch_scores = plugin.score_nodes(state, pod, cluster.table, slots)
        assert batch_scores.dtype == np.int64
        assert batch_scores.tolist() == per_node_scores, f"{plugin.name} disagrees for seed {seed}"
    return rejections


@pytest.mark.parametrize("seed", range(12))
def test_batch_and_per_node_forms_agree_on_random_clusters(seed: int) -> None:
    rng = random.Random(seed)
    count = 40
    cluster = random_cluster(rng, count)
    handle = FakeHandle(cluster)
    filters, scorers = hot_plugins(handle)
    rejections = 0
    for _ in range(15):
        pod = random_pod(rng, count)
        # a shuffled subset of the slots, as the framework passes after PreFilter narrowing
        chosen = rng.sample(cluster.infos, rng.randint(1, count))
        rejections += assert_forms_agree(filters, scorers, cluster, handle, pod, chosen, seed)
    assert rejections > 0, "the random clusters should exercise rejections"


class LiveHandle(FakeHandle):
    """A FakeHandle whose snapshot follows the cluster's node list as it changes."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self._cluster = cluster

    @property
    def snapshot(self) -> FakeSnapshot:
        return FakeSnapshot(self._cluster)


def change_cluster(rng: random.Random, cluster: Cluster, serial: int) -> None:
    """What the cache does between cycles: replace some Node objects, remove and add nodes, place
    and remove pods, and keep every node's image counts in step with the node list."""
    infos = cluster.infos
    for info in rng.sample(infos, len(infos) // 5):
        info.node = random_node(rng, info.name)
        cluster.table.sync_row(info)
    for info in rng.sample(infos, rng.randint(0, 2)):
        cluster.table.remove(info)
        infos.remove(info)
    for i in range(rng.choice([0, 1, 30])):  # 30 new nodes outgrow the table's capacity
        info = NodeInfo(random_node(rng, f"n{serial}-{i}"))
        cluster.table.add(info)
        infos.append(info)
    for j in range(10):
        info = rng.choice(infos)
        if info.pods and rng.random() < 0.3:
            info.remove_pod(next(iter(info.pods)))
        else:
            info.add_pod(random_existing_pod(rng, f"e{serial}-{j}", info.name))
        cluster.table.sync_row(info)
    for info, states in zip(infos, image_states([info.node for info in infos]), strict=True):
        info.image_states = states


@pytest.mark.parametrize("seed", range(6))
def test_batch_forms_keep_agreeing_while_the_cluster_changes_under_them(seed: int) -> None:
    rng = random.Random(100 + seed)
    count = 30
    cluster = random_cluster(rng, count)
    handle = FakeHandle(cluster)
    handle = LiveHandle(cluster)
    filters, scorers = hot_plugins(handle)  # one set of plugin instances: their memos outlive changes
    pods = [random_pod(rng, count) for _ in range(4)]  # pods of a few workloads, seen again and again
    for serial in range(8):
        for pod in pods:
            everything = list(cluster.infos)
            rng.shuffle(everything)
            for chosen in (everything, everything[: rng.randint(1, len(everything))]):
                assert_forms_agree(filters, scorers, cluster, handle, pod, chosen, seed)
        change_cluster(rng, cluster, serial)
