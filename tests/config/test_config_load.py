"""Loading files: strict decoding, file-level errors, two profiles, and the to_dict round trip."""

import json
from pathlib import Path

import pytest
import yaml

from scheduler.config import (
    ConfigError,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    LeaderElection,
    NodeResourcesFitArgs,
    PluginRef,
    default_config,
    load_config,
    parse_config,
)

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "config.yaml"


def write(tmp_path, text, name="config.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(document):
    with pytest.raises(ConfigError) as info:
        parse_config(document)
    return info.value.errors


def test_the_shipped_example_loads_with_most_allocated_and_leader_election():
    cfg = load_config(EXAMPLE)
    [profile] = cfg.profiles
    assert profile.scheduler_name == "pyscheduler"
    assert cfg.leader_election.leader_elect is True
    assert profile.plugin_config["NodeResourcesFit"].scoring_strategy.type == "MostAllocated"


def test_a_json_file_is_read_like_yaml(tmp_path):
    path = write(tmp_path, json.dumps({**HEADER, "parallelism": 4}), "config.json")
    assert load_config(path).parallelism == 4


def test_an_empty_file_lacks_apiversion_and_kind(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, ""))
    assert [f for f, _ in info.value.errors] == ["apiVersion", "kind"]


@pytest.mark.parametrize(
    ("text", "message_part"),
    [
        pytest.param("apiVersion: [unclosed\n", "invalid YAML: ", id="syntax error"),
        pytest.param("- a\n- b\n", "must hold a KubeSchedulerConfiguration object", id="a list"),
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "parallelism: 1\nparallelism: 2\n",
            "duplicate field 'parallelism' (line 4, column 1)",
            id="duplicate key",
        ),
    ],
)
def test_unreadable_documents_are_config_errors_naming_the_file(tmp_path, text, message_part):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.field == str(path)
    assert message_part in info.value.message


def test_a_yaml_syntax_error_names_the_line(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "apiVersion: v1\nkind: [\n"))
    assert "line 3" in info.value.message


def test_a_missing_file_is_a_config_error(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert (info.value.field, info.value.message) == (str(missing), "no such file")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"},
            [
                (
                    "apiVersion",
                    'unknown value "kubescheduler.config.k8s.io/v1beta3"; '
                    'only "kubescheduler.config.k8s.io/v1" is supported',
                )
            ],
        ),
        ({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "Pod"}, [("kind", 'unknown value "Pod"')]),
        (
            {"kind": "KubeSchedulerConfiguration"},
            [("apiVersion", 'Required value: must be "kubescheduler.config.k8s.io/v1"')],
        ),
    ],
    ids=["old api version", "wrong kind", "no api version"],
)
def test_wrong_type_meta_is_rejected(document, expected):
    assert errors_of(document) == expected


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"parallelizm": 8}, [("parallelizm", "unknown field")]),
        (
            {"leaderElection": {"leaseDurationSeconds": 15}},
            [("leaderElection.leaseDurationSeconds", "unknown field")],
        ),
        ({"profiles": [{"schedulername": "x"}]}, [("profiles[0].schedulername", "unknown field")]),
        ({"profiles": [{"plugins": {"filters": {}}}]}, [("profiles[0].plugins.filters", "unknown field")]),
        (
            {"profiles": [{"plugins": {"score": {"enabled": [{"name": "A", "wieght": 2}]}}}]},
            [("profiles[0].plugins.score.enabled[0].wieght", "unknown field")],
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"typ": "MostAllocated"}},
                            }
                        ]
                    }
                ]
            },
            [
                ("profiles[0].pluginConfig[0].args.scoringStrategy.typ", "unknown field"),
                ("profiles[0].pluginConfig[0].args.scoringStrategy.type", 'unknown value ""'),
            ],
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWieght": 2}}]}
                ]
            },
            [("profiles[0].pluginConfig[0].args.hardPodAffinityWieght", "unknown field")],
        ),
    ],
    ids=[
        "top level",
        "leader election",
        "profile",
        "extension point",
        "plugin ref",
        "scoring strategy",
        "args",
    ],
)
def test_unknown_fields_are_errors_naming_the_field(changes, expected):
    assert errors_of({**HEADER, **changes}) == expected


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"parallelism": "16"}, [("parallelism", 'Invalid value: "16": must be an integer')]),
        ({"parallelism": 1.5}, [("parallelism", "Invalid value: 1.5: must be an integer")]),
        (
            {"delayCacheUntilActive": "yes please"},
            [("delayCacheUntilActive", 'Invalid value: "yes please": must be true or false')],
        ),
        (
            {"clientConnection": {"qps": "fast"}},
            [("clientConnection.qps", 'Invalid value: "fast": must be a number')],
        ),
        (
            {"leaderElection": {"leaseDuration": 15}},
            [
                (
                    "leaderElection.leaseDuration",
                    'Invalid value: 15: must be a duration such as "15s", "1m30s" or "100ms"',
                )
            ],
        ),
        (
            {"profiles": {"schedulerName": "x"}},
            [("profiles", 'Invalid value: {"schedulerName": "x"}: must be a list')],
        ),
        (
            {"profiles": [{"pluginConfig": [{"args": {}}]}]},
            [("profiles[0].pluginConfig[0].name", "Required value")],
        ),
    ],
    ids=[
        "string for int",
        "float for int",
        "string for bool",
        "string for float",
        "number for duration",
        "object for list",
        "config without name",
    ],
)
def test_mistyped_values_are_errors_naming_the_field(changes, expected):
    assert errors_of({**HEADER, **changes}) == expected


def test_durations_are_read_into_seconds():
    cfg = parse_config(
        {
            **HEADER,
            "leaderElection": {"leaseDuration": "1m30s", "renewDeadline": "1m", "retryPeriod": "500ms"},
        }
    )
    assert (
        cfg.leader_election.lease_duration,
        cfg.leader_election.renew_deadline,
        cfg.leader_election.retry_period,
    ) == (90.0, 60.0, 0.5)


def test_an_empty_lease_namespace_stays_empty_and_empty_names_are_defaulted():
    cfg = parse_config(
        {**HEADER, "leaderElection": {"resourceName": "", "resourceNamespace": "", "resourceLock": ""}}
    )
    assert cfg.leader_election == LeaderElection()


def test_two_profiles_keep_their_names_and_each_get_defaults():
    cfg = parse_config(
        {
            **HEADER,
            "profiles": [
                {"schedulerName": "pyscheduler"},
                {
                    "schedulerName": "pyscheduler-binpack",
                    "percentageOfNodesToScore": 50,
                    "plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}},
                    "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
                    ],
                },
            ],
        }
    )
    first, second = cfg.profiles
    assert [p.scheduler_name for p in cfg.profiles] == ["pyscheduler", "pyscheduler-binpack"]
    assert first.percentage_of_nodes_to_score is None
    assert second.percentage_of_nodes_to_score == 50
    assert first.plugin_config["DefaultPreemption"] == DefaultPreemptionArgs()
    assert "DefaultPreemption" not in second.plugin_config
    assert PluginRef("DefaultPreemption") not in second.plugins.multi_point.enabled
    assert first.plugin_config["NodeResourcesFit"] == NodeResourcesFitArgs()
    assert second.plugin_config["NodeResourcesFit"].scoring_strategy.type == "MostAllocated"
    assert cfg.profiles_by_name()["pyscheduler-binpack"] is second


ROUND_TRIP_DOCUMENTS = {
    "defaults": HEADER,
    "example": yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")),
    "everything set": {
        **HEADER,
        "parallelism": 8,
        "percentageOfNodesToScore": 30,
        "podInitialBackoffSeconds": 2,
        "podMaxBackoffSeconds": 20,
        "delayCacheUntilActive": True,
        "enableProfiling": False,
        "enableContentionProfiling": False,
        "clientConnection": {
            "kubeconfig": "kube.conf",
            "qps": 20.5,
            "burst": 40,
            "contentType": "application/json",
        },
        "leaderElection": {
            "leaderElect": False,
            "leaseDuration": "1m30s",
            "renewDeadline": "45s",
            "retryPeriod": "100ms",
            "resourceNamespace": "sched",
        },
        "profiles": [
            {
                "schedulerName": "a",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "MyPlugin", "weight": 4}],
                        "disabled": [{"name": "ImageLocality"}],
                    },
                    "score": {"enabled": [{"name": "TaintToleration", "weight": 1}]},
                },
                "pluginConfig": [
                    {"name": "MyPlugin", "args": {"threshold": 3}},
                    {"name": "DynamicResources", "args": {"filterTimeout": "0s", "bindingTimeout": "1m"}},
                    {
                        "name": "PodTopologySpread",
                        "args": {
                            "defaultingType": "List",
                            "defaultConstraints": [
                                {
                                    "maxSkew": 1,
                                    "topologyKey": "topology.kubernetes.io/zone",
                                    "whenUnsatisfiable": "ScheduleAnyway",
                                }
                            ],
                        },
                    },
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "ignoredResourceGroups": ["example.com"],
                            "scoringStrategy": {
                                "type": "RequestedToCapacityRatio",
                                "resources": [{"name": "cpu", "weight": 2}],
                                "requestedToCapacityRatio": {
                                    "shape": [
                                        {"utilization": 0, "score": 0},
                                        {"utilization": 100, "score": 10},
                                    ]
                                },
                            },
                        },
                    },
                ],
            },
            {
                "schedulerName": "b",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}],
                        "disabled": [{"name": "*"}],
                    }
                },
            },
        ],
    },
}


@pytest.mark.parametrize("document", ROUND_TRIP_DOCUMENTS.values(), ids=ROUND_TRIP_DOCUMENTS.keys())
def test_to_dict_round_trips_through_parse_config_to_an_equal_object(document):
    cfg = parse_config(document)
    wire = cfg.to_dict()
    assert wire["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert wire["kind"] == "KubeSchedulerConfiguration"
    again = parse_config(json.loads(json.dumps(wire)))
    assert again == cfg
    assert again.to_dict() == wire


def test_to_dict_prints_durations_and_args_in_the_v1_wire_form():
    wire = default_config().to_dict()
    assert wire["leaderElection"]["leaseDuration"] == "15s"
    configs = {c["name"]: c["args"] for c in wire["profiles"][0]["pluginConfig"]}
    assert configs["DynamicResources"] == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DynamicResourcesArgs",
        "filterTimeout": "10s",
        "bindingTimeout": "10m0s",
    }
    assert configs["NodeResourcesFit"]["scoringStrategy"] == {
        "type": "LeastAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }


def test_dynamic_resources_args_accept_go_durations():
    cfg = parse_config(
        {
            **HEADER,
            "profiles": [{"pluginConfig": [{"name": "DynamicResources", "args": {"bindingTimeout": "2m"}}]}],
        }
    )
    assert cfg.profiles[0].plugin_config["DynamicResources"] == DynamicResourcesArgs(
        filter_timeout=10.0, binding_timeout=120.0
    )
