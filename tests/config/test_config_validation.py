"""Each validation error names the exact field path and reads like upstream's."""

import pytest

from scheduler.config import (
    ConfigError,
    NodeResourcesFitArgs,
    ScoringStrategy,
    default_config,
    parse_config,
    validate,
)

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
REMOVED = (
    'was invalid in version "kubescheduler.config.k8s.io/v1" '
    '(KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")'
)


def args(plugin, value):
    return {"profiles": [{"pluginConfig": [{"name": "Other", "args": {}}, {"name": plugin, "args": value}]}]}


ARGS = "profiles[0].pluginConfig[1].args"

CASES = [
    # --- top level ---
    (
        "parallelism zero",
        {"parallelism": 0},
        [("parallelism", "Invalid value: 0: should be an integer value greater than zero")],
    ),
    (
        "percentage above 100",
        {"percentageOfNodesToScore": 101},
        [("percentageOfNodesToScore", "Invalid value: 101: not in valid range [0-100]")],
    ),
    (
        "percentage below 0",
        {"percentageOfNodesToScore": -1},
        [("percentageOfNodesToScore", "Invalid value: -1: not in valid range [0-100]")],
    ),
    (
        "initial backoff zero",
        {"podInitialBackoffSeconds": 0},
        [("podInitialBackoffSeconds", "Invalid value: 0: must be greater than 0")],
    ),
    (
        "max backoff below initial",
        {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4},
        [
            (
                "podMaxBackoffSeconds",
                "Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds",
            )
        ],
    ),
    (
        "negative burst",
        {"clientConnection": {"burst": -1}},
        [("clientConnection.burst", "Invalid value: -1: must be non-negative")],
    ),
    ("an extender is accepted", {"extenders": [{"urlPrefix": "http://x", "filterVerb": "filter"}]}, []),
    (
        "a prioritizing extender needs a positive weight",
        {"extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "prioritize"}]},
        [("extenders[0].weight", "Invalid value: 0: must have a positive weight applied to it")],
    ),
    # --- leader election ---
    (
        "lease not longer than renew deadline",
        {"leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}},
        [
            (
                "leaderElection.leaseDuration",
                'Invalid value: "10s": LeaseDuration must be greater than RenewDeadline',
            )
        ],
    ),
    (
        "zero retry period",
        {"leaderElection": {"retryPeriod": "0s"}},
        [("leaderElection.retryPeriod", 'Invalid value: "0s": must be greater than zero')],
    ),
    (
        "renew deadline within jittered retry period",
        {"leaderElection": {"renewDeadline": "2s", "retryPeriod": "2s"}},
        [
            (
                "leaderElection.renewDeadline",
                'Invalid value: "2s": must be greater than 1.2 times retryPeriod (2s)',
            )
        ],
    ),
    (
        "non-lease lock",
        {"leaderElection": {"resourceLock": "endpoints"}},
        [("leaderElection.resourceLock", 'Invalid value: "endpoints": resourceLock value must be "leases"')],
    ),
    (
        "leader election off skips its checks",
        {"leaderElection": {"leaderElect": False, "leaseDuration": "1s"}},
        [],
    ),
    # --- profiles ---
    (
        "duplicate scheduler names",
        {"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
        [("profiles[1].schedulerName", 'Duplicate value: "a"')],
    ),
    (
        "a second profile without a name",
        {"profiles": [{"schedulerName": "a"}, {}]},
        [("profiles[1].schedulerName", "Required value")],
    ),
    (
        "profile percentage out of range",
        {"profiles": [{"percentageOfNodesToScore": 200}]},
        [("profiles[0].percentageOfNodesToScore", "Invalid value: 200: not in valid range [0-100]")],
    ),
    (
        "queue sort differs between profiles",
        {
            "profiles": [
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "MySort"}]}}},
            ]
        },
        [("profiles[1].plugins.queueSort", 'Invalid value: ["MySort"]: must be the same for all profiles')],
    ),
    (
        "two queue sort plugins",
        {"profiles": [{"plugins": {"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}}]},
        [
            (
                "profiles[0].plugins.queueSort.enabled",
                "Invalid value: 2: only one queue sort plugin can be enabled",
            )
        ],
    ),
    (
        "duplicate plugin config",
        {"profiles": [{"pluginConfig": [{"name": "X"}, {"name": "X"}]}]},
        [("profiles[0].pluginConfig[1]", 'Duplicate value: "X"')],
    ),
    (
        "removed plugin enabled",
        {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "A"}, {"name": "EBSLimits"}]}}}]},
        [("profiles[0].plugins.filter.enabled[1]", f'Invalid value: "EBSLimits": {REMOVED}')],
    ),
    (
        "removed plugin configured",
        {"profiles": [{"pluginConfig": [{"name": "GCEPDLimits"}]}]},
        [("profiles[0].pluginConfig[0]", f'Invalid value: "GCEPDLimits": {REMOVED}')],
    ),
    (
        "plugin enabled twice at one extension point",
        {"profiles": [{"plugins": {"score": {"enabled": [{"name": "A"}, {"name": "A", "weight": 2}]}}}]},
        [("profiles[0].plugins.score.enabled[1].name", 'Duplicate value: "A"')],
    ),
    (
        "plugin without a name",
        {"profiles": [{"plugins": {"filter": {"enabled": [{"weight": 1}]}}}]},
        [("profiles[0].plugins.filter.enabled[0].name", "Required value")],
    ),
    # --- NodeResourcesFit ---
    (
        "unknown scoring strategy",
        args("NodeResourcesFit", {"scoringStrategy": {"type": "Foo"}}),
        [(f"{ARGS}.scoringStrategy.type", 'unknown value "Foo"')],
    ),
    (
        "scoring strategy without type",
        args("NodeResourcesFit", {"scoringStrategy": {}}),
        [(f"{ARGS}.scoringStrategy.type", 'unknown value ""')],
    ),
    (
        "resource weight above 100",
        args(
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
        ),
        [
            (
                f"{ARGS}.scoringStrategy.resources[0].weight",
                "Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
            )
        ],
    ),
    (
        "requested to capacity ratio without shape",
        args("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}),
        [
            (
                f"{ARGS}.scoringStrategy.requestedToCapacityRatio",
                "Required value: must be specified when type is RequestedToCapacityRatio",
            )
        ],
    ),
    (
        "shape with another strategy",
        args(
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]},
                }
            },
        ),
        [
            (
                f"{ARGS}.scoringStrategy.requestedToCapacityRatio",
                "Forbidden: must be nil when type is not RequestedToCapacityRatio",
            )
        ],
    ),
    (
        "unsorted shape and score out of range",
        args(
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 11}, {"utilization": 10, "score": 1}]
                    },
                }
            },
        ),
        [
            (
                f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
                "Invalid value: 10: values must be sorted in increasing order",
            ),
            (
                f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[0].score",
                "Invalid value: 11: not in valid range [0, 10]",
            ),
        ],
    ),
    (
        "empty shape",
        args(
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
        ),
        [
            (
                f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape",
                "Required value: at least one point must be specified",
            )
        ],
    ),
    (
        "ignored resource group with a slash",
        args("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/aa"]}),
        [
            (
                f"{ARGS}.ignoredResourceGroups[0]",
                "Invalid value: \"example.com/aa\": resource group name can't contain '/'",
            )
        ],
    ),
    (
        "ignored resource that is not a qualified name",
        args("NodeResourcesFit", {"ignoredResources": ["not a name"]}),
        [
            (
                f"{ARGS}.ignoredResources[0]",
                'Invalid value: "not a name": name part must consist of alphanumeric characters, '
                "'-', '_' or '.', and must start and end with an alphanumeric character",
            )
        ],
    ),
    (
        "args of another kind",
        args("NodeResourcesFit", {"kind": "InterPodAffinityArgs"}),
        [
            (
                f"{ARGS}.kind",
                'Invalid value: "InterPodAffinityArgs": '
                'must be "NodeResourcesFitArgs" for plugin "NodeResourcesFit"',
            )
        ],
    ),
    (
        "args of another API version",
        args("NodeResourcesFit", {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}),
        [
            (
                f"{ARGS}.apiVersion",
                'Invalid value: "kubescheduler.config.k8s.io/v1beta3": '
                'must be "kubescheduler.config.k8s.io/v1"',
            )
        ],
    ),
    # --- other args ---
    (
        "balanced allocation weight and duplicate",
        args(
            "NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu"}]}
        ),
        [
            (f"{ARGS}.resources[0].weight", "Invalid value: 2: must be 1"),
            (f"{ARGS}.resources[1].name", 'Duplicate value: "cpu"'),
        ],
    ),
    (
        "preemption both zero",
        args("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}),
        [
            (
                f"{ARGS}.minCandidateNodesPercentage",
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            ),
            (
                f"{ARGS}.minCandidateNodesAbsolute",
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ),
        ],
    ),
    (
        "preemption out of range",
        args("DefaultPreemption", {"minCandidateNodesPercentage": 101, "minCandidateNodesAbsolute": -1}),
        [
            (f"{ARGS}.minCandidateNodesPercentage", "Invalid value: 101: not in valid range [0, 100]"),
            (f"{ARGS}.minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)"),
        ],
    ),
    (
        "hard pod affinity weight",
        args("InterPodAffinity", {"hardPodAffinityWeight": 101}),
        [(f"{ARGS}.hardPodAffinityWeight", "Invalid value: 101: not in valid range [0, 100]")],
    ),
    (
        "negative bind timeout",
        args("VolumeBinding", {"bindTimeoutSeconds": -1}),
        [
            (
                f"{ARGS}.bindTimeoutSeconds",
                "Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
            )
        ],
    ),
    (
        "volume binding shape while StorageCapacityScoring is off",
        args("VolumeBinding", {"shape": [{"utilization": 0, "score": 0}]}),
        [
            (
                f"{ARGS}.shape",
                'Invalid value: [{"utilization": 0, "score": 0}]: unexpected field `shape`, '
                "remove it or turn on the feature gate StorageCapacityScoring",
            )
        ],
    ),
    (
        "negative DRA filter timeout",
        args("DynamicResources", {"filterTimeout": "-1s"}),
        [(f"{ARGS}.filterTimeout", 'Invalid value: "-1s": must be zero or positive')],
    ),
    (
        "short DRA binding timeout",
        args("DynamicResources", {"bindingTimeout": "500ms"}),
        [(f"{ARGS}.bindingTimeout", 'Invalid value: "500ms": must be at least 1 second')],
    ),
    (
        "unknown defaulting type",
        args("PodTopologySpread", {"defaultingType": "Foo"}),
        [(f"{ARGS}.defaultingType", 'unknown value "Foo"')],
    ),
    (
        "system defaulting with constraints",
        args(
            "PodTopologySpread",
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
                ]
            },
        ),
        [(f"{ARGS}.defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty')],
    ),
    (
        "bad default constraints",
        args(
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Maybe", "labelSelector": {}},
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "extra": 1},
                    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
        ),
        [
            (f"{ARGS}.defaultConstraints[0].maxSkew", "Invalid value: 0: not in valid range (0, inf)"),
            (f"{ARGS}.defaultConstraints[0].topologyKey", "Required value: can not be empty"),
            (f"{ARGS}.defaultConstraints[0].whenUnsatisfiable", 'unknown value "Maybe"'),
            (
                f"{ARGS}.defaultConstraints[0].labelSelector",
                "Forbidden: constraint must not define a selector, as they deduced for each pod",
            ),
            (f"{ARGS}.defaultConstraints[1].extra", "unknown field"),
            (f"{ARGS}.defaultConstraints[2]", 'Duplicate value: "{zone, DoNotSchedule}"'),
        ],
    ),
    (
        "bad added affinity",
        args(
            "NodeAffinity",
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "a", "operator": "In"},
                                    {"key": "b", "operator": "Exists", "values": ["x"]},
                                    {"key": "c", "operator": "Gt", "values": ["x"]},
                                    {"key": "d", "operator": "Near", "values": ["x"]},
                                ],
                                "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["u"]}],
                            }
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchExpresions": []}}
                    ],
                }
            },
        ),
        [
            (
                f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            (
                f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            (
                f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values[0]",
                'Invalid value: "x": must be an integer',
            ),
            (
                f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].operator",
                'Invalid value: "Near": not a valid selector operator',
            ),
            (
                f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key",
                'Invalid value: "metadata.uid": not a valid field selector key',
            ),
            (
                f"{ARGS}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpresions",
                "unknown field",
            ),
        ],
    ),
]


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_reports_each_problem_at_its_field(changes, expected):
    document = {**HEADER, **changes}
    if not expected:
        parse_config(document)
        return
    with pytest.raises(ConfigError) as info:
        parse_config(document)
    assert info.value.errors == expected
    assert (info.value.field, info.value.message) == expected[0]


def test_the_error_string_is_field_colon_message():
    with pytest.raises(ConfigError) as info:
        parse_config({**HEADER, **args("NodeResourcesFit", {"scoringStrategy": {"type": "Foo"}})})
    assert str(info.value) == 'profiles[0].pluginConfig[1].args.scoringStrategy.type: unknown value "Foo"'


def test_several_problems_are_reported_together():
    with pytest.raises(ConfigError) as info:
        parse_config({**HEADER, "parallelism": -1, "podInitialBackoffSeconds": 0, "bogus": True})
    assert [f for f, _ in info.value.errors] == ["bogus", "parallelism", "podInitialBackoffSeconds"]
    assert str(info.value).count("; ") == 2


def test_validate_checks_a_programmatically_built_configuration():
    cfg = default_config()
    validate(cfg)
    cfg.profiles[0].plugin_config["NodeResourcesFit"] = NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(type="Bogus")
    )
    index = list(cfg.profiles[0].plugin_config).index("NodeResourcesFit")
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    assert info.value.errors == [
        (f"profiles[0].pluginConfig[{index}].args.scoringStrategy.type", 'unknown value "Bogus"')
    ]
