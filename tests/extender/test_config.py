"""``extenders:`` in the KubeSchedulerConfiguration: decoding, /configz, upstream's validation
(pkg/scheduler/apis/config/validation: validateExtenders) and the refusal at start-up (exit 2)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
from scheduler.cli import main
from scheduler.config import (
    ConfigError,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    NodeResourcesFitArgs,
    parse_config,
)
from scheduler.plugins.registry import in_tree_registry
from scheduler.runtime import FrameworkError
from scheduler.testing import FakeClient
from tests.support.extender import make_pki

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
CA = make_pki().ca


def config(*extenders: dict[str, Any], **top: Any) -> Any:
    return parse_config({**HEADER, "extenders": list(extenders), **top})


def errors_of(*extenders: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        config(*extenders)
    return info.value.errors


def test_every_field_of_an_extender_is_decoded():
    cfg = config(
        {
            "urlPrefix": "https://extender.example:8443/scheduler",
            "filterVerb": "filter",
            "preemptVerb": "preempt",
            "prioritizeVerb": "prioritize",
            "weight": 3,
            "bindVerb": "bind",
            "enableHTTPS": True,
            "tlsConfig": {
                "insecure": False,
                "serverName": "extender.example",
                "certFile": "/certs/client.crt",
                "keyFile": "/certs/client.key",
                "caFile": "/certs/ca.crt",
                "caData": base64.b64encode(CA).decode(),
            },
            "httpTimeout": "1m30s",
            "nodeCacheCapable": True,
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
            "ignorable": True,
        }
    )
    assert cfg.extenders == [
        Extender(
            url_prefix="https://extender.example:8443/scheduler",
            filter_verb="filter",
            preempt_verb="preempt",
            prioritize_verb="prioritize",
            weight=3,
            bind_verb="bind",
            enable_https=True,
            tls_config=ExtenderTLSConfig(
                server_name="extender.example",
                cert_file="/certs/client.crt",
                key_file="/certs/client.key",
                ca_file="/certs/ca.crt",
                ca_data=CA,
            ),
            http_timeout=90.0,
            node_cache_capable=True,
            managed_resources=[ExtenderManagedResource("example.com/gpu", ignored_by_scheduler=True)],
            ignorable=True,
        )
    ]


def test_configz_shows_an_extender_in_the_v1_form_its_unset_timeout_5s_once_built():
    original = config(
        {
            "urlPrefix": "http://x",
            "filterVerb": "filter",
            "tlsConfig": {"caData": base64.b64encode(CA).decode()},
        }
    )
    shown = original.to_dict()["extenders"]
    assert shown == [
        {
            "urlPrefix": "http://x",
            "filterVerb": "filter",
            "tlsConfig": {"caData": base64.b64encode(CA).decode()},
            "httpTimeout": "0s",
        }
    ]
    assert config(*shown).extenders == original.extenders  # the form reads back
    build(original)  # building the extender writes the client's default, as upstream's does
    assert original.to_dict()["extenders"][0]["httpTimeout"] == "5s"


QUALIFIED_NAME_RULE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("extenders", "expected"),
    [
        (
            [{"urlPrefix": "http://x", "prioritizeVerb": "prioritize", "weight": -1}],
            [("extenders[0].weight", "Invalid value: -1: must have a positive weight applied to it")],
        ),
        ([{"urlPrefix": "http://x", "weight": 0}], []),
        (
            [{"urlPrefix": "http://a", "bindVerb": "bind"}, {"urlPrefix": "http://b", "bindVerb": "bind"}],
            [
                (
                    "extenders",
                    'Invalid value: "found 2 extenders implementing bind": '
                    "only one extender can implement bind",
                )
            ],
        ),
        (
            [{"urlPrefix": "http://x", "managedResources": [{"name": "cpu"}]}],
            [
                (
                    "extenders[0].managedResources[0].name",
                    'Invalid value: "cpu": is an invalid extended resource name',
                )
            ],
        ),
        (
            [{"urlPrefix": "http://x", "managedResources": [{"name": "kubernetes.io/gpu"}]}],
            [
                (
                    "extenders[0].managedResources[0].name",
                    'Invalid value: "kubernetes.io/gpu": is an invalid extended resource name',
                )
            ],
        ),
        (
            [{"urlPrefix": "http://x", "managedResources": [{"name": "example.com/-gpu"}]}],
            [
                (
                    "extenders[0].managedResources[0].name",
                    f'Invalid value: "example.com/-gpu": {QUALIFIED_NAME_RULE}',
                )
            ],
        ),
        (
            [
                {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/gpu"}]},
                {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]},
            ],
            [
                (
                    "extenders[1].managedResources[0].name",
                    'Invalid value: "example.com/gpu": duplicate extender managed resource name',
                )
            ],
        ),
        (
            [{"urlPrefix": "http://x", "filterverb": "filter", "tlsConfig": {"caData": "not base64!"}}],
            [
                ("extenders[0].filterverb", "unknown field"),
                (
                    "extenders[0].tlsConfig.caData",
                    'Invalid value: "not base64!": must be base64-encoded data',
                ),
            ],
        ),
        (
            [{"urlPrefix": "http://x", "httpTimeout": "5 seconds", "weight": "2"}],
            [
                ("extenders[0].weight", 'Invalid value: "2": must be an integer'),
                (
                    "extenders[0].httpTimeout",
                    'Invalid value: "5 seconds": must be a duration such as "15s", "1m30s" or "100ms"',
                ),
            ],
        ),
    ],
    ids=[
        "a prioritizer needs a positive weight",
        "a weight matters only with a prioritize verb",
        "only one extender may bind",
        "a managed resource is an extended resource",
        "kubernetes.io resources are not extended resources",
        "a managed resource name is a qualified name",
        "a resource is managed by one extender only",
        "unknown fields and bad base64",
        "mistyped values",
    ],
)
def test_extender_validation_names_the_field_with_upstreams_message(extenders, expected):
    if not expected:
        config(*extenders)
        return
    assert errors_of(*extenders) == expected


def test_a_bad_extender_stops_start_up_with_exit_2_naming_the_field(tmp_path: Path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "extenders:\n- urlPrefix: http://x\n  prioritizeVerb: prioritize\n"
    )
    assert main(["run", "--config", str(path)]) == 2
    assert "extenders[0].weight: Invalid value: 0: must have a positive weight" in capsys.readouterr().err


def test_unusable_tls_material_stops_start_up_with_exit_2(tmp_path: Path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"extenders:\n- urlPrefix: https://x\n  tlsConfig: {{caFile: {tmp_path / 'missing.crt'}}}\n"
    )
    assert main(["run", "--config", str(path)]) == 2
    assert "couldn't build extenders: extender https://x:" in capsys.readouterr().err


def build(cfg: Any) -> Any:
    return build_scheduler(
        cfg,
        in_tree_registry(),
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda p: None,
    )


def test_resources_ignored_by_the_scheduler_become_node_resources_fits_ignored_resources():
    cfg = config(
        {
            "urlPrefix": "http://a",
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
        },
        {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/fpga"}]},
        profiles=[
            {
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/replaced"]}}
                ]
            }
        ],
    )
    build(cfg)
    args = cfg.profiles[0].plugin_config["NodeResourcesFit"]
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.ignored_resources == ["example.com/gpu"]  # upstream replaces, not appends


def test_ignored_resources_need_node_resources_fit_args_in_every_profile():
    cfg = config(
        {
            "urlPrefix": "http://a",
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
        },
        profiles=[
            {"schedulerName": "a"},
            {"schedulerName": "b", "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}},
        ],
    )
    with pytest.raises(FrameworkError, match=r"^couldn't build extenders: can't find NodeResourcesFitArgs"):
        build(cfg)


def test_ignorable_extenders_are_called_last():
    cfg = config(
        {"urlPrefix": "http://first", "ignorable": True},
        {"urlPrefix": "http://second"},
        {"urlPrefix": "http://third", "ignorable": True},
        {"urlPrefix": "http://fourth"},
    )
    assert [e.name for e in build(cfg).extenders] == [
        "http://second",
        "http://fourth",
        "http://first",
        "http://third",
    ]
