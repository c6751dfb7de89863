"""Explain's view of the next cycle: the nodes its search would find from the scheduler's start
index, scored and normalized over those only, and the batch's hint (OpportunisticBatching).

In process (no API server): the cycle explain describes is then run for real on the same cache,
and its -v=10 score records and its decision are compared with what explain said.
"""

from __future__ import annotations

import logging
import random
from contextlib import AbstractContextManager
from typing import Any

from scheduler.build import DiscardEvents, DiscardStatus, SchedulerParts, build_scheduler
from scheduler.config import default_config, parse_config
from scheduler.explain import explain_pod, render
from scheduler.explain.model import explanation_from_dict
from scheduler.framework import CycleState
from scheduler.plugins.registry import in_tree_registry
from scheduler.schedule_one import ScheduleResult, run_now
from scheduler.testing import FakeClient, FakeClock, make_node, make_pod
from scheduler.testing.configs import no_default_spread_config
from scheduler.testing.score_log import score_records_to

PREFER_NOT = "PreferNoSchedule"


class ScoreRecords(logging.Handler):
    """The framework's -v=10 score records of one pod: node -> plugin (or "final") -> score."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.scores: dict[str, dict[str, int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        values = record.__dict__
        if "node" in values:
            self.scores.setdefault(values["node"], {})[values["plugin"] or "final"] = values["score"]


def score_records() -> AbstractContextManager[ScoreRecords]:
    return score_records_to(ScoreRecords())


def build(config: Any, clock: FakeClock | None = None) -> SchedulerParts:
    return build_scheduler(
        config,
        in_tree_registry(),
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
        clock=clock or FakeClock(),
        rng=random.Random(1),
    )


def tainted(i: int) -> Any:
    """300 nodes; PreferNoSchedule taints (which TaintToleration counts, then normalizes by the
    highest count among the nodes scored): three on every tenth of the first hundred, one on the
    odd ones of the second hundred, none on the last hundred."""
    if i < 100:
        count = 3 if i % 10 == 0 else 0
    elif i < 200:
        count = i % 2
    else:
        count = 0
    taints = [(f"soft-{k}", "x", PREFER_NOT) for k in range(count)]
    return make_node(f"node-{i:03d}", cpu="8", memory="32Gi", taints=taints)


async def test_cycle_scores_are_those_a_real_cycle_logs_from_its_start_index() -> None:
    config = default_config()
    config.percentage_of_nodes_to_score = 10  # 30 of 300: the floor of 100 nodes applies
    parts = build(config)
    for i in range(300):
        parts.cache.add_node(tainted(i))
    scheduler, fwk = parts.scheduler, parts.frameworks["pyscheduler"]
    warm_up = run_now(scheduler.schedule_pod(fwk, CycleState(), make_pod("warm-up")))
    assert isinstance(warm_up, ScheduleResult) and scheduler.next_start_index == 100

    pod = make_pod("web", requests={"cpu": "1"})
    explanation = await explain_pod(scheduler, fwk, pod, rng=random.Random(7))
    assert scheduler.next_start_index == 100  # explain moved nothing
    with score_records() as logged:
        result = run_now(scheduler.schedule_pod(fwk, CycleState(), pod))
    assert isinstance(result, ScheduleResult)

    view = explanation.cycle
    assert view is not None and (view.start_index, view.wanted, view.hint, view.taken) == (100, 100, "", "")
    ours = {row.node: {**row.plugins, "final": row.total} for row in view.scores}
    assert sorted(ours) == [f"node-{i:03d}" for i in range(100, 200)]  # where the search starts
    assert ours == logged.scores
    assert result.node_name in view.top and explanation.chosen in view.top
    # normalized over every node (the highest count is 3, not 1) the same nodes score otherwise
    over_all = {row.node: row.total for row in explanation.scores}
    assert len(over_all) == 300
    assert any(over_all[node] != scores["final"] for node, scores in ours.items())
    assert ours["node-101"]["TaintToleration"] == 0 and ours["node-100"]["TaintToleration"] > 0

    data = explanation.to_dict()
    assert explanation_from_dict(data) == explanation  # what `explain --server` reads back
    assert len(data["scores"]) == 300 and len(data["cycle"]["scores"]) == 100
    assert data["cycle"]["startIndex"] == 100 and data["cycle"]["top"] == view.top
    text = render(explanation)
    assert (
        "A cycle's scores: the 100 feasible nodes its search finds from position 100 of the node order "
        "(numFeasibleNodesToFind 100), normalized over those:" in text
    )
    assert (
        "All feasible nodes (300), weighted scores normalized over all 300 "
        "(a cycle scores only the 100 above):" in text
    )


BATCHING_CONFIG = no_default_spread_config()


def web(i: int) -> Any:
    """Alike pods, one per node (a host port)."""
    return make_pod(f"web-{i}", requests={"cpu": "500m"}, host_ports=[(8080, "TCP")])


async def test_explain_names_the_batch_hint_the_next_cycle_takes() -> None:
    parts = build(parse_config(BATCHING_CONFIG))
    for i, cpu in enumerate(("2", "4", "8", "16")):
        parts.cache.add_node(make_node(f"n{i}", cpu=cpu, memory="32Gi"))
    scheduler, fwk, queue = parts.scheduler, parts.frameworks["pyscheduler"], parts.queue
    assert fwk.batch is not None

    def cycle(pod: Any) -> ScheduleResult:
        queue.add(pod)
        info = run_now(queue.pop())
        assert info is not None
        result = run_now(scheduler.schedule_pod(fwk, CycleState(), info.pod))
        queue.done(pod.uid)
        assert isinstance(result, ScheduleResult)
        parts.cache.assume_pod(pod.on_node(result.node_name))
        return result

    first = cycle(web(0))
    second = web(1)
    explanation = await explain_pod(scheduler, fwk, second)
    view = explanation.cycle
    assert view is not None and view.hint and view.hint != first.node_name
    assert (explanation.chosen, view.taken, view.scores) == (view.hint, view.hint, [])
    assert "the batch's hint (OpportunisticBatching" in explanation.why_chosen
    assert f"Batch hint (OpportunisticBatching): {view.hint} (taken)" in render(explanation)
    assert explanation.to_dict()["cycle"]["batchHint"] == view.hint

    result = cycle(second)  # explain took nothing from the batch: the cycle gets the same hint
    assert result.node_name == view.hint and fwk.batch.batched_pods == 1


async def test_a_hint_the_pod_no_longer_fits_is_named_and_the_cycle_searches() -> None:
    parts = build(parse_config(BATCHING_CONFIG))
    for i, cpu in enumerate(("2", "4", "8", "16")):
        parts.cache.add_node(make_node(f"n{i}", cpu=cpu, memory="32Gi"))
    scheduler, fwk, queue = parts.scheduler, parts.frameworks["pyscheduler"], parts.queue
    pod = web(0)
    queue.add(pod)
    info = run_now(queue.pop())
    assert info is not None
    first = run_now(scheduler.schedule_pod(fwk, CycleState(), info.pod))
    queue.done(pod.uid)
    assert isinstance(first, ScheduleResult)
    parts.cache.assume_pod(pod.on_node(first.node_name))
    hinted = fwk.batch.peek_hint(web(1), None, CycleState(), 0, parts.cache.snapshot()) if fwk.batch else ""
    assert hinted == ""  # an unsigned pod or another cycle number gets no hint
    # the next node of the ranking fills up with another scheduler's pod: the hint no longer fits
    explanation = await explain_pod(scheduler, fwk, web(1))
    assert explanation.cycle is not None
    hint = explanation.cycle.hint
    parts.cache.add_pod(make_pod("theirs", node_name=hint, host_ports=[(8080, "TCP")]))
    explanation = await explain_pod(scheduler, fwk, web(1))
    view = explanation.cycle
    assert view is not None and view.hint == hint and view.taken == ""
    assert explanation.chosen not in (hint, first.node_name) and explanation.chosen in view.top
    assert f"the batch would hint {hint} (OpportunisticBatching), but the pod does not fit there" in (
        " ".join(explanation.notes)
    )


async def test_without_score_plugins_a_cycle_looks_for_one_node_and_takes_it() -> None:
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "pyscheduler", "plugins": {"score": {"disabled": [{"name": "*"}]}}}
            ],
        }
    )
    parts = build(config)
    for i in range(150):
        parts.cache.add_node(make_node(f"node-{i:03d}"))
    scheduler, fwk = parts.scheduler, parts.frameworks["pyscheduler"]
    assert not fwk.score_plugins
    explanation = await explain_pod(scheduler, fwk, make_pod("web"))
    result = run_now(scheduler.schedule_pod(fwk, CycleState(), make_pod("web")))
    view = explanation.cycle
    assert view is not None and view.wanted == 1 and view.scores == []
    assert isinstance(result, ScheduleResult) and explanation.chosen == result.node_name == "node-000"
    assert explanation.why_chosen == "the only feasible node a cycle's search finds: taken without scoring"
