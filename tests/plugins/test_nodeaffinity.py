from __future__ import annotations

import numpy as np
import pytest

from scheduler.config.args import NodeAffinityArgs
from scheduler.framework import Code, CycleState, QueueingHint
from scheduler.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from scheduler.testing.builders import (
    make_node,
    make_pod,
    per_node_and_batch_filter,
    per_node_and_batch_score,
    table_of,
)


def required(*terms: dict) -> dict:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expr(key: str, operator: str, *values: str) -> dict:
    e: dict = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def names_in(*names: str) -> dict:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


NODES = [
    make_node("a", labels={"zone": "z1", "disk": "ssd", "gen": "3"}),
    make_node("b", labels={"zone": "z2", "disk": "hdd", "gen": "5"}),
    make_node("c", labels={"zone": "z1"}),
]


@pytest.mark.parametrize(
    ("case", "pod_kwargs", "fits"),
    [
        (
            "a nodeSelector keeps the nodes with all its labels",
            {"node_selector": {"zone": "z1", "disk": "ssd"}},
            "a",
        ),
        ("a nodeSelector value must match exactly", {"node_selector": {"zone": "z3"}}, ""),
        ("an In expression", {"affinity": required({"matchExpressions": [expr("zone", "In", "z2")]})}, "b"),
        (
            "a NotIn expression also admits nodes without the label",
            {"affinity": required({"matchExpressions": [expr("disk", "NotIn", "hdd")]})},
            "ac",
        ),
        (
            "an Exists expression",
            {"affinity": required({"matchExpressions": [expr("disk", "Exists")]})},
            "ab",
        ),
        (
            "a DoesNotExist expression",
            {"affinity": required({"matchExpressions": [expr("disk", "DoesNotExist")]})},
            "c",
        ),
        (
            "a Gt expression compares integers",
            {"affinity": required({"matchExpressions": [expr("gen", "Gt", "4")]})},
            "b",
        ),
        (
            "a Lt expression ignores nodes without the label",
            {"affinity": required({"matchExpressions": [expr("gen", "Lt", "4")]})},
            "a",
        ),
        (
            "terms are ORed",
            {
                "affinity": required(
                    {"matchExpressions": [expr("disk", "In", "hdd")]},
                    {"matchExpressions": [expr("disk", "DoesNotExist")]},
                )
            },
            "bc",
        ),
        (
            "expressions of a term are ANDed",
            {"affinity": required({"matchExpressions": [expr("zone", "In", "z1"), expr("disk", "Exists")]})},
            "a",
        ),
        (
            "a matchFields term selects by node name",
            {"affinity": required({"matchFields": [names_in("b")]}, {"matchFields": [names_in("c")]})},
            "bc",
        ),
        (
            "a matchFields requirement naming two nodes is invalid and selects nothing",
            {"affinity": required({"matchFields": [names_in("b", "c")]})},
            "",
        ),
        (
            "an Lt value that Go's ParseInt refuses (1_000) makes the term invalid",
            {"affinity": required({"matchExpressions": [expr("gen", "Lt", "1_000")]})},
            "",
        ),
        (
            "an Lt value beyond int64 makes the term invalid",
            {"affinity": required({"matchExpressions": [expr("gen", "Lt", "9223372036854775808")]})},
            "",
        ),
        (
            "a Gt value with leading zeros is still an integer",
            {"affinity": required({"matchExpressions": [expr("gen", "Gt", "004")]})},
            "b",
        ),
        ("an empty term selects nothing", {"affinity": required({})}, ""),
        ("no terms select nothing", {"affinity": required()}, ""),
        (
            "an invalid term selects nothing while valid ones still work",
            {
                "affinity": required(
                    {"matchExpressions": [expr("zone", "Bogus")]}, {"matchFields": [names_in("c")]}
                )
            },
            "c",
        ),
        (
            "nodeSelector and required affinity must both match",
            {
                "node_selector": {"zone": "z1"},
                "affinity": required({"matchExpressions": [expr("disk", "Exists")]}),
            },
            "a",
        ),
    ],
)
def test_filter(case: str, pod_kwargs: dict, fits: str) -> None:
    plugin = NodeAffinity(NodeAffinityArgs(), None)  # type: ignore[arg-type]
    pod = make_pod(**pod_kwargs)
    state = CycleState()
    cluster = table_of(NODES)
    _, status = plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    assert status is None or status.code != Code.SKIP
    per_node, batch = per_node_and_batch_filter(plugin, state, pod, cluster)
    assert per_node == batch
    assert "".join(info.name for info, s in zip(cluster.infos, per_node, strict=True) if s is None) == fits
    for s in per_node:
        if s is not None:
            assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert s.reasons == (ERR_REASON_POD,)


def test_pre_filter_skips_a_pod_without_node_constraints() -> None:
    result, status = NodeAffinity(None, None).pre_filter(CycleState(), make_pod(), None)  # type: ignore[arg-type]
    assert result is None
    assert status is not None and status.is_skip


def test_pre_filter_does_not_skip_when_the_profile_adds_affinity() -> None:
    args = NodeAffinityArgs(
        added_affinity=required({"matchExpressions": [expr("zone", "In", "z1")]})["nodeAffinity"]
    )
    _, status = NodeAffinity(args, None).pre_filter(CycleState(), make_pod(), None)  # type: ignore[arg-type]
    assert status is None


@pytest.mark.parametrize(
    ("case", "terms", "names", "status_reason"),
    [
        ("one name term narrows to its names", [{"matchFields": [names_in("a", "b")]}], {"a", "b"}, None),
        (
            "name terms are unioned",
            [{"matchFields": [names_in("a")]}, {"matchFields": [names_in("c")]}],
            {"a", "c"},
            None,
        ),
        (
            "fields in one term are intersected",
            [{"matchFields": [names_in("a", "b"), names_in("b", "c")]}],
            {"b"},
            None,
        ),
        (
            "a term without name fields leaves all nodes",
            [{"matchFields": [names_in("a")]}, {"matchExpressions": [expr("zone", "Exists")]}],
            None,
            None,
        ),
        (
            "conflicting name fields fail with upstream's reason",
            [{"matchFields": [names_in("a"), names_in("b")]}],
            None,
            ERR_REASON_CONFLICT,
        ),
    ],
)
def test_pre_filter_narrows_by_metadata_name(
    case: str, terms: list, names: set | None, status_reason: str | None
) -> None:
    result, status = NodeAffinity(None, None).pre_filter(
        CycleState(), make_pod(affinity=required(*terms)), None
    )  # type: ignore[arg-type]
    if status_reason:
        assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (status_reason,)
        return
    assert status is None
    assert (None if result is None else result.node_names) == (None if names is None else frozenset(names))


def test_added_affinity_rejects_with_the_enforced_reason_before_the_pods_own() -> None:
    args = NodeAffinityArgs(
        added_affinity=required({"matchExpressions": [expr("zone", "In", "z1")]})["nodeAffinity"]
    )
    plugin = NodeAffinity(args, None)  # type: ignore[arg-type]
    pod = make_pod(node_selector={"disk": "ssd"})
    state = CycleState()
    plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    per_node, batch = per_node_and_batch_filter(plugin, state, pod, table_of(NODES))
    assert per_node == batch
    assert [None if s is None else s.reasons for s in per_node] == [
        None,
        (ERR_REASON_ENFORCED,),
        (ERR_REASON_POD,),
    ]


def preferred(*weighted: tuple[int, dict]) -> dict:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": t} for w, t in weighted
            ]
        }
    }


def test_score_sums_the_weights_of_matching_preferred_terms_and_normalizes_by_the_maximum() -> None:
    plugin = NodeAffinity(None, None)  # type: ignore[arg-type]
    pod = make_pod(
        affinity=preferred(
            (2, {"matchExpressions": [expr("zone", "In", "z1")]}),
            (5, {"matchExpressions": [expr("disk", "In", "hdd")]}),
            (0, {"matchExpressions": [expr("zone", "Exists")]}),
        )
    )
    state = CycleState()
    cluster = table_of(NODES)
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch == [2, 5, 2]
    scores = np.array(batch, dtype=np.int64)
    plugin.normalize_scores(state, pod, scores)
    assert scores.tolist() == [40, 100, 40]


def test_added_preferred_terms_count_for_every_pod() -> None:
    args = NodeAffinityArgs(
        added_affinity=preferred((3, {"matchExpressions": [expr("disk", "Exists")]}))["nodeAffinity"]
    )
    plugin = NodeAffinity(args, None)  # type: ignore[arg-type]
    state = CycleState()
    pod = make_pod()
    cluster = table_of(NODES)
    assert plugin.pre_score(state, pod, cluster.infos) is None
    assert per_node_and_batch_score(plugin, state, pod, cluster) == ([3, 3, 0], [3, 3, 0])


def test_pre_score_skips_a_pod_without_preferences() -> None:
    status = NodeAffinity(None, None).pre_score(CycleState(), make_pod(), [])  # type: ignore[arg-type]
    assert status is not None and status.is_skip


def test_gt_matches_only_node_labels_that_go_parses_as_int64() -> None:
    # Python's int() would read "1_0" as 10 and accept values beyond int64; Go's ParseInt does not.
    plugin = NodeAffinity(None, None)  # type: ignore[arg-type]
    cluster = table_of(
        [
            make_node("a", labels={"gen": "1_0"}),
            make_node("b", labels={"gen": "99999999999999999999"}),
            make_node("c", labels={"gen": "7"}),
        ]
    )
    pod = make_pod(affinity=required({"matchExpressions": [expr("gen", "Gt", "4")]}))
    state = CycleState()
    plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    per_node, batch = per_node_and_batch_filter(plugin, state, pod, cluster)
    assert per_node == batch
    assert [s is None for s in per_node] == [False, False, True]


def test_pre_score_fails_with_upstreams_message_for_a_non_integer_gt_preference() -> None:
    pod = make_pod(
        affinity=preferred(
            (0, {"matchExpressions": [expr("gen", "Gt", "zero weight: never parsed")]}),
            (1, {"matchExpressions": [expr("zone", "Exists"), expr("gen", "Gt", "5Gi")]}),
            (1, {"matchExpressions": [expr("gen", "Lt", "x")]}),
        )
    )
    status = NodeAffinity(None, None).pre_score(CycleState(), pod, [])  # type: ignore[arg-type]
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (
        "[[1].matchExpressions[1].values[0]: Invalid value: \"5Gi\": for 'Gt', 'Lt' operators, "
        'the value must be an integer, [2].matchExpressions[0].values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer]",
    )


def test_a_preferred_term_with_an_empty_preference_is_dropped() -> None:
    plugin = NodeAffinity(None, None)  # type: ignore[arg-type]
    pod = make_pod(affinity=preferred((7, {}), (3, {"matchExpressions": [expr("disk", "Exists")]})))
    state = CycleState()
    cluster = table_of(NODES)
    assert plugin.pre_score(state, pod, cluster.infos) is None
    assert per_node_and_batch_score(plugin, state, pod, cluster) == ([3, 3, 0], [3, 3, 0])


def test_an_invalid_added_affinity_is_refused_at_construction() -> None:
    args = NodeAffinityArgs(
        added_affinity=required({"matchExpressions": [expr("zone", "Bogus")]})["nodeAffinity"]
    )
    with pytest.raises(ValueError, match="addedAffinity"):
        NodeAffinity(args, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("case", "old_labels", "new_labels", "hint"),
    [
        ("an added matching node queues", None, {"zone": "z1"}, QueueingHint.QUEUE),
        ("an added non-matching node skips", None, {"zone": "z2"}, QueueingHint.SKIP),
        ("a node gaining the label queues", {}, {"zone": "z1"}, QueueingHint.QUEUE),
        ("a node that already matched skips", {"zone": "z1"}, {"zone": "z1", "x": "y"}, QueueingHint.SKIP),
        ("a node still not matching skips", {}, {"x": "y"}, QueueingHint.SKIP),
    ],
)
def test_node_change_hint(case: str, old_labels: dict | None, new_labels: dict, hint: QueueingHint) -> None:
    (event,) = NodeAffinity(None, None).events_to_register()  # type: ignore[arg-type]
    assert event.hint is not None
    pod = make_pod(node_selector={"zone": "z1"})
    old = None if old_labels is None else make_node("n", labels=old_labels)
    assert event.hint(pod, old, make_node("n", labels=new_labels)) == hint


@pytest.mark.parametrize(
    ("case", "node_selector", "labels", "hint"),
    [
        (
            "a node matching no valid term queues, as upstream's match errors",
            {},
            {"zone": "z2"},
            QueueingHint.QUEUE,
        ),
        ("a node matching a valid term queues", {}, {"disk": "ssd"}, QueueingHint.QUEUE),
        ("a node failing the nodeSelector skips before any term", {"zone": "z1"}, {}, QueueingHint.SKIP),
    ],
)
def test_node_change_hint_with_an_unparsable_required_term(
    case: str, node_selector: dict, labels: dict, hint: QueueingHint
) -> None:
    (event,) = NodeAffinity(None, None).events_to_register()  # type: ignore[arg-type]
    assert event.hint is not None
    unparsable = {"matchExpressions": [expr("gen", "Gt", "5Gi")]}
    pod = make_pod(
        node_selector=node_selector,
        affinity=required(unparsable, {"matchExpressions": [expr("disk", "In", "ssd")]}),
    )
    assert event.hint(pod, None, make_node("n", labels=labels)) == hint


def test_node_change_hint_skips_nodes_outside_the_added_affinity() -> None:
    args = NodeAffinityArgs(
        added_affinity=required({"matchExpressions": [expr("pool", "In", "batch")]})["nodeAffinity"]
    )
    (event,) = NodeAffinity(args, None).events_to_register()  # type: ignore[arg-type]
    assert event.hint is not None
    assert event.hint(make_pod(), None, make_node("n")) == QueueingHint.SKIP
    assert event.hint(make_pod(), None, make_node("n", labels={"pool": "batch"})) == QueueingHint.QUEUE


def test_batch_forms_see_a_node_relabelled_after_an_earlier_cycle() -> None:
    # Answers are memoised per selector and node; replacing the Node object must refresh them.
    plugin = NodeAffinity(None, None)  # type: ignore[arg-type]
    cluster = table_of([make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"})])
    selecting = make_pod(node_selector={"zone": "z1"})
    preferring = make_pod(
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "preference": {"matchExpressions": [expr("zone", "In", "z1")]}}
                ]
            }
        }
    )

    def answers() -> tuple[list, list]:
        state = CycleState()
        plugin.pre_filter(state, selecting, None)  # type: ignore[arg-type]
        per_node, batch = per_node_and_batch_filter(plugin, state, selecting, cluster)
        assert per_node == batch
        state = CycleState()
        plugin.pre_score(state, preferring, cluster.infos)
        per_node_scores, batch_scores = per_node_and_batch_score(plugin, state, preferring, cluster)
        assert per_node_scores == batch_scores
        return [s is None for s in batch], batch_scores

    assert answers() == ([True, False], [5, 0])
    b = cluster.info("b")
    b.node = make_node("b", labels={"zone": "z1"})
    cluster.table.sync_row(b)
    assert answers() == ([True, True], [5, 5])
