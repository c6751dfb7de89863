from __future__ import annotations

import pytest

from scheduler.config.args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from scheduler.framework import CycleState
from scheduler.plugins.noderesources import BalancedAllocation
from scheduler.testing.builders import make_node, make_pod, per_node_and_batch_score, table_of

CPU_MEM_EPH = NodeResourcesBalancedAllocationArgs(
    [ResourceSpec("cpu"), ResourceSpec("memory"), ResourceSpec("ephemeral-storage")]
)


# Since v1.36 (kubernetes#135573) the score is the change in balance the pod brings:
# 50 + (50 + balance_with_pod - balance_without_pod) // 2, where a balance is
# 100 * (1 - std of the utilisation fractions). No change scores 75.
@pytest.mark.parametrize(
    ("case", "args", "pod_requests", "node", "existing", "expected"),
    [
        # fractions 0.25 and 0.2: std 0.025 -> 97 with the pod, 100 on the empty node -> 73
        ("two resources use half their difference", None, {"cpu": "1", "memory": "2000"}, {}, [], 73),
        ("a pod that keeps the node even scores 75", None, {"cpu": "2", "memory": "5000"}, {}, [], 75),
        # with the pod cpu 0.5, memory 0 -> 75; before it cpu 0.25 -> 87
        ("existing pods count with their real requests", None, {"cpu": "1"}, {}, [{"cpu": "1"}], 69),
        # before: cpu 0.5, memory 0 -> 75; the pod's memory evens it out: 100
        ("a pod that evens out the node scores above 75", None, {"memory": "5000"}, {}, [{"cpu": "2"}], 87),
        # cpu 8/4 is capped at 1, memory 0.2 -> std 0.4 -> 60
        ("fractions are capped at one", None, {"cpu": "8", "memory": "2000"}, {}, [], 55),
        # fractions 0.25, 0.2, 0.5: population std 0.1312 -> 86
        (
            "three resources use the standard deviation",
            CPU_MEM_EPH,
            {"cpu": "1", "memory": "2000", "ephemeral-storage": "5000"},
            {"ephemeral_storage": "10000"},
            [],
            68,
        ),
        # the node has no ephemeral storage: only cpu and memory count
        (
            "a resource the node lacks is left out",
            CPU_MEM_EPH,
            {"cpu": "1", "memory": "2000", "ephemeral-storage": "5000"},
            {},
            [],
            73,
        ),
    ],
)
def test_score(case: str, args, pod_requests: dict, node: dict, existing: list, expected: int) -> None:
    plugin = BalancedAllocation(args)
    pod = make_pod("incoming", requests=pod_requests)
    state = CycleState()
    pods = [make_pod(f"e{i}", node_name="n", requests=r) for i, r in enumerate(existing)]
    cluster = table_of([make_node("n", cpu="4", memory="10000", **node)], pods)
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch == [expected]


def test_pre_score_skips_best_effort_pods() -> None:
    status = BalancedAllocation().pre_score(CycleState(), make_pod(), [])
    assert status is not None and status.is_skip


def test_a_node_kept_as_balanced_scores_75_not_100() -> None:
    # kube-scheduler v1.36.2's scores for the 2nd 1-cpu/1Gi pod on nodes of 2, 4 and 8 cpu (8Gi
    # each) when the 8-cpu node holds the first: the old formula gave that node 100 (and the pod),
    # now an unchanged balance scores 75 and NodeResourcesFit sends the pod to the 4-cpu node.
    plugin = BalancedAllocation()
    pod = make_pod("p1", requests={"cpu": "1", "memory": "1Gi"})
    placed = make_pod("p0", node_name="c", requests={"cpu": "1", "memory": "1Gi"})
    cluster = table_of(
        [make_node(name, cpu=cpu, memory="8Gi") for name, cpu in (("a", "2"), ("b", "4"), ("c", "8"))],
        [placed],
    )
    state = CycleState()
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch == [65, 71, 75]


def test_best_effort_means_no_request_among_the_configured_resources() -> None:
    # upstream's isBestEffortPod looks at the configured resources only (cpu and memory by default)
    pod = make_pod(requests={"ephemeral-storage": "1Gi", "example.com/gpu": "1"})
    status = BalancedAllocation().pre_score(CycleState(), pod, [])
    assert status is not None and status.is_skip
