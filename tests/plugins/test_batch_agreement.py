"""The batch forms of the hot plugins must agree with their per-node forms on any cluster."""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import FakeHandle, expand_verdicts, make_node, make_pod, table_of

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
from scheduler.framework import CycleState
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import BalancedAllocation, Fit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration

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


def random_cluster(rng: random.Random, count: int):
    nodes = []
    for i in range(count):
        extra = {GPU: rng.choice([1, 2, 4])} if rng.random() < 0.3 else None
        nodes.append(
            make_node(
                f"n{i}",
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
        )
    pods = []
    for j in range(count * 2):
        node = rng.choice(nodes)
        pods.append(
            make_pod(
                f"e{j}",
                node_name=node.name,
                requests=random_requests(rng),
                host_ports=[(rng.choice([80, 443]), "TCP", rng.choice(["0.0.0.0", "10.0.0.1"]))]
                if rng.random() < 0.15
                else (),
            )
        )
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


@pytest.mark.parametrize("seed", range(12))
def test_batch_and_per_node_forms_agree_on_random_clusters(seed: int) -> None:
    rng = random.Random(seed)
    count = 40
    cluster = random_cluster(rng, count)
    handle = FakeHandle(cluster)
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
    rejections = 0
    for _ in range(15):
        pod = random_pod(rng, count)
        # a shuffled subset of the slots, as the framework passes after PreFilter narrowing
        chosen = rng.sample(cluster.infos, rng.randint(1, count))
        slots = np.array([info.slot for info in chosen], dtype=np.int64)
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
    assert rejections > 0, "the random clusters should exercise rejections"
