"""The PodGroup CRD and the PodGroup controller as the chart and deploy/ ship them."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from scheduler.config.load import parse_config
from scheduler.plugins.coscheduling import CoschedulingArgs
from scheduler.plugins.loading import declared_args, load_registry
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import check_profiles
from simcluster import SimCluster
from simcluster.errors import ApiError
from tests.support.coscheduling import CRD, PODGROUPS, install_crd, podgroup
from tests.support.shipping import (
    CHART,
    DEPLOY,
    HELM,
    KUBECTL,
    NO_HELM,
    NO_KUBECTL,
    Manifest,
    parse,
    permissions,
    pick,
    run_helm,
    scheduler_config,
    selects,
)

CONTROLLER = "pyscheduler-podgroup-controller"
READ = ("list", "watch")


def render(*sets: str, crds: bool = False) -> list[Manifest]:
    if HELM is None:
        pytest.skip(NO_HELM)
    args = ["template", "pyscheduler", str(CHART), "--namespace", "pyscheduler"]
    args += ["--include-crds"] if crds else []
    for item in sets:
        args += ["--set", item]
    result = run_helm(*args)
    assert result.returncode == 0, result.stderr
    return parse(result.stdout)


def deploy_controller() -> list[Manifest]:
    return parse((DEPLOY / "podgroup-controller" / "podgroup-controller.yaml").read_text())


@pytest.mark.helm
def test_the_chart_ships_the_podgroup_crd_as_deploy_does() -> None:
    crd = pick(render(crds=True), "CustomResourceDefinition", "podgroups.scheduling.x-k8s.io")
    assert crd == CRD == yaml.safe_load((DEPLOY / "crd-podgroups.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    assert (crd["spec"]["group"], version["name"], crd["spec"]["scope"]) == (
        "scheduling.x-k8s.io",
        "v1alpha1",
        "Namespaced",
    )
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    assert set(schema["spec"]["properties"]) == {"minMember", "minResources", "scheduleTimeoutSeconds"}
    assert set(schema["status"]["properties"]) == {
        "phase",
        "occupiedBy",
        "running",
        "succeeded",
        "failed",
        "scheduleStartTime",
    }
    assert version["subresources"] == {"status": {}}
    # without --include-crds (and for `helm upgrade`) the CRD is not among the templates
    assert "CustomResourceDefinition" not in {o["kind"] for o in render()}


async def test_the_crd_is_served_by_the_local_endpoint_and_validates_podgroups() -> None:
    async with SimCluster(nodes=1, kubelet=False, controllers=False) as sim:
        await install_crd(sim)
        created = await sim.create(PODGROUPS, podgroup("train", 2, minResources={"cpu": "8"}))
        assert created["spec"] == {"minMember": 2, "minResources": {"cpu": "8"}}
        with pytest.raises(ApiError, match=r"spec\.minMember: Invalid value: 0"):
            await sim.create(PODGROUPS, podgroup("empty", 0))


@pytest.mark.helm
def test_the_scheduler_may_watch_podgroups_of_both_apis() -> None:
    grants = permissions(pick(render(), "ClusterRole", "pyscheduler")["rules"])
    assert {("scheduling.x-k8s.io", "podgroups", v, "*") for v in READ} <= grants
    assert {("scheduling.k8s.io", r, v, "*") for r in ("podgroups", "workloads") for v in READ} <= grants
    assert {("scheduling.k8s.io", "podgroups/status", v, "*") for v in ("patch", "update")} <= grants


def scheduler_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = pick(objects, "Deployment", "pyscheduler")["spec"]["template"]["spec"]
    return spec


@pytest.mark.helm
def test_the_podgroup_controller_is_off_by_default() -> None:
    assert [o for o in render() if CONTROLLER in o["metadata"]["name"]] == []


@pytest.mark.helm
def test_the_podgroup_controller_runs_with_its_own_account_and_rights() -> None:
    objects = render("podgroupController.enabled=true", "podgroupController.namespaces={ml,batch}")
    account = pick(objects, "ServiceAccount", CONTROLLER)
    assert account["metadata"]["namespace"] == "pyscheduler"
    binding = pick(objects, "ClusterRoleBinding", CONTROLLER)
    assert binding["roleRef"]["name"] == CONTROLLER
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": "pyscheduler"}]
    assert permissions(pick(objects, "ClusterRole", CONTROLLER)["rules"]) == (
        {("scheduling.x-k8s.io", "podgroups", v, "*") for v in ("get", *READ)}
        | {("", "pods", v, "*") for v in READ}
        | {("scheduling.x-k8s.io", "podgroups/status", "patch", "*")}
        | {("apiextensions.k8s.io", "customresourcedefinitions", v, "*") for v in READ}
    )
    deployment = pick(objects, "Deployment", CONTROLLER)
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == CONTROLLER
    (container,) = pod["containers"]
    assert container["command"] == ["pyscheduler", "podgroup-controller"]
    assert container["args"][-2:] == ["--namespace=ml", "--namespace=batch"]
    # locked down as the scheduler is: non-root, read-only root filesystem, nothing to escalate
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"] == scheduler_pod(objects)["securityContext"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/tmp"]
    # kopf's liveness endpoint, on the port the args open
    assert "--liveness-endpoint=http://0.0.0.0:8080/healthz" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["ports"] == [{"name": "health", "containerPort": 8080}]
    assert container["resources"]["requests"].keys() == {"cpu", "memory"}
    assert "memory" in container["resources"]["limits"]
    # the scheduler's selectors (Deployment, Service, PodDisruptionBudget) leave its pod alone
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    scheduler = pick(objects, "Deployment", "pyscheduler")
    assert not selects(scheduler["spec"]["selector"]["matchLabels"], labels)
    assert not selects(pick(objects, "Service")["spec"]["selector"], labels)


@pytest.mark.helm
@pytest.mark.parametrize("kind", ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"])
def test_deploy_podgroup_controller_agrees_with_the_chart(kind: str) -> None:
    ours = pick(deploy_controller(), kind, CONTROLLER)
    charts = pick(render("podgroupController.enabled=true"), kind, CONTROLLER)
    if kind == "Deployment":
        ours_pod, charts_pod = ours["spec"]["template"]["spec"], charts["spec"]["template"]["spec"]
        (ours_c,), (charts_c,) = ours_pod.pop("containers"), charts_pod.pop("containers")
        assert {k: v for k, v in ours_c.items() if k != "image"} == {
            k: v for k, v in charts_c.items() if k != "image"
        }
        assert ours_pod == charts_pod
        assert ours["spec"]["selector"] == charts["spec"]["selector"]
    else:
        for field in ("rules", "roleRef", "subjects"):
            assert ours.get(field) == charts.get(field), field


@pytest.mark.kubectl
def test_deploy_podgroup_controller_renders_with_kustomize() -> None:
    if KUBECTL is None:
        pytest.skip(NO_KUBECTL)
    result = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY / "podgroup-controller")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    deployment = pick(parse(result.stdout), "Deployment", CONTROLLER)
    assert deployment["metadata"]["namespace"] == "pyscheduler"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "pyscheduler:0.1.0"


@pytest.mark.helm
def test_the_chart_s_coscheduling_values_give_a_config_the_scheduler_accepts() -> None:
    if HELM is None:
        pytest.skip(NO_HELM)
    result = run_helm(
        "template", "pyscheduler", str(CHART), "--values", str(CHART / "ci" / "coscheduling-values.yaml")
    )
    assert result.returncode == 0, result.stderr
    objects = parse(result.stdout)
    config = parse_config(scheduler_config(objects), declared_args(load_registry(entry_points=False)))
    check_profiles(config, in_tree_registry())
    assert config.profiles[0].plugin_config["Coscheduling"] == CoschedulingArgs(
        permit_waiting_time_seconds=120, pod_group_backoff_seconds=30
    )
    assert pick(objects, "Deployment", CONTROLLER)
