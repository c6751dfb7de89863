from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework import Code, CycleState, QueueingHint
from scheduler.plugins.tainttoleration import ERR_REASON_UNTOLERATED, TaintToleration
from scheduler.testing.builders import (
    make_node,
    make_pod,
    per_node_and_batch_filter,
    per_node_and_batch_score,
    table_of,
)

FOO_NO_SCHEDULE = ("foo", "bar", "NoSchedule")
FOO_NO_EXECUTE = ("foo", "bar", "NoExecute")
FOO_PREFER = ("foo", "bar", "PreferNoSchedule")


def tol(key: str = "foo", value: str = "bar", effect: str = "", operator: str = "Equal") -> dict:
    return {"key": key, "value": value, "effect": effect, "operator": operator}


@pytest.mark.parametrize(
    ("case", "taints", "tolerations", "fits"),
    [
        ("a node without taints admits a pod without tolerations", [], [], True),
        ("a NoSchedule taint rejects a pod without tolerations", [FOO_NO_SCHEDULE], [], False),
        ("a NoExecute taint rejects a pod without tolerations", [FOO_NO_EXECUTE], [], False),
        ("a PreferNoSchedule taint never rejects", [FOO_PREFER], [], True),
        (
            "an Equal toleration with the same value tolerates",
            [FOO_NO_SCHEDULE],
            [tol(effect="NoSchedule")],
            True,
        ),
        ("an Equal toleration with another value does not", [FOO_NO_SCHEDULE], [tol(value="baz")], False),
        (
            "an Exists toleration ignores the value",
            [FOO_NO_SCHEDULE],
            [tol(value="", operator="Exists")],
            True,
        ),
        ("an empty-key Exists toleration tolerates all", [FOO_NO_EXECUTE], [{"operator": "Exists"}], True),
        ("a toleration for another effect does not", [FOO_NO_SCHEDULE], [tol(effect="NoExecute")], False),
        (
            "a toleration without an operator compares values (Equal)",
            [FOO_NO_SCHEDULE],
            [{"key": "foo", "value": "bar"}],
            True,
        ),
        (
            "a Gt toleration tolerates nothing: TaintTolerationComparisonOperators is off at v1.36",
            [("gen", "5", "NoSchedule")],
            [tol(key="gen", value="3", operator="Gt")],
            False,
        ),
        (
            "every hard taint must be tolerated",
            [FOO_NO_SCHEDULE, ("dedicated", "gpu", "NoSchedule")],
            [tol(effect="NoSchedule")],
            False,
        ),
    ],
)
def test_filter(case: str, taints: list, tolerations: list, fits: bool) -> None:
    cluster = table_of([make_node("n", taints=taints)])
    per_node, batch = per_node_and_batch_filter(
        TaintToleration(), CycleState(), make_pod(tolerations=tolerations), cluster
    )
    assert per_node == batch
    if fits:
        assert per_node == [None]
    else:
        status = per_node[0]
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # v1.36 wording: the taint itself is not named
        assert status.reasons == (ERR_REASON_UNTOLERATED,) == ("node(s) had untolerated taint(s)",)


def test_scores_count_untolerated_prefer_no_schedule_taints_and_normalize_in_reverse() -> None:
    cluster = table_of(
        [
            make_node("clean"),
            make_node("one", taints=[FOO_PREFER]),
            make_node("two", taints=[FOO_PREFER, ("cpu-type", "arm64", "PreferNoSchedule")]),
            make_node("tolerated", taints=[FOO_PREFER, FOO_NO_SCHEDULE]),
        ]
    )
    plugin = TaintToleration()
    pod = make_pod()
    state = CycleState()
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch == [0, 1, 2, 1]
    scores = np.array(batch, dtype=np.int64)
    plugin.normalize_scores(state, pod, scores)
    assert scores.tolist() == [100, 50, 0, 50]


def test_a_toleration_without_effect_tolerates_prefer_no_schedule_taints_when_scoring() -> None:
    cluster = table_of([make_node("one", taints=[FOO_PREFER])])
    plugin = TaintToleration()
    pod = make_pod(tolerations=[tol()])
    state = CycleState()
    plugin.pre_score(state, pod, cluster.infos)
    assert per_node_and_batch_score(plugin, state, pod, cluster) == ([0], [0])


def test_tolerations_for_another_effect_do_not_count_when_scoring() -> None:
    cluster = table_of([make_node("one", taints=[FOO_PREFER])])
    plugin = TaintToleration()
    pod = make_pod(tolerations=[tol(effect="NoSchedule")])
    state = CycleState()
    plugin.pre_score(state, pod, cluster.infos)
    assert per_node_and_batch_score(plugin, state, pod, cluster) == ([1], [1])


def test_no_soft_taints_anywhere_gives_every_node_the_maximum() -> None:
    scores = np.zeros(3, dtype=np.int64)
    TaintToleration().normalize_scores(CycleState(), make_pod(), scores)
    assert scores.tolist() == [100, 100, 100]


@pytest.mark.parametrize(
    ("case", "old_taints", "new_taints", "hint"),
    [
        ("an added node without taints queues", None, [], QueueingHint.QUEUE),
        ("an added node with an untolerated taint skips", None, [FOO_NO_SCHEDULE], QueueingHint.SKIP),
        ("removing the untolerated taint queues", [FOO_NO_SCHEDULE], [], QueueingHint.QUEUE),
        ("a node that was already fine skips", [], [FOO_PREFER], QueueingHint.SKIP),
        (
            "swapping one untolerated taint for another skips",
            [FOO_NO_SCHEDULE],
            [FOO_NO_EXECUTE],
            QueueingHint.SKIP,
        ),
    ],
)
def test_node_change_hint(case: str, old_taints: list | None, new_taints: list, hint: QueueingHint) -> None:
    node_event, _ = TaintToleration().events_to_register()
    assert node_event.hint is not None
    old = None if old_taints is None else make_node("n", taints=old_taints)
    assert node_event.hint(make_pod(), old, make_node("n", taints=new_taints)) == hint


def test_toleration_change_hint_queues_only_the_rejected_pod() -> None:
    _, pod_event = TaintToleration().events_to_register()
    assert pod_event.hint is not None
    pod = make_pod("p", uid="u1")
    assert pod_event.hint(pod, pod, make_pod("p", uid="u1", tolerations=[tol()])) == QueueingHint.QUEUE
    assert pod_event.hint(pod, pod, make_pod("q", uid="u2", tolerations=[tol()])) == QueueingHint.SKIP


def test_batch_forms_see_a_node_tainted_after_an_earlier_cycle() -> None:
    # Verdicts are memoised per toleration list and node; replacing the Node object must refresh them.
    plugin = TaintToleration()
    cluster = table_of(
        [make_node("a", taints=[FOO_NO_SCHEDULE]), make_node("b"), make_node("c", taints=[FOO_PREFER])]
    )
    pod = make_pod()

    def answers() -> tuple[list, list]:
        per_node, batch = per_node_and_batch_filter(plugin, CycleState(), pod, cluster)
        assert per_node == batch
        state = CycleState()
        plugin.pre_score(state, pod, cluster.infos)
        per_node_scores, batch_scores = per_node_and_batch_score(plugin, state, pod, cluster)
        assert per_node_scores == batch_scores
        return [s is None for s in batch], batch_scores

    assert answers() == ([False, True, True], [0, 0, 1])
    for name, taints in (("a", []), ("b", [FOO_NO_EXECUTE, FOO_PREFER]), ("c", [])):
        info = cluster.info(name)
        info.node = make_node(name, taints=taints)
        cluster.table.sync_row(info)
    assert answers() == ([True, False, True], [0, 1, 0])
