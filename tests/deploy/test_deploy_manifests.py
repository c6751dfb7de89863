"""The plain manifests in deploy/: they parse, kustomize renders them, and they agree with the
chart installed as release `pyscheduler` in namespace `pyscheduler`."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from tests.support.shipping import (
    DEPLOY,
    KUBECTL,
    NO_KUBECTL,
    Manifest,
    container,
    parse,
    permissions,
    pick,
    scheduler_config,
)

KUSTOMIZATION = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())


def deploy_objects() -> list[Manifest]:
    objects: list[Manifest] = []
    for name in KUSTOMIZATION["resources"]:
        objects += parse((DEPLOY / name).read_text())
    return objects


def deploy_config() -> dict[str, Any]:
    (generator,) = KUSTOMIZATION["configMapGenerator"]
    (config_file,) = generator["files"]
    return yaml.safe_load((DEPLOY / config_file).read_text())


def test_every_yaml_file_in_deploy_parses_and_is_listed_in_the_kustomization() -> None:
    listed = set(KUSTOMIZATION["resources"]) | {
        f for g in KUSTOMIZATION["configMapGenerator"] for f in g["files"]
    }
    on_disk = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    for name in on_disk:
        for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
            assert isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"), name


def test_namespaced_objects_live_in_the_pyscheduler_namespace() -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    for obj in deploy_objects():
        if obj["kind"] not in cluster_scoped:
            assert obj["metadata"]["namespace"] == KUSTOMIZATION["namespace"] == "pyscheduler", obj["kind"]


@pytest.mark.helm
@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("ClusterRole", "pyscheduler"),
        ("ClusterRole", "pyscheduler-metrics-reader"),
        ("ClusterRole", "pyscheduler-debug-reader"),
        ("ClusterRoleBinding", "pyscheduler"),
        ("Role", "pyscheduler-leader-election"),
        ("RoleBinding", "pyscheduler-leader-election"),
    ],
)
def test_rbac_agrees_with_the_chart(render, kind: str, name: str) -> None:
    ours, charts = pick(deploy_objects(), kind, name), pick(render(), kind, name)
    for field in ("rules", "roleRef", "subjects"):
        assert ours.get(field) == charts.get(field), field
    if "rules" in ours:
        assert permissions(ours["rules"]) == permissions(charts["rules"])


@pytest.mark.helm
def test_scheduler_config_agrees_with_the_chart(render) -> None:
    assert deploy_config() == scheduler_config(render())


@pytest.mark.helm
def test_deployment_agrees_with_the_chart_on_everything_but_image_and_labels(render) -> None:
    ours, charts = container(deploy_objects()), container(render())
    for field in (
        "args",
        "env",
        "ports",
        "livenessProbe",
        "readinessProbe",
        "resources",
        "securityContext",
        "volumeMounts",
    ):
        assert ours[field] == charts[field], field
    our_pod = pick(deploy_objects(), "Deployment")["spec"]["template"]["spec"]
    chart_pod = pick(render(), "Deployment")["spec"]["template"]["spec"]
    for field in ("securityContext", "affinity", "enableServiceLinks"):
        assert our_pod[field] == chart_pod[field], field
    assert [v["name"] for v in our_pod["volumes"]] == [v["name"] for v in chart_pod["volumes"]]
    assert pick(deploy_objects(), "Deployment")["spec"]["replicas"] == 2


def test_deployment_serves_https_with_delegated_auth_and_the_rights_for_it() -> None:
    objects = deploy_objects()
    main = container(objects)
    assert "--plain-http" not in main["args"]
    assert "--authorization-always-allow-paths=/healthz,/readyz,/livez" in main["args"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert main[probe]["httpGet"] == {"path": path, "port": "https-metrics", "scheme": "HTTPS"}
    assert pick(objects, "Service")["spec"]["ports"][0]["targetPort"] == main["ports"][0]["name"]
    grants = permissions(pick(objects, "ClusterRole", "pyscheduler")["rules"])
    assert {
        ("authentication.k8s.io", "tokenreviews", "create", "*"),
        ("authorization.k8s.io", "subjectaccessreviews", "create", "*"),
    } <= grants
    reader = pick(objects, "ClusterRole", "pyscheduler-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


@pytest.mark.helm
@pytest.mark.parametrize("kind", ["Service", "PodDisruptionBudget", "Lease"])
def test_other_objects_agree_with_the_chart(render, kind: str) -> None:
    ours, charts = pick(deploy_objects(), kind), pick(render(), kind)
    assert ours["metadata"]["name"] == charts["metadata"]["name"]
    assert ours.get("spec") == charts.get("spec")


@pytest.mark.kubectl
def test_kustomize_renders_a_config_map_with_a_hashed_name_used_by_the_deployment() -> None:
    if KUBECTL is None:
        pytest.skip(NO_KUBECTL)
    result = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    objects = parse(result.stdout)
    configmap = pick(objects, "ConfigMap")
    assert configmap["metadata"]["name"].startswith("pyscheduler-config-")
    assert yaml.safe_load(configmap["data"]["config.yaml"]) == deploy_config()
    volumes = pick(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": configmap["metadata"]["name"]}} in volumes
    assert container(objects)["image"] == "pyscheduler:0.1.0"
