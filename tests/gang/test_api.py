"""The local endpoint serves scheduling.k8s.io/v1alpha2 Workload and PodGroup, with the checks a
scheduler relies on, and can leave the group version out."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.client.config import load_client_config
from scheduler.client.rest import KubeClient
from simcluster import SimCluster
from tests.support.gang import WORKLOAD_API, NewCluster, pod_group

BASE = "/apis/scheduling.k8s.io/v1alpha2"


def workload(templates: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": WORKLOAD_API,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"podGroupTemplates": templates},
    }


async def client_of(sim: SimCluster, tmp_path: Any) -> KubeClient:
    return KubeClient(await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig"))))


async def test_discovery_lists_workloads_and_podgroups(new_cluster: NewCluster, tmp_path: Any) -> None:
    sim = await new_cluster(nodes=1)
    client = await client_of(sim, tmp_path)
    try:
        response = await client.request("GET", BASE)
        assert response.status == 200
        names = {r["name"] for r in response.body["resources"]}
        assert {"workloads", "podgroups", "podgroups/status"} <= names
        created = await client.request("POST", f"{BASE}/namespaces/default/podgroups", pod_group("g", 2))
        assert created.status == 201
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "PodGroupScheduled",
                        "status": "True",
                        "reason": "Scheduled",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        }
        patched = await client.request(
            "PATCH",
            f"{BASE}/namespaces/default/podgroups/g/status",
            patch,
            content_type="application/merge-patch+json",
        )
        assert patched.status == 200
        assert patched.body["status"]["conditions"][0]["reason"] == "Scheduled"
        assert patched.body["spec"] == pod_group("g", 2)["spec"]
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "spec.schedulingPolicy: Required value"),
        ({"schedulingPolicy": {}}, "spec.schedulingPolicy: Invalid value"),
        (
            {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
            "spec.schedulingPolicy: Invalid value",
        ),
        ({"schedulingPolicy": {"gang": {}}}, "spec.schedulingPolicy.gang.minCount: Required value"),
        (
            {"schedulingPolicy": {"gang": {"minCount": 0}}},
            "spec.schedulingPolicy.gang.minCount: Invalid value: 0",
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": [{}]}},
            "spec.schedulingConstraints.topology[0].key: Required value",
        ),
    ],
)
async def test_invalid_pod_groups_are_refused_naming_the_field(
    new_cluster: NewCluster, spec: dict[str, Any], message: str
) -> None:
    sim = await new_cluster(nodes=1)
    body = {**pod_group("bad", 1), "spec": spec}
    with pytest.raises(Exception, match=r"PodGroup.scheduling.k8s.io \"bad\" is invalid: ") as raised:
        await sim.create("podgroups", body)
    assert message in str(raised.value)
    assert sim.store.get("podgroups", "default", "bad") is None


async def test_workloads_need_named_templates_with_a_policy(
    new_cluster: NewCluster,
) -> None:
    sim = await new_cluster(nodes=1)
    good = {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}
    assert (await sim.create("workloads", workload([good])))["spec"]["podGroupTemplates"] == [good]
    with pytest.raises(Exception, match=r"spec.podGroupTemplates: Required value"):
        await sim.create("workloads", {**workload([]), "metadata": {"name": "w2", "namespace": "default"}})
    nameless = {"schedulingPolicy": {"basic": {}}}
    with pytest.raises(Exception, match=r"spec.podGroupTemplates\[0\].name: Required value"):
        await sim.create(
            "workloads", {**workload([nameless]), "metadata": {"name": "w3", "namespace": "default"}}
        )


async def test_a_cluster_can_leave_the_group_version_out(new_cluster: NewCluster, tmp_path: Any) -> None:
    sim = await new_cluster(nodes=1, disabled_apis=(WORKLOAD_API,))
    client = await client_of(sim, tmp_path)
    try:
        assert (await client.request("GET", BASE)).status == 404
        groups = (await client.request("GET", "/apis/scheduling.k8s.io")).body
        assert [v["version"] for v in groups["versions"]] == ["v1"]
        missing = await client.request("POST", f"{BASE}/namespaces/default/podgroups", pod_group("g", 1))
        assert missing.status == 404
    finally:
        await client.close()


async def test_a_pod_group_spec_is_immutable(new_cluster: NewCluster, tmp_path: Any) -> None:
    sim = await new_cluster(nodes=1)
    client = await client_of(sim, tmp_path)
    try:
        path = f"{BASE}/namespaces/default/podgroups/g"
        assert (
            await client.request("POST", f"{BASE}/namespaces/default/podgroups", pod_group("g", 2))
        ).status == 201
        change = {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}
        refused = await client.request("PATCH", path, change, content_type="application/merge-patch+json")
        assert refused.status == 422
        assert (
            "spec: Invalid value" in refused.body["message"]
            and "field is immutable" in refused.body["message"]
        )
        labelled = {"metadata": {"labels": {"team": "ml"}}}
        assert (
            await client.request("PATCH", path, labelled, content_type="application/merge-patch+json")
        ).status == 200
    finally:
        await client.close()
