"""The changes explain suggests for a pending pod, each checked against the real filters."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cluster import pod_manifest
from tests.support.explain import kubeconfig, run_explain


async def suggestions_for(cluster, capsys, tmp_path, manifest: dict[str, Any]) -> list[str]:
    await cluster.create("pods", manifest)
    name = manifest["metadata"]["name"]
    code, answer, _ = await run_explain(
        capsys, name, "--kubeconfig", kubeconfig(cluster, tmp_path), "-o", "json"
    )
    assert code == 0 and answer["chosen"] == "", answer
    return answer["suggestions"]


async def test_resource_the_largest_request_that_fits_and_where(cluster, capsys, tmp_path):
    # free CPU: small nodes 2, big nodes 1 (fillers), gpu 8 but tainted
    found = await suggestions_for(cluster, capsys, tmp_path, pod_manifest("wide", cpu="3"))
    assert found == [
        "fits 2 node(s) with cpu <= 2",
        "needs a toleration for dedicated=gpu:NoSchedule (it then fits 1 node(s))",
    ]


async def test_memory_is_shown_in_binary_units(cluster, capsys, tmp_path):
    manifest = pod_manifest("fat", cpu="100m", memory="20Gi", nodeSelector={"disk": "ssd"})
    found = await suggestions_for(cluster, capsys, tmp_path, manifest)
    assert "fits 2 node(s) with memory <= 15Gi" in found  # 16Gi less the fillers' 64Mi, rounded down


async def test_taint_names_the_toleration_and_the_nodes_it_opens(cluster, capsys, tmp_path):
    manifest = pod_manifest("trainer", cpu="6", nodeSelector={"gpu": "true"})
    found = await suggestions_for(cluster, capsys, tmp_path, manifest)
    assert found == [
        "needs a toleration for dedicated=gpu:NoSchedule (it then fits 1 node(s))",
        "only 1 node(s) have label gpu=true",
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"nodeSelector": {"disk": "nvme"}}, "no node has label disk=nvme"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["mars"]}]}
                            ]
                        }
                    }
                }
            },
            "no node matches node affinity zone In (mars)",
        ),
    ],
)
async def test_selector_and_node_affinity_nothing_has(cluster, capsys, tmp_path, spec, expected):
    found = await suggestions_for(cluster, capsys, tmp_path, pod_manifest("lost", **spec))
    assert found == [expected]


async def test_pod_affinity_no_pod_matches(cluster, capsys, tmp_path):
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    manifest = pod_manifest(
        "near-db", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )
    found = await suggestions_for(cluster, capsys, tmp_path, manifest)
    assert found == ["no running pod matches pod affinity app=db in namespace(s) default"]


async def test_pod_anti_affinity_counts_the_nodes_it_excludes(cluster, capsys, tmp_path):
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    for node in ("small-0000", "small-0001", "big-0000", "big-0001"):
        await cluster.create(
            "pods",
            pod_manifest(f"web-{node}", cpu="10m", labels={"app": "web"}, scheduler_name="x", nodeName=node),
        )
    manifest = pod_manifest(
        "lonely", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )
    found = await suggestions_for(cluster, capsys, tmp_path, manifest)
    assert found == [
        "needs a toleration for dedicated=gpu:NoSchedule (it then fits 1 node(s))",
        "pod anti-affinity (app=web per kubernetes.io/hostname) excludes 4 node(s): pods it repels run there",
    ]
