"""The next scheduling cycle for a pod, as ``Scheduler.schedule_pod`` would run it now.

Upstream's findNodesThatFitPod and prioritizeNodes (v1.36): the batch's hint is asked for, the
nominated node (else the hinted one) is tried first and taken if it passes the filters, without
scoring; otherwise the search walks the candidates from the scheduler's rotating start index
and stops at numFeasibleNodesToFind feasible nodes (percentageOfNodesToScore), and only those are
scored, normalized over those. Nothing moves: the start index, the batch's stored list and its
metrics stay as they are.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from scheduler.api import Pod
from scheduler.explain.filtering import FilterPass
from scheduler.explain.model import CycleView
from scheduler.explain.scoring import Scored, score_nodes
from scheduler.framework import CycleState, NodeLister, Status
from scheduler.runtime import Framework
from scheduler.schedule_one import (
    Scheduler,
    feasible_nodes_wanted,
    find_nodes_that_pass_filters,
    select_host,
)


@dataclass(slots=True)
class CycleChoice:
    view: CycleView
    chosen: str  # "" when the nodes the search finds are all filtered out by extenders
    why: str


async def next_cycle(
    scheduler: Scheduler,
    fwk: Framework,
    pod: Pod,
    snapshot: NodeLister,
    found: FilterPass,
    state: CycleState,
    extender_scores: Mapping[str, int],
    rng: random.Random,
) -> CycleChoice | Status:
    """What a cycle for ``pod`` would do now. ``found`` is the filtering of every node (its
    ``feasible`` already passed the extenders' filters), ``state`` a clone of its state as
    PreFilter left it, ``extender_scores`` the extenders' part of each node's score."""
    num_nodes = len(snapshot)
    start = scheduler.next_start_index % num_nodes
    wanted = feasible_nodes_wanted(fwk, scheduler.extenders, len(found.candidates))
    view = CycleView(start, wanted)
    if fwk.batch is not None:
        with fwk.unobserved():
            signature = fwk.sign_pod(state, pod)
        next_cycle_number = scheduler.queue.scheduling_cycle() + 1  # were it popped next
        view.hint = fwk.batch.peek_hint(pod, signature, state, next_cycle_number, snapshot)
    nominated = scheduler.nominated_to_respect(pod)
    first = pod.nominated_node_name or view.hint
    # the scheduler's own check, untimed; an extender's error counts as no fit
    fits = first and await scheduler.nominated_node_fits(
        fwk, state, pod, snapshot, first, nominated, timed=False
    )
    if fits is True:
        view.taken = first
        why = (
            "its nominated node fits: a cycle takes it without scoring"
            if pod.nominated_node_name
            else "the batch's hint (OpportunisticBatching: the next node of the previous alike "
            "pod's ranking) fits: a cycle takes it without searching or scoring"
        )
        return CycleChoice(view, first, why)
    order = snapshot.order
    rotated = np.concatenate((order[start:], order[:start])) if start else order
    candidates = rotated[np.isin(rotated, found.candidates)]
    with fwk.unobserved():
        search = find_nodes_that_pass_filters(
            fwk, state, pod, snapshot, candidates, nominated, scheduler.extenders
        )
    if search.error is not None:
        return search.error
    # the extenders' verdicts are those of the filtering of every node (not asked again)
    slots = search.feasible[np.isin(search.feasible, found.feasible)]
    table = snapshot.table
    if len(slots) == 0:
        return CycleChoice(view, "", "the extenders filter out every node a cycle's search finds")
    if len(slots) == 1:
        only = table.info(int(slots[0])).name
        return CycleChoice(view, only, "the only feasible node a cycle's search finds: taken without scoring")
    scored = score_nodes(fwk, state, pod, table, slots, extender_scores)
    if isinstance(scored, Status):
        return scored
    view.scores, view.top = scored.ranked(), scored.top()
    chosen = scored.rows[select_host(scored.totals, rng)].node
    return CycleChoice(view, chosen, _why_best(scored))


def _why_best(scored: Scored) -> str:
    best = int(scored.totals.max())
    tied = int((scored.totals == best).sum())
    if tied == 1:
        return f"the highest total score ({best}) of the nodes a cycle scores"
    return f"{tied} nodes share the highest total ({best}): a cycle picks one of them at random"
