"""The Helm chart, linted and rendered by the real helm binary, with several values sets."""

from __future__ import annotations

import json

import pytest
import yaml
from shipping import (
    CHART,
    HELM,
    NO_HELM,
    RenderError,
    container,
    kinds,
    permissions,
    pick,
    run_helm,
    scheduler_config,
)

pytestmark = [
    pytest.mark.helm,
    pytest.mark.skipif(HELM is None, reason=NO_HELM),
]

CI_VALUES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))

# Exactly what the scheduler calls on the API (see the comments in templates/clusterrole.yaml).
READ = ("list", "watch")
EXPECTED_CLUSTER_GRANTS = (
    {
        ("", r, v, "*")
        for r in ("pods", "nodes", "namespaces", "services", "replicationcontrollers")
        for v in READ
    }
    | {("apps", r, v, "*") for r in ("replicasets", "statefulsets") for v in READ}
    | {
        ("storage.k8s.io", r, v, "*")
        for r in ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments")
        for v in READ
    }
    | {("policy", "poddisruptionbudgets", v, "*") for v in READ}
    | {
        ("", r, v, "*")
        for r in ("persistentvolumes", "persistentvolumeclaims")
        for v in (*READ, "update", "patch")
    }
    | {("", "pods/binding", "create", "*"), ("", "pods/status", "patch", "*")}
    | {(g, "events", v, "*") for g in ("", "events.k8s.io") for v in ("create", "patch")}
)
PREEMPTION_GRANT = ("", "pods", "delete", "*")


@pytest.mark.parametrize("values", [[], *([v] for v in CI_VALUES)], ids=lambda v: v[0] if v else "no-values")
def test_helm_lint_passes_strictly_with_each_values_set(values: list[str]) -> None:
    args = ["lint", "--strict", str(CHART)] + [a for v in values for a in ("--values", str(CHART / "ci" / v))]
    result = run_helm(*args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_install_renders_the_scheduler_objects(render) -> None:
    objects = render()
    assert kinds(objects) == {
        "ServiceAccount",
        "ConfigMap",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Lease",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "Pod",  # the helm test hook
    }
    for obj in objects:
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "pyscheduler", obj["kind"]


def test_cluster_role_grants_exactly_what_the_scheduler_calls(render) -> None:
    rules = pick(render(), "ClusterRole")["rules"]
    assert permissions(rules) == EXPECTED_CLUSTER_GRANTS | {PREEMPTION_GRANT}


def test_turning_preemption_off_drops_pod_deletion_and_disables_the_plugin(render) -> None:
    objects = render(values=["preemption-off-values.yaml"])
    assert permissions(pick(objects, "ClusterRole")["rules"]) == EXPECTED_CLUSTER_GRANTS
    profiles = scheduler_config(objects)["profiles"]
    assert [p["schedulerName"] for p in profiles] == ["pyscheduler", "pyscheduler-batch"]
    for profile in profiles:
        disabled = [d["name"] for d in profile["plugins"]["postFilter"]["disabled"]]
        assert disabled.count("DefaultPreemption") == 1, profile
    assert profiles[0]["plugins"]["postFilter"]["disabled"][0] == {"name": "SomeOtherPostFilter"}


def test_no_rule_uses_wildcards_or_binds_cluster_admin(render) -> None:
    for values in ([], ["full-values.yaml"]):
        for obj in render(values=values):
            for rule in obj.get("rules", []):
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule.get(field, []), (obj["kind"], rule)
            if obj["kind"] in ("ClusterRoleBinding", "RoleBinding"):
                assert obj["roleRef"]["name"] not in ("cluster-admin", "admin", "edit")


@pytest.mark.parametrize(
    ("sets", "lease"),
    [
        ([], "pyscheduler"),
        (["leaderElection.resourceName=my-lock"], "my-lock"),
        (["fullnameOverride=sched"], "sched"),
    ],
    ids=["named after the release", "set explicitly", "follows fullnameOverride"],
)
def test_lease_name_agrees_between_config_role_and_lease_object(render, sets: list[str], lease: str) -> None:
    objects = render(sets=sets, namespace="platform")
    election = scheduler_config(objects)["leaderElection"]
    assert election["leaderElect"] is True
    assert election["resourceLock"] == "leases"
    assert election["resourceName"] == lease
    assert election["resourceNamespace"] == "platform"
    assert pick(objects, "Lease")["metadata"]["name"] == lease
    role = pick(objects, "Role")
    assert role["metadata"]["namespace"] == "platform"
    assert permissions(role["rules"]) == {
        ("coordination.k8s.io", "leases", "create", "*"),
        ("coordination.k8s.io", "leases", "get", lease),
        ("coordination.k8s.io", "leases", "update", lease),
    }
    binding = pick(objects, "RoleBinding")
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": pick(objects, "ServiceAccount")["metadata"]["name"],
            "namespace": "platform",
        }
    ]


def test_scheduler_config_is_a_v1_configuration_with_the_default_profile(render) -> None:
    config = scheduler_config(render())
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"] == [{"schedulerName": "pyscheduler"}]
    assert config["leaderElection"] == {
        "leaderElect": True,
        "resourceLock": "leases",
        "resourceName": "pyscheduler",
        "resourceNamespace": "pyscheduler",
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
    }


def test_profiles_and_extra_fields_pass_through_unchanged(render) -> None:
    objects = render(values=["full-values.yaml"])
    config = scheduler_config(objects)
    values = yaml.safe_load((CHART / "ci" / "full-values.yaml").read_text())
    assert config["profiles"] == values["config"]["profiles"]
    assert config["percentageOfNodesToScore"] == 50
    assert config["podMaxBackoffSeconds"] == 20
    assert config["leaderElection"]["resourceName"] == "pyscheduler-lock"
    assert config["leaderElection"]["leaseDuration"] == "20s"


def test_deployment_probes_security_and_downward_api(render) -> None:
    objects = render()
    deployment = pick(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    main = container(objects)
    assert deployment["spec"]["replicas"] == 2
    assert main["image"] == "pyscheduler:0.1.0"
    assert main["args"][:4] == [
        "--config=/etc/pyscheduler/config.yaml",
        "--bind-address=0.0.0.0",
        "--port=10251",
        "-v=2",
    ]
    assert main["ports"] == [{"name": "http-metrics", "containerPort": 10251, "protocol": "TCP"}]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-metrics"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-metrics"}
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in main["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert main["resources"]["requests"] and main["resources"]["limits"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert main["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    mounts = {m["mountPath"]: m for m in main["volumeMounts"]}
    assert mounts["/etc/pyscheduler"]["readOnly"] is True
    assert "/tmp" in mounts
    assert "priorityClassName" not in pod
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert (
        anti["podAffinityTerm"]["labelSelector"]["matchLabels"]
        == deployment["spec"]["selector"]["matchLabels"]
    )


def test_deployment_reads_the_rendered_config_map(render) -> None:
    objects = render()
    volumes = pick(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    config_volume = next(v for v in volumes if v["name"] == "config")
    assert config_volume["configMap"]["name"] == pick(objects, "ConfigMap")["metadata"]["name"]


def test_placement_and_pod_settings_come_from_values(render) -> None:
    objects = render(values=["full-values.yaml"])
    pod_template = pick(objects, "Deployment")["spec"]["template"]
    pod = pod_template["spec"]
    main = container(objects)
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == {"node-role.example.com/system": "true"}
    assert pod["tolerations"][0]["key"] == "node-role.example.com/system"
    assert pod["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert pod_template["metadata"]["annotations"]["example.com/team"] == "platform"
    assert pod_template["metadata"]["labels"]["example.com/tier"] == "control"
    assert main["image"] == "registry.example.com/platform/pyscheduler:0.1.0-rc1"
    assert main["args"][-1] == "--leader-elect=true"
    assert "--port=10259" in main["args"]
    assert main["ports"][0]["containerPort"] == 10259
    assert pick(objects, "Service")["spec"]["ports"][0]["port"] == 10259


def test_custom_affinity_replaces_the_default_anti_affinity(render) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    objects = render(set_json=[f"affinity={json.dumps(affinity)}"])
    assert pick(objects, "Deployment")["spec"]["template"]["spec"]["affinity"] == affinity


def test_config_checksum_changes_when_the_config_changes(render) -> None:
    def checksum(sets: list[str]) -> str:
        deployment = pick(render(sets=sets), "Deployment")
        return deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum([]) == checksum(["verbosity=5"])
    assert checksum([]) != checksum(["leaderElection.leaseDuration=30s"])


def test_single_replica_without_leader_election_has_no_lease_or_role(render) -> None:
    objects = render(values=["single-replica-values.yaml"])
    assert not {"Lease", "Role", "RoleBinding", "PodDisruptionBudget"} & kinds(objects)
    assert scheduler_config(objects)["leaderElection"]["leaderElect"] is False
    assert pick(objects, "Deployment")["spec"]["replicas"] == 1


def test_monitoring_objects_are_opt_in(render) -> None:
    assert not {"ServiceMonitor"} & kinds(render())
    objects = render(values=["full-values.yaml"])
    monitor = pick(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert (
        monitor["spec"]["endpoints"][0].items()
        >= {"port": "http-metrics", "path": "/metrics", "interval": "15s"}.items()
    )
    assert monitor["spec"]["selector"]["matchLabels"] == pick(objects, "Service")["spec"]["selector"]


def test_grafana_dashboard_charts_the_upstream_metrics(render) -> None:
    dashboard_map = pick(render(values=["full-values.yaml"]), "ConfigMap", "pyscheduler-dashboard")
    assert dashboard_map["metadata"]["namespace"] == "monitoring"
    assert dashboard_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(dashboard_map["data"]["pyscheduler.json"])
    exprs = " ".join(t["expr"] for panel in dashboard["panels"] for t in panel["targets"])
    for metric in (
        'scheduler_schedule_attempts_total{result="scheduled"',
        "sum by (result) (rate(scheduler_schedule_attempts_total",
        "sum by (queue) (scheduler_pending_pods",
        "histogram_quantile(0.99, sum by (le) (rate(scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket",
        "leader_election_master_status",
    ):
        assert metric in exprs


def test_helm_test_hook_is_a_pod_for_the_release_scheduler(render) -> None:
    for values, scheduler in (([], "pyscheduler"), (["preemption-off-values.yaml"], "pyscheduler")):
        hook = pick(render(values=values), "Pod")
        assert hook["metadata"]["annotations"]["helm.sh/hook"] == "test"
        assert hook["spec"]["schedulerName"] == scheduler
        assert hook["spec"]["restartPolicy"] == "Never"
    hook = pick(render(sets=["schedulerName=batch"]), "Pod")
    assert hook["spec"]["schedulerName"] == "batch"


def test_notes_tell_the_user_which_scheduler_name_to_use() -> None:
    result = run_helm(
        "install",
        "demo",
        str(CHART),
        "--dry-run=client",
        "--namespace",
        "sched",
        "--set",
        "schedulerName=fast",
    )
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "schedulerName: fast" in notes
    assert "helm test demo -n sched" in notes


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["replicas=three"], "/replicas"),
        (["unknownKey=1"], "unknownKey"),
        (["image.pullPolicy=Sometimes"], "/image/pullPolicy"),
        (["leaderElection.leaseDuration=15 seconds"], "/leaderElection/leaseDuration"),
        (["config.extra.leaderElection.leaderElect=false"], "/config/extra"),
        (["leaderElection.resourceName=Not_A_Name"], "/leaderElection/resourceName"),
        (["replicas=2", "leaderElection.enabled=false"], "replicas > 1 needs leaderElection.enabled=true"),
    ],
    ids=[
        "replicas must be a number",
        "unknown top-level keys are typos",
        "pull policy must be a Kubernetes one",
        "durations use Go syntax",
        "leader election is not set through config.extra",
        "the lease name must be a DNS label",
        "several replicas need leader election",
    ],
)
def test_bad_values_are_refused_with_a_message_naming_the_field(
    render, sets: list[str], message: str
) -> None:
    with pytest.raises(RenderError) as refused:
        render(sets=sets)
    assert message in str(refused.value)
