"""The Helm chart, linted and rendered by the real helm binary, with several values sets."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support.shipping import (
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
    selects,
)

pytestmark = [
    pytest.mark.helm,
    pytest.mark.skipif(HELM is None, reason=NO_HELM),
]

CI_VALUES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))

# Exactly what the scheduler calls on the API (see the comments in templates/clusterrole.yaml).
# DynamicResources: upstream's kube-scheduler grants for resource.k8s.io, DRAExtendedResource's included.
DRA_GRANTS = (
    {
        ("resource.k8s.io", r, v, "*")
        for r in ("deviceclasses", "resourceslices", "devicetaintrules")
        for v in ("list", "watch")
    }
    | {
        ("resource.k8s.io", "resourceclaims", v, "*")
        for v in ("get", "list", "watch", "update", "patch", "create", "delete")
    }
    | {
        ("resource.k8s.io", r, v, "*")
        for r in ("resourceclaims/status", "resourceclaims/binding")
        for v in ("update", "patch")
    }
    | {("", "pods/finalizers", "update", "*")}
)
READ = ("list", "watch")
# PodGroups of both gang APIs (scheduler-plugins' CRD, upstream's Workload API) and the
# status of upstream's, which the pod-group cycle writes.
GANG_GRANTS = (
    {("scheduling.x-k8s.io", "podgroups", v, "*") for v in READ}
    | {("scheduling.k8s.io", r, v, "*") for r in ("podgroups", "workloads") for v in READ}
    | {("scheduling.k8s.io", "podgroups/status", v, "*") for v in ("patch", "update")}
)
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
    | DRA_GRANTS
    | GANG_GRANTS
)
PREEMPTION_GRANT = ("", "pods", "delete", "*")
# Secure serving's delegated authentication and authorization (not with serving.plainHTTP).
REVIEW_GRANTS = {
    ("authentication.k8s.io", "tokenreviews", "create", "*"),
    ("authorization.k8s.io", "subjectaccessreviews", "create", "*"),
}
DEFAULT_ARGS = [
    "--config=/etc/pyscheduler/config.yaml",
    "--bind-address=0.0.0.0",
    "--port=10251",
    "-v=2",
    "--logging-format=text",
    "--tls-min-version=VersionTLS12",
    "--authorization-always-allow-paths=/healthz,/readyz,/livez",
]
SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


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
        "ClusterRole",  # the scheduler's, pyscheduler-metrics-reader and pyscheduler-debug-reader
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
    rules = pick(render(), "ClusterRole", "pyscheduler")["rules"]
    assert permissions(rules) == EXPECTED_CLUSTER_GRANTS | REVIEW_GRANTS | {PREEMPTION_GRANT}


def test_turning_preemption_off_drops_pod_deletion_and_disables_the_plugin(render) -> None:
    objects = render(values=["preemption-off-values.yaml"])
    rules = pick(objects, "ClusterRole", "pyscheduler")["rules"]
    assert permissions(rules) == EXPECTED_CLUSTER_GRANTS | REVIEW_GRANTS
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
                for field in ("apiGroups", "resources", "verbs", "nonResourceURLs"):
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
    assert main["args"] == DEFAULT_ARGS
    assert main["ports"] == [{"name": "https-metrics", "containerPort": 10251, "protocol": "TCP"}]
    assert main["livenessProbe"]["httpGet"] == {
        "path": "/healthz",
        "port": "https-metrics",
        "scheme": "HTTPS",
    }
    assert main["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "https-metrics",
        "scheme": "HTTPS",
    }
    # start-up (until the first ready answer) is the startup probe's alone, with minutes to spare
    assert main["startupProbe"]["httpGet"] == main["readinessProbe"]["httpGet"]
    assert main["startupProbe"]["periodSeconds"] * main["startupProbe"]["failureThreshold"] >= 300
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
    assert mounts.keys() == {"/etc/pyscheduler", "/tmp"}  # no certificate: self-signed at start
    assert mounts["/etc/pyscheduler"]["readOnly"] is True
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
    assert "--logging-format=json" in main["args"]
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
        >= {"port": "https-metrics", "path": "/metrics", "interval": "15s"}.items()
    )
    assert monitor["spec"]["selector"]["matchLabels"] == pick(objects, "Service")["spec"]["selector"]


def test_service_and_service_monitor_use_the_https_port(render) -> None:
    objects = render(sets=["serviceMonitor.enabled=true"])
    main = container(objects)
    (port,) = pick(objects, "Service")["spec"]["ports"]
    assert port == {"name": "https-metrics", "port": 10251, "targetPort": "https-metrics", "protocol": "TCP"}
    assert port["targetPort"] == main["ports"][0]["name"]
    (endpoint,) = pick(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["port"] == port["name"]


def test_service_monitor_scrapes_with_its_token_and_skips_verifying_the_self_signed_cert(render) -> None:
    (endpoint,) = pick(render(sets=["serviceMonitor.enabled=true"]), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == SA_TOKEN
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_service_monitor_verifies_a_configured_certificate(render) -> None:
    objects = render(values=["full-values.yaml"], namespace="platform")
    (endpoint,) = pick(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == SA_TOKEN
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "pyscheduler-serving-cert", "key": "ca.crt"}},
        "serverName": "pyscheduler.platform.svc",
    }
    own = {"caFile": "/etc/prometheus/ca/ca.crt", "serverName": "scheduler.example.com"}
    objects = render(
        sets=["serviceMonitor.enabled=true"], set_json=[f"serviceMonitor.tlsConfig={json.dumps(own)}"]
    )
    (endpoint,) = pick(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["tlsConfig"] == own


def test_secure_serving_options_come_from_values(render) -> None:
    objects = render(values=["full-values.yaml"])
    main = container(objects)
    pod = pick(objects, "Deployment")["spec"]["template"]["spec"]
    serving_args = [a for a in main["args"] if a.startswith(("--tls-", "--client-ca", "--authorization"))]
    assert serving_args == [
        "--tls-cert-file=/var/run/pyscheduler/serving-cert/tls.crt",
        "--tls-private-key-file=/var/run/pyscheduler/serving-cert/tls.key",
        "--tls-min-version=VersionTLS13",
        "--client-ca-file=/var/run/pyscheduler/client-ca/ca.crt",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/readyz/*",
    ]
    mounts = {m["name"]: m for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    # The whole Secret (no subPath), so that a renewed certificate reaches the running pod.
    assert mounts["serving-cert"] == {
        "name": "serving-cert",
        "mountPath": "/var/run/pyscheduler/serving-cert",
        "readOnly": True,
    }
    assert volumes["serving-cert"]["secret"] == {
        "secretName": "pyscheduler-serving-cert",
        "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}],
        "defaultMode": 0o440,
    }
    assert mounts["client-ca"]["mountPath"] == "/var/run/pyscheduler/client-ca"
    assert volumes["client-ca"]["configMap"] == {
        "name": "scrapers-client-ca",
        "items": [{"key": "ca.crt", "path": "ca.crt"}],
    }


def test_client_ca_may_come_from_a_secret_under_another_key(render) -> None:
    objects = render(sets=["serving.clientCA.secretName=front-ca", "serving.clientCA.key=bundle.pem"])
    volumes = {v["name"]: v for v in pick(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert volumes["client-ca"]["secret"] == {
        "secretName": "front-ca",
        "items": [{"key": "bundle.pem", "path": "ca.crt"}],
    }
    assert "--client-ca-file=/var/run/pyscheduler/client-ca/ca.crt" in container(objects)["args"]


def test_plain_http_serves_without_tls_auth_or_the_rights_for_them(render) -> None:
    objects = render(values=["plain-http-values.yaml"])
    main = container(objects)
    assert main["args"] == [*DEFAULT_ARGS[:5], "--plain-http"]
    assert main["ports"] == [{"name": "http-metrics", "containerPort": 10251, "protocol": "TCP"}]
    probes = (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/readyz"))
    for probe, path in probes:
        assert main[probe]["httpGet"] == {"path": path, "port": "http-metrics", "scheme": "HTTP"}
    assert pick(objects, "Service")["spec"]["ports"][0]["targetPort"] == "http-metrics"
    rules = pick(objects, "ClusterRole", "pyscheduler")["rules"]
    assert permissions(rules) == EXPECTED_CLUSTER_GRANTS | {PREEMPTION_GRANT}
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"] == ["pyscheduler"]
    (endpoint,) = pick(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["port"] == "http-metrics"
    assert endpoint["scheme"] == "http"
    assert "bearerTokenFile" not in endpoint and "tlsConfig" not in endpoint


def test_metrics_reader_role_grants_get_on_metrics_only_and_is_bound_on_request(render) -> None:
    objects = render()
    reader = pick(objects, "ClusterRole", "pyscheduler-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert selects(pick(objects, "Service")["spec"]["selector"], reader["metadata"]["labels"])
    bindings = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRoleBinding"]
    assert bindings == ["pyscheduler"]  # no scraper named: nothing bound to the reader role

    accounts = [{"name": "prometheus-k8s", "namespace": "monitoring"}, {"name": "scraper"}]
    objects = render(set_json=[f"rbac.metricsReader.serviceAccounts={json.dumps(accounts)}"], namespace="ops")
    binding = pick(objects, "ClusterRoleBinding", "pyscheduler-metrics-reader")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "pyscheduler-metrics-reader",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"},
        {"kind": "ServiceAccount", "name": "scraper", "namespace": "ops"},
    ]
    assert not {"ClusterRole", "ClusterRoleBinding"} & kinds(render(sets=["rbac.create=false"]))


def test_debug_reader_role_grants_get_on_the_debug_paths_only(render) -> None:
    reader = pick(render(), "ClusterRole", "pyscheduler-debug-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/debug/explain", "/debug/shadow"], "verbs": ["get"]}]
    plain = render(values=["plain-http-values.yaml"])
    names = [o["metadata"]["name"] for o in plain if o["kind"] == "ClusterRole"]
    assert "pyscheduler-debug-reader" not in names  # plain HTTP checks no caller


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


def test_helm_test_pod_matches_no_selector_of_the_release(render) -> None:
    objects = render(values=["full-values.yaml"])  # parse() refuses repeated label keys too
    labels = pick(objects, "Pod")["metadata"]["labels"]
    deployment = pick(objects, "Deployment")
    anti = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    selectors = {
        "Deployment": deployment["spec"]["selector"]["matchLabels"],
        "Service": pick(objects, "Service")["spec"]["selector"],
        "PodDisruptionBudget": pick(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        "ServiceMonitor": pick(objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"],
        "anti-affinity": anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"][
            "labelSelector"
        ]["matchLabels"],
    }
    for owner, selector in selectors.items():
        assert selector, owner
        assert not selects(selector, labels), f"the test pod falls under the {owner}'s selector {selector}"
    # ... while the replicas do, so the check above is not vacuous.
    replica = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(selects(selector, replica) for selector in selectors.values())
    assert labels["app.kubernetes.io/component"] == "test"
    assert labels["app.kubernetes.io/instance"] == "pyscheduler"


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
    assert "services/https:demo-pyscheduler:https-metrics/proxy/readyz" in notes
    assert "--clusterrole=demo-pyscheduler-metrics-reader" in notes
    assert "https://127.0.0.1:10251/metrics" in notes
    assert "http:" not in notes


def test_notes_of_a_plain_http_install_say_it_is_unauthenticated() -> None:
    result = run_helm(
        "install", "demo", str(CHART), "--dry-run=client", "-n", "sched", "--set", "serving.plainHTTP=true"
    )
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "services/http:demo-pyscheduler:http-metrics/proxy/metrics" in notes
    assert "without authentication" in notes
    assert "metrics-reader" not in notes


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


@pytest.mark.parametrize(
    ("sets", "set_json", "namespace", "message"),
    [
        (
            ["schedulerName=default-scheduler"],
            [],
            "pyscheduler",
            'refusing schedulerName "default-scheduler": pods that name no scheduler would be '
            "scheduled by both pyscheduler and kube-scheduler",
        ),
        (
            [],
            ['config.profiles=[{"schedulerName":"batch"},{"schedulerName":"default-scheduler"}]'],
            "pyscheduler",
            'refusing config.profiles[1].schedulerName "default-scheduler"',
        ),
        (
            ["leaderElection.resourceName=kube-scheduler"],
            [],
            "kube-system",
            "refusing the Lease kube-system/kube-scheduler",
        ),
        (
            ["fullnameOverride=kube-scheduler"],
            [],
            "kube-system",
            "it is kube-scheduler's own Lease, holding it would stop kube-scheduler",
        ),
    ],
    ids=[
        "the default profile named default-scheduler",
        "another profile named default-scheduler",
        "kube-scheduler's Lease by name",
        "kube-scheduler's Lease through the release's full name",
    ],
)
def test_acting_as_the_default_scheduler_is_refused_unless_allowed(
    render, sets: list[str], set_json: list[str], namespace: str, message: str
) -> None:
    with pytest.raises(RenderError) as refused:
        render(sets=sets, set_json=set_json, namespace=namespace)
    assert message in str(refused.value)
    assert "set allowDefaultSchedulerName=true only if this cluster runs no kube-scheduler" in str(
        refused.value
    )
    allowed = render(sets=[*sets, "allowDefaultSchedulerName=true"], set_json=set_json, namespace=namespace)
    assert container(allowed)["args"][-1] == "--allow-default-scheduler-name"
    assert "--allow-default-scheduler-name" not in container(render())["args"]


def test_the_kube_scheduler_lease_name_is_fine_elsewhere_or_without_leader_election(render) -> None:
    lease = "leaderElection.resourceName=kube-scheduler"
    assert pick(render(sets=[lease], namespace="platform"), "Lease")["metadata"]["name"] == "kube-scheduler"
    objects = render(sets=[lease, "leaderElection.enabled=false", "replicas=1"], namespace="kube-system")
    assert scheduler_config(objects)["leaderElection"]["leaderElect"] is False


def timings(lease: str, renew: str, retry: str) -> list[str]:
    return [
        f"leaderElection.leaseDuration={lease}",
        f"leaderElection.renewDeadline={renew}",
        f"leaderElection.retryPeriod={retry}",
    ]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (
            timings("10s", "10s", "2s"),
            "leaderElection.leaseDuration (10s) must be greater than leaderElection.renewDeadline (10s)",
        ),
        (
            timings("1m30s", "1.5m", "2s"),
            "leaderElection.leaseDuration (1m30s) must be greater than leaderElection.renewDeadline (1.5m)",
        ),
        (
            timings("15s", "2.4s", "2s"),
            "leaderElection.renewDeadline (2.4s) must be greater than 1.2 times "
            "leaderElection.retryPeriod (2s)",
        ),
        (
            timings("15s", "600ms", "500ms"),
            "leaderElection.renewDeadline (600ms) must be greater than 1.2 times leaderElection.retryPeriod",
        ),
        (timings("15s", "10s", "0s"), "leaderElection.retryPeriod (0s) must be greater than zero"),
    ],
    ids=[
        "lease equal to renew",
        "lease equal to renew in other units",
        "renew equal to 1.2 x retry",
        "renew below 1.2 x retry in milliseconds",
        "zero retry period",
    ],
)
def test_leader_election_timings_are_checked_at_render_time(render, sets: list[str], message: str) -> None:
    with pytest.raises(RenderError) as refused:
        render(sets=sets)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    "sets",
    [
        timings("1m30s", "89999ms", "1m14.999s"),
        timings("15s", "601ms", "500ms"),
        timings("1.5h", "1h29m59.5s", "0.25h"),
        timings("6s", "4s", "1s"),
    ],
    ids=["just below in mixed units", "just above 1.2 x retry", "fractional hours", "issue 13's timings"],
)
def test_leader_election_timings_just_inside_the_bounds_render(render, sets: list[str]) -> None:
    election = scheduler_config(render(sets=sets))["leaderElection"]
    assert [election[k] for k in ("leaseDuration", "renewDeadline", "retryPeriod")] == [
        s.split("=", 1)[1] for s in sets
    ]


def test_timings_are_not_checked_without_leader_election(render) -> None:
    objects = render(sets=["leaderElection.enabled=false", "replicas=1", *timings("1s", "2s", "3s")])
    assert scheduler_config(objects)["leaderElection"]["leaderElect"] is False


@pytest.mark.parametrize(
    ("sets", "set_json", "message"),
    [
        (
            [],
            ['serving.alwaysAllowPaths=["/healthz","/livez"]'],
            "serving.alwaysAllowPaths must include /readyz",
        ),
        (
            ["serving.plainHTTP=true", "serving.tls.secretName=cert"],
            [],
            "serving.plainHTTP=true serves neither TLS nor authentication",
        ),
        (
            ["serving.clientCA.secretName=a", "serving.clientCA.configMapName=b"],
            [],
            "serving.clientCA: set secretName or configMapName, not both",
        ),
        (["serving.tls.minVersion=VersionTLS10"], [], "/serving/tls/minVersion"),
    ],
    ids=["probes need open paths", "plain HTTP has no TLS", "one client CA source", "TLS 1.2 at least"],
)
def test_contradictory_serving_values_are_refused(
    render, sets: list[str], set_json: list[str], message: str
) -> None:
    with pytest.raises(RenderError) as refused:
        render(sets=sets, set_json=set_json)
    assert message in str(refused.value)


def test_a_prefix_pattern_keeps_the_probe_paths_open(render) -> None:
    objects = render(set_json=['serving.alwaysAllowPaths=["/healthz*","/readyz*"]'])
    assert "--authorization-always-allow-paths=/healthz*,/readyz*" in container(objects)["args"]
