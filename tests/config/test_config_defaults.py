"""Defaulting: the v1.36 plugin list, mergePlugins, and defaulted args (upstream's tables)."""

import pytest

from scheduler.config import (
    DEFAULT_PLUGINS,
    ClientConnection,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    LeaderElection,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PluginRef,
    PluginSet,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
    default_config,
    merge_plugin_set,
    parse_config,
)

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

UPSTREAM_V136_MULTIPOINT = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),
]

DEFAULT_ARGS = {
    "DefaultPreemption": DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100
    ),
    "DynamicResources": DynamicResourcesArgs(filter_timeout=10.0, binding_timeout=600.0),
    "InterPodAffinity": InterPodAffinityArgs(hard_pod_affinity_weight=1),
    "NodeAffinity": NodeAffinityArgs(added_affinity=None),
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs(
        resources=[ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    ),
    "NodeResourcesFit": NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            type="LeastAllocated", resources=[ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
        )
    ),
    "PodTopologySpread": PodTopologySpreadArgs(defaulting_type="System"),
    "VolumeBinding": VolumeBindingArgs(bind_timeout_seconds=600, shape=None),
}


def test_default_plugins_are_upstream_v136_multipoint_list_in_order():
    assert [(p.name, p.weight) for p in DEFAULT_PLUGINS] == UPSTREAM_V136_MULTIPOINT


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(HEADER, id="minimal file"),
        pytest.param({**HEADER, "profiles": []}, id="empty profile list"),
        pytest.param({**HEADER, "profiles": [{}]}, id="one profile without a name"),
        pytest.param({**HEADER, "profiles": [{"plugins": {}, "pluginConfig": []}]}, id="empty plugins"),
    ],
)
def test_a_minimal_file_gets_upstreams_defaults_with_our_names(document):
    cfg = parse_config(document)
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.client_connection == ClientConnection(
        kubeconfig="",
        accept_content_types="",
        content_type="application/vnd.kubernetes.protobuf",
        qps=50.0,
        burst=100,
    )
    assert cfg.leader_election == LeaderElection(
        leader_elect=True,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        resource_lock="leases",
        resource_name="pyscheduler",
        resource_namespace="",
    )
    assert cfg.extenders == []
    assert cfg.delay_cache_until_active is False
    assert (cfg.enable_profiling, cfg.enable_contention_profiling) == (True, True)
    [profile] = cfg.profiles
    assert profile.scheduler_name == "pyscheduler"
    assert profile.percentage_of_nodes_to_score is None
    assert profile.plugins.multi_point == PluginSet(enabled=list(DEFAULT_PLUGINS))
    assert all(s == PluginSet() for wire, s in profile.plugins.items() if wire != "multiPoint")
    assert profile.plugin_config == DEFAULT_ARGS
    assert list(profile.plugin_config) == sorted(DEFAULT_ARGS)


def test_default_config_is_the_defaulted_minimal_file():
    assert default_config() == parse_config(HEADER)


def test_default_config_returns_independent_objects():
    a = default_config()
    a.profiles[0].plugins.multi_point.enabled.clear()
    assert default_config().profiles[0].plugins.multi_point.enabled == list(DEFAULT_PLUGINS)


def _set(enabled=(), disabled=()):
    def ref(p):
        return PluginRef(*p) if isinstance(p, tuple) else PluginRef(p)

    return PluginSet(enabled=[ref(p) for p in enabled], disabled=[ref(p) for p in disabled])


# Cases from upstream's TestMergePlugins.
MERGE_CASES = [
    (
        "a custom plugin is appended after the defaults",
        _set(["D1", "D2"]),
        _set(["Custom"]),
        _set(["D1", "D2", "Custom"]),
    ),
    (
        "a disabled default re-enabled by the user moves after the custom plugin",
        _set(["D1", "D2"]),
        _set(["Custom", "D2"], ["D2"]),
        _set(["D1", "Custom", "D2"], ["D2"]),
    ),
    (
        "disabling all with star lets the user insert before the defaults",
        _set(["D1", "D2"]),
        _set(["Custom", "D1", "D2"], ["*"]),
        _set(["Custom", "D1", "D2"], ["*"]),
    ),
    (
        "disabling all with star lets the user reorder the defaults",
        _set(["D1", "D2"]),
        _set(["D2", "D1"], ["*"]),
        _set(["D2", "D1"], ["*"]),
    ),
    ("an empty custom set keeps the defaults", _set(["D1", "D2"]), _set(), _set(["D1", "D2"])),
    (
        "a re-configured default keeps its place and takes the user's weight",
        _set(["P1", "P2", "P3"]),
        _set([("P1", 2), ("P3", 3)]),
        _set([("P1", 2), "P2", ("P3", 3)]),
    ),
    (
        "the default order is preserved when the user lists defaults in another order",
        _set(["P1", "P2", "P3"]),
        _set([("P2", 2), ("P1", 1)]),
        _set([("P1", 1), ("P2", 2), "P3"]),
    ),
    (
        "a repeated custom plugin replaces with its last entry and the other is appended",
        _set(["P1", "P2", "P3"]),
        _set(["P1", ("P2", 2), "P3", ("P2", 4)]),
        _set(["P1", ("P2", 4), "P3", ("P2", 2)]),
    ),
    ("disabled-only custom set drops the default", _set(["D"]), _set([], ["D"]), _set([], ["D"])),
    (
        "disabled entries of the default set are kept after the user's",
        _set(["D"], ["D2"]),
        _set(["Custom"], ["X"]),
        _set(["D", "Custom"], ["X", "D2"]),
    ),
]


@pytest.mark.parametrize(
    ("default", "custom", "expected"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES]
)
def test_merge_plugin_set_follows_upstream(default, custom, expected):
    assert merge_plugin_set(default, custom) == expected


def _multipoint(cfg):
    return [(p.name, p.weight) for p in cfg.profiles[0].plugins.multi_point.enabled]


def test_a_user_weight_for_a_default_plugin_replaces_it_in_place():
    cfg = parse_config(
        {
            **HEADER,
            "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 5}]}}}],
        }
    )
    expected = [(n, 5 if n == "ImageLocality" else w) for n, w in UPSTREAM_V136_MULTIPOINT]
    assert _multipoint(cfg) == expected


def test_disabling_star_in_multipoint_leaves_only_the_users_plugins_and_their_args():
    cfg = parse_config(
        {
            **HEADER,
            "profiles": [
                {
                    "plugins": {
                        "multiPoint": {
                            "enabled": [
                                {"name": "PrioritySort"},
                                {"name": "NodeResourcesFit"},
                                {"name": "DefaultBinder"},
                            ],
                            "disabled": [{"name": "*"}],
                        }
                    }
                }
            ],
        }
    )
    assert _multipoint(cfg) == [("PrioritySort", None), ("NodeResourcesFit", None), ("DefaultBinder", None)]
    assert cfg.profiles[0].plugins.multi_point.disabled == [PluginRef("*")]
    assert list(cfg.profiles[0].plugin_config) == ["NodeResourcesFit"]


def test_a_disabled_default_plugin_gets_no_default_args():
    cfg = parse_config(
        {**HEADER, "profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}}}]}
    )
    assert "InterPodAffinity" not in [n for n, _ in _multipoint(cfg)]
    assert "InterPodAffinity" not in cfg.profiles[0].plugin_config


def test_an_extension_point_set_is_merged_on_its_own_and_multipoint_stays_default():
    cfg = parse_config(
        {
            **HEADER,
            "profiles": [
                {
                    "plugins": {
                        "bind": {"enabled": [{"name": "BarPlugin"}], "disabled": [{"name": "DefaultBinder"}]}
                    }
                }
            ],
        }
    )
    plugins = cfg.profiles[0].plugins
    assert plugins.multi_point.enabled == list(DEFAULT_PLUGINS)
    assert plugins.bind == PluginSet(enabled=[PluginRef("BarPlugin")], disabled=[PluginRef("DefaultBinder")])


@pytest.mark.parametrize(
    ("plugin", "args", "expected"),
    [
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated"}},
            NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(
                    "MostAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
                )
            ),
        ),
        (
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "nvidia.com/gpu"}, {"name": "cpu", "weight": 3}],
                }
            },
            NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(
                    "LeastAllocated", [ResourceSpec("nvidia.com/gpu", 1), ResourceSpec("cpu", 3)]
                )
            ),
        ),
        (
            "NodeResourcesFit",
            {"ignoredResources": ["example.com/foo"]},
            NodeResourcesFitArgs(ignored_resources=["example.com/foo"]),
        ),
        (
            "NodeResourcesBalancedAllocation",
            {"resources": [{"name": "cpu", "weight": 0}, {"name": "example.com/x"}]},
            NodeResourcesBalancedAllocationArgs([ResourceSpec("cpu", 1), ResourceSpec("example.com/x", 1)]),
        ),
        ("DefaultPreemption", {"minCandidateNodesPercentage": 50}, DefaultPreemptionArgs(50, 100)),
        ("InterPodAffinity", {"ignorePreferredTermsOfExistingPods": True}, InterPodAffinityArgs(1, True)),
        ("VolumeBinding", {"bindTimeoutSeconds": 30}, VolumeBindingArgs(30)),
        ("DynamicResources", {"filterTimeout": "250ms"}, DynamicResourcesArgs(0.25, 600.0)),
        ("PodTopologySpread", None, PodTopologySpreadArgs()),
        (
            "NodeAffinity",
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "NodeAffinityArgs",
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                },
            },
            NodeAffinityArgs(
                {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            ),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_user_args_are_decoded_and_their_gaps_defaulted(plugin, args, expected):
    cfg = parse_config({**HEADER, "profiles": [{"pluginConfig": [{"name": plugin, "args": args}]}]})
    assert cfg.profiles[0].plugin_config[plugin] == expected
    assert next(iter(cfg.profiles[0].plugin_config)) == plugin


def test_args_of_an_out_of_tree_plugin_stay_a_raw_mapping():
    cfg = parse_config(
        {
            **HEADER,
            "profiles": [
                {
                    "plugins": {"multiPoint": {"enabled": [{"name": "MyPlugin"}]}},
                    "pluginConfig": [
                        {"name": "MyPlugin", "args": {"anything": [1, 2], "nested": {"x": "y"}}}
                    ],
                }
            ],
        }
    )
    assert cfg.profiles[0].plugin_config["MyPlugin"] == {"anything": [1, 2], "nested": {"x": "y"}}
