"""The chart with out-of-tree plugins: extra RBAC rules for what they watch or call, extra args, and
a rendered config the scheduler accepts with the example plugins' typed args."""

from __future__ import annotations

import json

import pytest

from scheduler.config import parse_config
from scheduler.plugins.loading import declared_args, load_registry
from tests.support.shipping import (
    HELM,
    NO_HELM,
    ROOT,
    RenderError,
    container,
    permissions,
    pick,
    scheduler_config,
)

pytestmark = [pytest.mark.helm, pytest.mark.skipif(HELM is None, reason=NO_HELM)]

EXAMPLE = ROOT / "examples" / "plugins" / "pyscheduler-example-plugins"
CONFIG_MAP_WATCH = {("", "configmaps", "list", "*"), ("", "configmaps", "watch", "*")}


def cluster_grants(objects: list[dict]) -> set[tuple[str, str, str, str]]:
    return permissions(pick(objects, "ClusterRole", "pyscheduler")["rules"])


def test_no_extra_rules_by_default(render) -> None:
    rules = pick(render(), "ClusterRole", "pyscheduler")["rules"]
    assert not {grant for grant in permissions(rules) if grant[1] == "configmaps"}


def test_extra_rules_are_appended_to_the_scheduler_cluster_role(render) -> None:
    default = cluster_grants(render())
    with_plugins = render(values=["plugins-values.yaml"])
    assert cluster_grants(with_plugins) == default | CONFIG_MAP_WATCH
    # the metrics reader's role is not where plugins' rights go
    assert not permissions(pick(with_plugins, "ClusterRole", "pyscheduler-metrics-reader")["rules"])


def test_an_extra_rule_is_rendered_verbatim(render) -> None:
    rule = {
        "apiGroups": ["example.com"],
        "resources": ["widgets"],
        "resourceNames": ["blue"],
        "verbs": ["get", "patch"],
    }
    rules = pick(render(set_json=[f"rbac.extraRules=[{json.dumps(rule)}]"]), "ClusterRole", "pyscheduler")[
        "rules"
    ]
    assert rules[-1] == rule


@pytest.mark.parametrize(
    "rule",
    ['{"apiGroups": [""], "resources": ["configmaps"]}', '{"verbs": ["get"], "colour": "red"}'],
    ids=["no verbs", "unknown field"],
)
def test_a_malformed_extra_rule_is_refused_when_rendering(render, rule: str) -> None:
    with pytest.raises(RenderError, match="extraRules"):
        render(set_json=[f"rbac.extraRules=[{rule}]"])


def test_extra_args_add_a_plugin_after_the_charts_own_args(render) -> None:
    args = container(render(set_json=['extraArgs=["--plugin=mycompany.plugins:Thing"]']))["args"]
    assert args[0] == "--config=/etc/pyscheduler/config.yaml"
    assert args[-1] == "--plugin=mycompany.plugins:Thing"


def test_the_rendered_config_loads_with_the_example_plugins_typed_args(render) -> None:
    package = EXAMPLE / "src" / "pyscheduler_example_plugins"
    specs = [f"{package / 'cost.py'}:CostByLabel", f"{package / 'maintenance.py'}:MaintenanceWindow"]
    sources = load_registry(specs, entry_points=False)
    config = parse_config(scheduler_config(render(values=["plugins-values.yaml"])), declared_args(sources))
    args = config.profiles[0].plugin_config
    assert args["CostByLabel"].cost == {"spot": 10, "on-demand": 100}
    assert args["CostByLabel"].label == "node.kubernetes.io/lifecycle"  # defaulted
    assert args["MaintenanceWindow"].config_map == "kube-system/maintenance-window"
