"""The framework runtime: multiPoint expansion, filter runs, scoring, FailedScheduling messages."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.api import Node, Pod, Resource
from scheduler.apidispatcher.events import truncate_note
from scheduler.config import PluginRef, Plugins, PluginSet, Profile
from scheduler.framework import (
    Code,
    CycleState,
    Diagnosis,
    NodeInfo,
    NodeTable,
    NodeVerdicts,
    PreFilterResult,
    Status,
)
from scheduler.framework.messages import fit_error_message
from scheduler.runtime import Framework, FrameworkError
from scheduler.schedule_one import find_nodes_that_pass_filters, num_feasible_nodes_to_find, select_host


class Sort:
    name = "Sort"

    def __init__(self, args, handle):
        pass

    def sort_key(self, info):
        return (-info.pod.priority, info.timestamp)


class Binder:
    name = "Binder"

    def __init__(self, args, handle):
        pass

    async def bind(self, state, pod, node_name):
        return None


class EvenSlotsOnly:
    """A batch filter rejecting odd slots."""

    name = "EvenSlotsOnly"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node_info):
        return None if node_info.slot % 2 == 0 else Status.unschedulable("odd slot")

    def filter_nodes(self, state, pod, table, slots):
        return NodeVerdicts.uniform(slots % 2 == 1, Status.unschedulable("odd slot"))


class NotNamed:
    """A per-node filter rejecting one node by name."""

    name = "NotNamed"
    banned = "node-2"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node_info):
        return Status.unresolvable("banned node") if node_info.name == self.banned else None


class SlotScore:
    name = "SlotScore"

    def __init__(self, args, handle):
        pass

    def score(self, state, pod, node_info):
        return node_info.slot


REGISTRY = {cls.name: cls for cls in (Sort, Binder, EvenSlotsOnly, NotNamed, SlotScore)}


def profile(multi: list[PluginRef], **points: PluginSet) -> Profile:
    return Profile(scheduler_name="test", plugins=Plugins(multi_point=PluginSet(enabled=multi), **points))


def make_table(count: int) -> NodeTable:
    table = NodeTable()
    for i in range(count):
        table.add(NodeInfo(Node(name=f"node-{i}", allocatable=Resource(milli_cpu=1000))))
    return table


class Snapshot:
    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.order = np.flatnonzero(table.valid)

    def __len__(self) -> int:
        return len(self.order)

    def get(self, name):
        return next((i for i in self.table.infos if i is not None and i.name == name), None)


POD = Pod(uid="u1", namespace="default", name="p")


def test_multi_point_plugins_join_every_extension_point_they_implement():
    fwk = Framework(
        profile([PluginRef("Sort"), PluginRef("EvenSlotsOnly"), PluginRef("Binder")]), REGISTRY, None
    )
    assert [p.name for p in fwk.filter_plugins] == ["EvenSlotsOnly"]
    assert fwk.queue_sort.name == "Sort"
    assert [p.name for p in fwk.bind_plugins] == ["Binder"]
    assert fwk.score_plugins == []


def test_explicit_entries_come_first_and_their_weight_wins():
    fwk = Framework(
        profile(
            [PluginRef("Sort"), PluginRef("Binder"), PluginRef("SlotScore", 2), PluginRef("EvenSlotsOnly")],
            filter=PluginSet(enabled=[PluginRef("NotNamed"), PluginRef("EvenSlotsOnly")]),
            score=PluginSet(enabled=[PluginRef("SlotScore", 5)]),
        ),
        REGISTRY,
        None,
    )
    # overrides (in multiPoint and explicit) first, then multiPoint-only, then explicit-only
    assert [p.name for p in fwk.filter_plugins] == ["EvenSlotsOnly", "NotNamed"]
    assert [(p.name, w) for p, w in fwk.score_plugins] == [("SlotScore", 5)]


def test_disabled_at_one_point_removes_a_multi_point_plugin_there_only():
    fwk = Framework(
        profile(
            [PluginRef("Sort"), PluginRef("Binder"), PluginRef("EvenSlotsOnly")],
            filter=PluginSet(disabled=[PluginRef("EvenSlotsOnly")]),
        ),
        REGISTRY,
        None,
    )
    assert fwk.filter_plugins == []


@pytest.mark.parametrize(
    ("multi", "points", "message"),
    [
        ([PluginRef("Binder")], {}, "exactly one queueSort plugin"),
        ([PluginRef("Sort")], {}, "at least one bind plugin"),
        ([PluginRef("Sort"), PluginRef("Binder"), PluginRef("Nope")], {}, "'Nope' is not registered"),
        (
            [PluginRef("Sort"), PluginRef("Binder")],
            {"score": PluginSet(enabled=[PluginRef("NotNamed")])},
            "'NotNamed' does not implement the score",
        ),
    ],
)
def test_an_unusable_profile_is_refused_with_the_reason(multi, points, message):
    with pytest.raises(FrameworkError, match=message):
        Framework(profile(multi, **points), REGISTRY, None)


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (None, 50, 50),  # fewer than 100 nodes: all of them
        (None, 1000, 420),  # adaptive: 50 - 1000/125 = 42%
        (None, 5000, 500),  # adaptive: 50 - 40 = 10%
        (None, 10000, 500),  # adaptive floor 5%
        (30, 1000, 300),
        (1, 1000, 100),  # never fewer than 100
        (100, 1000, 1000),
    ],
)
def test_number_of_feasible_nodes_to_find_follows_upstream(percentage, nodes, expected):
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_without_score_plugins_the_first_feasible_node_is_enough():
    fwk = Framework(profile([PluginRef("Sort"), PluginRef("Binder"), PluginRef("NotNamed")]), REGISTRY, None)
    snapshot = Snapshot(make_table(6))
    search = find_nodes_that_pass_filters(fwk, CycleState(), POD, snapshot, snapshot.order, {})
    feasible, processed = search.feasible, search.processed
    assert feasible.tolist() == [0]
    assert processed == 1


def test_batch_and_per_node_filters_attribute_each_rejection_to_the_first_failing_plugin():
    plugins = ["Sort", "Binder", "EvenSlotsOnly", "NotNamed", "SlotScore"]
    fwk = Framework(
        profile([PluginRef(name) for name in plugins]),
        REGISTRY,
        None,
    )
    snapshot = Snapshot(make_table(6))
    search = find_nodes_that_pass_filters(fwk, CycleState(), POD, snapshot, snapshot.order, {})
    feasible, rejections, processed = search.feasible, search.rejections, search.processed
    assert feasible.tolist() == [0, 4]
    assert processed == 6
    diagnosis = rejections.to_diagnosis(snapshot.table)
    assert {n: s.reasons for n, s in diagnosis.node_to_status.items()} == {
        "node-1": ("odd slot",),
        "node-3": ("odd slot",),
        "node-5": ("odd slot",),
        "node-2": ("banned node",),
    }
    assert diagnosis.unschedulable_plugins == {"EvenSlotsOnly", "NotNamed"}


def test_the_search_stops_once_enough_feasible_nodes_are_found():
    fwk = Framework(
        profile([PluginRef("Sort"), PluginRef("Binder"), PluginRef("NotNamed"), PluginRef("SlotScore")]),
        REGISTRY,
        None,
    )
    fwk.percentage_of_nodes_to_score = 1  # 100 of 400 nodes
    snapshot = Snapshot(make_table(400))
    search = find_nodes_that_pass_filters(fwk, CycleState(), POD, snapshot, snapshot.order, {})
    feasible, processed = search.feasible, search.processed
    assert len(feasible) == 100
    assert processed == 101  # node-2 was rejected on the way


def test_scores_are_weighted_and_the_best_node_wins():
    fwk = Framework(
        profile([PluginRef("Sort"), PluginRef("Binder"), PluginRef("SlotScore", 3)]),
        REGISTRY,
        None,
    )
    table = make_table(5)
    totals, status = fwk.run_scoring(CycleState(), POD, table, np.array([1, 3, 2]))
    assert status is None
    assert totals.tolist() == [3, 9, 6]
    assert select_host(totals, random.Random(1)) == 1


def test_ties_are_broken_at_random_among_the_best():
    rng = random.Random(7)
    picks = {select_host(np.array([5, 9, 9, 1, 9]), rng) for _ in range(200)}
    assert picks == {1, 2, 4}


def test_fit_error_message_counts_and_sorts_reasons_like_upstream():
    diagnosis = Diagnosis(
        node_to_status={
            "a": Status.unschedulable("Insufficient cpu", "Insufficient memory"),
            "b": Status.unschedulable("Insufficient cpu"),
            "c": Status.unresolvable("node(s) had untolerated taint(s)"),
        }
    )
    assert fit_error_message(3, diagnosis) == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), "
        "2 Insufficient cpu."
    )
    diagnosis.post_filter_msg = (
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert fit_error_message(3, diagnosis).endswith(
        "2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_a_prefilter_rejection_replaces_the_per_node_reasons():
    diagnosis = Diagnosis(
        node_to_status={"a": Status.unschedulable("Insufficient cpu")},
        pre_filter_msg="pod has unbound immediate PersistentVolumeClaims",
    )
    assert fit_error_message(4, diagnosis) == (
        "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    )


def test_long_notes_are_cut_to_the_event_limit_in_bytes():
    assert truncate_note("x" * 10) == "x" * 10
    cut = truncate_note("y" * 2000)
    assert len(cut) == 1024
    assert cut.endswith(" ...")
    wide = truncate_note("é" * 1000)  # 2 bytes each
    assert len(wide.encode()) <= 1024
    assert wide.endswith(" ...")


def test_nodes_excluded_by_prefilter_count_under_the_absent_status():
    diagnosis = Diagnosis(
        node_to_status={"n1": Status.unschedulable("Insufficient cpu")},
        absent_nodes_status=Status.unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
    )
    assert fit_error_message(10, diagnosis) == (
        "0/10 nodes are available: 1 Insufficient cpu, 9 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


class Exploding:
    name = "Exploding"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node_info):
        raise RuntimeError("boom")

    def filter_nodes(self, state, pod, table, slots):
        raise RuntimeError("boom")

    def score(self, state, pod, node_info):
        raise RuntimeError("bang")


@pytest.mark.parametrize(
    ("point", "message"),
    [
        # upstream wraps the error as RunFilterPlugins / RunScorePlugins do
        ("filter", 'running "Exploding" filter plugin: boom'),
        ("score", 'running Score plugins: plugin "Exploding" failed with: bang'),
    ],
)
def test_a_plugin_that_raises_ends_the_cycle_with_an_error_worded_as_upstream(point, message):
    registry = {**REGISTRY, "Exploding": Exploding}
    enabled = [PluginRef("Sort"), PluginRef("Binder")]
    points = {point: PluginSet(enabled=[PluginRef("Exploding")])}
    fwk = Framework(profile(enabled, **points), registry, None)
    snapshot = Snapshot(make_table(3))
    if point == "filter":
        status = find_nodes_that_pass_filters(fwk, CycleState(), POD, snapshot, snapshot.order, {}).error
    else:
        _, status = fwk.run_scoring(CycleState(), POD, snapshot.table, snapshot.order)
    assert status is not None
    assert (status.plugin, status.code, status.message()) == ("Exploding", Code.ERROR, message)


class OutOfRange:
    name = "OutOfRange"

    def __init__(self, args, handle):
        pass

    def score(self, state, pod, node_info):
        return 101


def test_a_score_above_100_is_an_error_worded_as_upstream():
    registry = {**REGISTRY, "OutOfRange": OutOfRange}
    fwk = Framework(
        profile([PluginRef("Sort"), PluginRef("Binder"), PluginRef("OutOfRange")]), registry, None
    )
    _, status = fwk.run_scoring(CycleState(), POD, make_table(2), np.array([0, 1]))
    assert status is not None and status.message() == (
        'applying score defaultWeights on Score plugins: plugin "OutOfRange" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )


def _pre_filter_plugin(plugin_name: str, status: Status | None, nodes: frozenset[str] | None = None):
    class PreFiltering:
        name = plugin_name

        def __init__(self, args, handle):
            pass

        def pre_filter(self, state, pod, snapshot):
            return (PreFilterResult(nodes) if nodes is not None else None), status

    return PreFiltering


def test_the_last_unschedulable_prefilter_is_reported_and_all_of_them_run():
    # upstream RunPreFilterPlugins keeps going after Unschedulable (for preemption) and
    # returns the last such status; narrowing plugins count among the rejectors
    registry = {
        **REGISTRY,
        "First": _pre_filter_plugin("First", Status.unschedulable("first says no")),
        "Narrow": _pre_filter_plugin("Narrow", None, frozenset({"node-1"})),
        "Second": _pre_filter_plugin("Second", Status.unschedulable("second says no")),
    }
    plugins = [PluginRef(name) for name in ("Sort", "Binder", "First", "Narrow", "Second")]
    fwk = Framework(profile(plugins), registry, None)
    result, status, rejecting = fwk.run_pre_filter(CycleState(), POD, Snapshot(make_table(2)))
    assert result is None
    assert status.message() == "second says no" and status.plugin == "Second"
    assert rejecting == {"Narrow", "Second"}


def test_a_prefilter_error_is_worded_as_upstream():
    registry = {**REGISTRY, "Broken": _pre_filter_plugin("Broken", Status(Code.ERROR, ("no state",)))}
    fwk = Framework(profile([PluginRef("Sort"), PluginRef("Binder"), PluginRef("Broken")]), registry, None)
    _, status, _ = fwk.run_pre_filter(CycleState(), POD, Snapshot(make_table(2)))
    assert status.code == Code.ERROR
    assert status.message() == 'running PreFilter plugin "Broken": no state'


class Waits:
    name = "Waits"

    def __init__(self, args, handle):
        pass

    def permit(self, state, pod, node_name):
        return Status(Code.WAIT, ("waiting for the gang",)), 1200.0


async def test_a_waiting_permit_says_why_and_times_out_with_upstreams_wording():
    registry = {**REGISTRY, "Waits": Waits}
    fwk = Framework(profile([PluginRef("Sort"), PluginRef("Binder"), PluginRef("Waits")]), registry, None)
    status = fwk.run_permit(CycleState(), POD, "node-0")
    assert status.code == Code.WAIT
    assert status.reasons == (
        "waiting for the gang",
        "one or more plugins asked to wait and no plugin rejected pod",
    )
    waiting = fwk.waiting_pods.get(POD.uid)
    # the timeout is cut to upstream's 15 minutes; the message prints it as a Go duration
    assert waiting.timeouts == {"Waits": 900.0}
    waiting.reject("Waits", waiting.timeout_message("Waits"))
    rejected = await fwk.wait_on_permit(POD)
    assert rejected.message() == "rejected due to timeout after waiting 15m0s at plugin Waits"


class _Metrics:
    def __init__(self):
        self.points: list[tuple[str, str, str]] = []
        self.plugins: list[tuple[str, str, str]] = []

    def observe_extension_point(self, point, status, profile, duration):
        self.points.append((point, status, profile))

    def observe_plugin(self, plugin, point, status, duration):
        self.plugins.append((plugin, point, status))


def test_extension_points_are_timed_and_plugins_only_in_sampled_cycles():
    metrics = _Metrics()
    plugins = [PluginRef("Sort"), PluginRef("Binder"), PluginRef("EvenSlotsOnly"), PluginRef("SlotScore")]
    fwk = Framework(profile(plugins), REGISTRY, None, metrics=metrics)
    snapshot = Snapshot(make_table(4))
    find_nodes_that_pass_filters(fwk, CycleState(), POD, snapshot, snapshot.order, {})
    assert metrics.points == [("Filter", "Success", "test")]
    assert metrics.plugins == []
    sampled = CycleState()
    sampled.record_plugin_metrics = True
    fwk.run_scoring(sampled, POD, snapshot.table, np.array([0, 2]))
    assert metrics.points[1:] == [("PreScore", "Success", "test"), ("Score", "Success", "test")]
    assert metrics.plugins == [("SlotScore", "Score", "Success")]
