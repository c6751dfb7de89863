"""CostByLabel: table tests with scheduler.testing, its two Score forms, its args."""

from __future__ import annotations

import pytest
from pyscheduler_example_plugins import CostByLabel, CostByLabelArgs

from scheduler.framework import CycleState, SignPlugin
from scheduler.testing import make_node, make_pod, per_node_and_batch_score, run_plugin, table_of

LIFECYCLE = "node.kubernetes.io/lifecycle"


def node(name: str, lifecycle: str | None = None, cpu: str = "4"):
    return make_node(name, cpu=cpu, labels={LIFECYCLE: lifecycle} if lifecycle else {})


def test_spot_nodes_score_above_on_demand_ones() -> None:
    nodes = [node("od-1", "on-demand"), node("spot-1", "spot"), node("bare")]
    outcome = run_plugin(CostByLabel, nodes=nodes, pod=make_pod("p"), args=CostByLabelArgs())
    assert outcome.raw_scores == {"od-1": 100, "spot-1": 10, "bare": 100}
    # the saving against the dearest feasible node, in percent
    assert outcome.scores == {"od-1": 0, "spot-1": 90, "bare": 0}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (CostByLabelArgs(cost={"spot": 30, "on-demand": 60}, default_cost=120), {"a": 75, "b": 50, "c": 0}),
        (CostByLabelArgs(cost={"spot": 0, "on-demand": 0}, default_cost=0), {"a": 100, "b": 100, "c": 100}),
        (CostByLabelArgs(label="example.com/tier"), {"a": 0, "b": 0, "c": 0}),  # nobody has it
    ],
    ids=["three prices", "all free", "other label"],
)
def test_scores_follow_the_configured_costs(args: CostByLabelArgs, expected: dict[str, int]) -> None:
    nodes = [node("a", "spot"), node("b", "on-demand"), node("c", "reserved")]
    assert run_plugin(CostByLabel, nodes=nodes, pod=make_pod("p"), args=args).scores == expected


def test_per_node_and_batch_forms_agree_as_nodes_change() -> None:
    """run_plugin already fails when the two forms differ; this also changes the table under the
    batch form's memo (a pod lands, a node is relabelled, one is removed and another added)."""
    cluster = table_of([node(f"n{i}", ("spot", "on-demand", None)[i % 3]) for i in range(9)])
    plugin = CostByLabel(CostByLabelArgs(), handle=None)  # type: ignore[arg-type]
    state, pod = CycleState(), make_pod("p")
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch == [10, 100, 100] * 3

    info = cluster.info("n0")  # n0 turns on-demand
    info.node = make_node("n0", labels={LIFECYCLE: "on-demand"})
    cluster.table.sync_row(info)
    gone = cluster.info("n1")
    cluster.table.remove(gone)
    cluster.infos.remove(gone)
    assert per_node_and_batch_score(plugin, state, pod, cluster) == ([100, 100] + [10, 100, 100] * 2,) * 2


def test_normalize_keeps_scores_in_range_for_any_costs() -> None:
    nodes = [node("free", "spot"), node("dear", "on-demand")]
    args = CostByLabelArgs(cost={"spot": 0, "on-demand": 10**9})
    outcome = run_plugin(CostByLabel, nodes=nodes, pod=make_pod("p"), args=args)
    assert outcome.scores == {"free": 100, "dear": 0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (CostByLabelArgs(cost={"spot": -1}), "cost.spot: Invalid value: -1: must not be negative"),
        (CostByLabelArgs(default_cost=-5), "defaultCost: Invalid value: -5: must not be negative"),
        (CostByLabelArgs(label="not a label"), "label: Invalid value: 'not a label': must be a label key"),
    ],
)
def test_validate_names_the_bad_field(args: CostByLabelArgs, message: str) -> None:
    assert any(error.startswith(message) for error in args.validate()), args.validate()


def test_the_defaults_are_valid() -> None:
    assert CostByLabelArgs().validate() == []


def test_it_signs_pods_with_nothing_so_its_profile_can_batch_them() -> None:
    # a node's cost depends on its labels only: any two pods get the same scores
    plugin = CostByLabel(CostByLabelArgs(), handle=None)  # type: ignore[arg-type]
    assert isinstance(plugin, SignPlugin)
    assert plugin.sign_pod(make_pod("p", labels={"app": "web"})) == ((), None)
