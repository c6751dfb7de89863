"""`--add` expansion: workloads become the pods (and owners, claims) their controllers would create."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.simulate import manifests
from scheduler.simulate.workloads import ManifestError, expand


def template(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "x"}], **spec},
    }


def workload(kind: str, name: str = "web", **spec: Any) -> dict[str, Any]:
    api = {"Job": "batch/v1"}.get(kind, "apps/v1")
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"template": template(), **spec},
    }


def test_a_deployment_becomes_a_replicaset_and_its_replicas() -> None:
    expanded = expand(
        workload("Deployment", replicas=3, selector={"matchLabels": {"app": "web"}}), "f", "pys"
    )
    kinds = [(resource, obj["metadata"]["name"]) for resource, obj in expanded.objects]
    assert kinds[0] == ("deployments", "web")
    resource, rs = expanded.objects[1]
    assert resource == "replicasets"
    digest = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{digest}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": digest}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = expanded.pods
    assert len(pods) == 3
    assert len({p["metadata"]["name"] for p in pods}) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith(f"web-{digest}-")
        assert len(p["metadata"]["name"]) == len(f"web-{digest}-") + 5
        assert p["metadata"]["labels"] == {"app": "web", "pod-template-hash": digest}
        assert p["metadata"]["ownerReferences"][0] | {"uid": "?"} == {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": f"web-{digest}",
            "uid": "?",
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert p["spec"]["schedulerName"] == "pys"
    # deterministic: the same manifest gives the same names
    again = expand(workload("Deployment", replicas=3, selector={"matchLabels": {"app": "web"}}), "f", "pys")
    assert [p["metadata"]["name"] for p in again.pods] == [p["metadata"]["name"] for p in pods]


def test_a_replicaset_defaults_to_one_replica() -> None:
    pods = expand(workload("ReplicaSet"), "f", "pys").pods
    assert len(pods) == 1
    assert pods[0]["metadata"]["name"].startswith("web-")


def test_a_statefulset_gets_ordinal_names_and_a_claim_per_replica() -> None:
    claim_template = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    sts = workload("StatefulSet", "db", replicas=2, serviceName="db", volumeClaimTemplates=[claim_template])
    expanded = expand(sts, "f", "pys")
    assert [(r, o["metadata"]["name"]) for r, o in expanded.objects] == [
        ("statefulsets", "db"),
        ("persistentvolumeclaims", "data-db-0"),
        ("pods", "db-0"),
        ("persistentvolumeclaims", "data-db-1"),
        ("pods", "db-1"),
    ]
    first = expanded.pods[0]
    assert first["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]
    assert first["spec"]["hostname"] == "db-0" and first["spec"]["subdomain"] == "db"
    assert first["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert first["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"


@pytest.mark.parametrize(
    ("spec", "count"),
    [({}, 1), ({"parallelism": 4}, 4), ({"parallelism": 4, "completions": 2}, 2), ({"completions": 3}, 1)],
)
def test_a_job_runs_as_many_pods_as_its_parallelism_allows(spec: dict[str, Any], count: int) -> None:
    pods = expand(workload("Job", "batch", **spec), "f", "pys").pods
    assert len(pods) == count
    assert all(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "batch" for p in pods)


def test_an_indexed_job_numbers_its_pods() -> None:
    pods = expand(workload("Job", "idx", parallelism=2, completionMode="Indexed"), "f", "pys").pods
    assert [p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods] == [
        "0",
        "1",
    ]
    assert [p["metadata"]["name"].rsplit("-", 1)[0] for p in pods] == ["idx-0", "idx-1"]


def test_a_pod_keeps_the_scheduler_it_names() -> None:
    bare = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"schedulerName": "other", "containers": []}}
    assert expand(bare, "f", "pys").pods[0]["spec"]["schedulerName"] == "other"
    bare["spec"].pop("schedulerName")
    assert expand(bare, "f", "pys").pods[0]["spec"]["schedulerName"] == "pys"


def test_manifests_with_lists_and_several_documents(tmp_path: Path) -> None:
    path = tmp_path / "add.yaml"
    path.write_text(
        "kind: List\nitems:\n- kind: Pod\n  metadata: {name: a}\n  spec: {containers: []}\n"
        "---\nkind: Pod\nmetadata: {name: b, namespace: team}\nspec: {containers: []}\n"
    )
    loaded = manifests.load(str(path), "pys")
    assert [w.source for w in loaded.workloads] == ["Pod default/a", "Pod team/b"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("- just a list\n", "document 1: an object with a kind expected"),
        ("kind: Deployment\nmetadata: {}\nspec: {}\n", "document 1: Deployment: metadata.name is required"),
        ("kind: Deployment\nmetadata: {name: d}\nspec: {}\n", "Deployment d: spec.template.spec is required"),
        (
            "kind: Deployment\nmetadata: {name: d}\nspec: {replicas: -1, template: {spec: {}}}\n",
            "Deployment d: spec.replicas: a non-negative integer expected, got -1",
        ),
        ("kind: Pod\nmetadata: {name: p\n", "not YAML"),
    ],
)
def test_bad_manifests_name_the_file_document_and_field(tmp_path: Path, doc: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(doc)
    with pytest.raises(ManifestError) as err:
        manifests.load(str(path), "pys")
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)
