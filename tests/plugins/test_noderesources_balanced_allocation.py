from __future__ import annotations

import pytest
from builders import make_node, make_pod, per_node_and_batch_score, table_of

from scheduler.config.args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from scheduler.framework import CycleState
from scheduler.plugins.noderesources import BalancedAllocation

CPU_MEM_EPH = NodeResourcesBalancedAllocationArgs(
    [ResourceSpec("cpu"), ResourceSpec("memory"), ResourceSpec("ephemeral-storage")]
)


@pytest.mark.parametrize(
    ("case", "args", "pod_requests", "node", "existing", "expected"),
    [
        # fractions 0.25 and 0.2: std 0.025 -> 97
        ("two resources use half their difference", None, {"cpu": "1", "memory": "2000"}, {}, [], 97),
        ("equal fractions score 100", None, {"cpu": "2", "memory": "5000"}, {}, [], 100),
        # existing 1 cpu + 1 cpu = 0.5, memory 0 -> std 0.25 -> 75
        ("existing pods count with their real requests", None, {"cpu": "1"}, {}, [{"cpu": "1"}], 75),
        # cpu 8/4 is capped at 1, memory 0.2 -> std 0.4 -> 60
        ("fractions are capped at one", None, {"cpu": "8", "memory": "2000"}, {}, [], 60),
        # fractions 0.25, 0.2, 0.5: population std 0.1312 -> 86
        (
            "three resources use the standard deviation",
            CPU_MEM_EPH,
            {"cpu": "1", "memory": "2000", "ephemeral-storage": "5000"},
            {"ephemeral_storage": "10000"},
            [],
            86,
        ),
        # the node has no ephemeral storage: only cpu and memory count
        (
            "a resource the node lacks is left out",
            CPU_MEM_EPH,
            {"cpu": "1", "memory": "2000", "ephemeral-storage": "5000"},
            {},
            [],
            97,
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
