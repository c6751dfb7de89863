import re
from pathlib import Path

import pytest

from simcluster.nodes import TemplateError, build_nodes

EXAMPLE = Path(__file__).resolve().parents[2] / "simcluster" / "nodes-example.yaml"


def test_default_nodes_spread_round_robin_over_three_zones() -> None:
    nodes = build_nodes(4)
    assert [n["metadata"]["name"] for n in nodes] == ["node-0000", "node-0001", "node-0002", "node-0003"]
    assert [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes] == [
        "zone-a",
        "zone-b",
        "zone-c",
        "zone-a",
    ]
    labels = nodes[0]["metadata"]["labels"]
    assert labels["kubernetes.io/os"] == "linux" and labels["topology.kubernetes.io/region"] == "region-1"
    assert nodes[0]["status"]["capacity"] == {
        "cpu": "4",
        "memory": "16Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }


def test_the_shipped_example_template_builds_its_groups() -> None:
    nodes = {n["metadata"]["name"]: n for n in build_nodes(template=EXAMPLE)}
    assert len(nodes) == 11
    gpu = nodes["gpu-0001"]
    assert gpu["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert gpu["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert nodes["general-0000"]["status"]["allocatable"]["cpu"] == "7800m"
    assert nodes["general-0000"]["status"]["images"][0]["names"][1] == "nginx:1.27"
    assert nodes["cordoned-0000"]["spec"]["unschedulable"] is True


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"nodeGroups": [{"count": -1}]}, "nodeGroups[0].count"),
        ({"nodeGroups": [{"cpus": 3}]}, "unknown field(s) cpus"),
        ({"nodes": []}, "expected a list"),
    ],
)
def test_a_bad_template_is_rejected_with_the_field_named(template: dict, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        build_nodes(template=template)
