"""One pod against the scheduler's snapshot, with the scheduler's own code, every node evaluated.

The steps are the scheduling cycle's (``scheduler.schedule_one``): PreFilter, the narrowing by its
result, the search for feasible nodes (asked for all of them instead of percentageOfNodesToScore),
the extenders' filters, PreScore/Score with the per-plugin weighted scores kept, the top set
``select_host`` picks from, and PostFilter's preemption as a dry run. Nothing is assumed,
reserved, bound, evicted or written. Without extenders nothing awaits, so no informer event can
change the cache meanwhile; with them the cache is held while they answer, as a cycle holds it,
each waiting its turn (``Cache.until_released``). The framework's metrics do not time these
evaluations.
"""

from __future__ import annotations

import contextlib
import random

import numpy as np

from scheduler.api import Pod
from scheduler.explain.filtering import FilterPass, filter_every_node
from scheduler.explain.model import Explanation, NodeScore, NodeVerdict, Preemption
from scheduler.explain.suggest import suggest
from scheduler.framework import Code, NodeLister, Status
from scheduler.plugins import names
from scheduler.plugins.defaultpreemption.plugin import DefaultPreemption
from scheduler.runtime import Framework
from scheduler.schedule_one import (
    FitError,
    Scheduler,
    num_feasible_nodes_to_find,
    prioritize_with_extenders,
    select_host,
)

CODE_NAMES = {
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.PENDING: "Pending",
}


async def explain_pod(
    scheduler: Scheduler,
    fwk: Framework,
    pod: Pod,
    *,
    preemption: bool = True,
    suggestions: bool = True,
    rng: random.Random | None = None,
) -> Explanation:
    """Everything a scheduling cycle of ``fwk`` would find for ``pod`` now, and more."""
    snapshot = scheduler.cache.snapshot()
    explanation = Explanation(pod.key, fwk.profile_name, len(snapshot))
    gate, held_back = fwk.pre_enqueue(pod)
    if held_back is not None:
        explanation.notes.append(
            f"PreEnqueue plugin {gate} keeps it out of the active queue: {held_back.message()}"
        )
    if pod.pod_group:
        explanation.notes.append(
            f"a member of pod group {pod.pod_group}: a cycle places the whole group, this is the pod alone"
        )
    held: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if scheduler.extenders:
        await scheduler.cache.until_released()
        held = scheduler.cache.held()
    with held:
        found = await filter_every_node(scheduler, fwk, pod, snapshot)
        if found.error is not None and found.error.is_rejected:  # no nodes at all
            explanation.message = found.error.message()
            return explanation
        if found.error is not None:
            explanation.error = found.error.message()
            return explanation
        _record_rejections(explanation, snapshot, found)
        if len(found.feasible):
            await _score(explanation, scheduler, fwk, pod, snapshot, found, rng or random.Random())
        else:
            if preemption:
                explanation.preemption = await _dry_run_post_filter(explanation, fwk, found, pod)
            explanation.message = FitError(len(snapshot), found.diagnosis).message()
        if suggestions and explanation.rejected and not explanation.scores:  # only for a pending pod
            explanation.suggestions = await suggest(scheduler, fwk, pod, snapshot, explanation)
    return explanation


def _record_rejections(explanation: Explanation, snapshot: NodeLister, found: FilterPass) -> None:
    feasible = {snapshot.table.info(slot).name for slot in found.feasible.tolist()}
    diagnosis = found.diagnosis
    for info in snapshot.node_infos():
        if info.name in feasible:
            continue
        status = diagnosis.status_of(info.name)
        if status is None:
            continue
        explanation.rejected.append(
            NodeVerdict(
                info.name, status.plugin, CODE_NAMES.get(status.code, status.code.name), list(status.reasons)
            )
        )


async def _score(
    explanation: Explanation,
    scheduler: Scheduler,
    fwk: Framework,
    pod: Pod,
    snapshot: NodeLister,
    found: FilterPass,
    rng: random.Random,
) -> None:
    table, feasible = snapshot.table, found.feasible
    with fwk.unobserved():
        plugins, weighted, status = fwk.weighted_scores(found.state, pod, table, feasible)
    if status is not None:
        explanation.error = status.message()
        return
    infos = [table.info(slot) for slot in feasible.tolist()]
    extender_totals = np.zeros(len(feasible), dtype=np.int64)
    if scheduler.extenders:
        extender_totals = await prioritize_with_extenders(scheduler.extenders, pod, infos)
    totals = weighted.sum(axis=0) + extender_totals if plugins else extender_totals
    explanation.score_plugins = plugins
    by_plugin, by_extenders, by_node = weighted.tolist(), extender_totals.tolist(), totals.tolist()
    rows = [
        NodeScore(
            info.name,
            {name: by_plugin[row][column] for row, name in enumerate(plugins)},
            by_extenders[column],
            by_node[column],
        )
        for column, info in enumerate(infos)
    ]
    best = int(totals.max())
    explanation.top = sorted(row.node for row in rows if row.total == best)
    explanation.scores = sorted(rows, key=lambda row: (-row.total, row.node))
    wanted = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(snapshot))
    if len(feasible) > wanted:
        explanation.notes.append(
            f"a cycle stops at {wanted} feasible nodes (percentageOfNodesToScore) and normalizes the "
            f"scores over those; here all {len(feasible)} are scored"
        )
    nominated = pod.nominated_node_name
    if nominated and nominated in {info.name for info in infos}:
        explanation.chosen = nominated
        explanation.why_chosen = "its nominated node fits: a cycle takes it without scoring"
    elif len(infos) == 1:
        explanation.chosen = infos[0].name
        explanation.why_chosen = "the only feasible node"
    else:
        explanation.chosen = infos[select_host(totals, rng)].name
        if len(explanation.top) == 1:
            explanation.why_chosen = f"the highest total score ({best})"
        else:
            explanation.why_chosen = (
                f"{len(explanation.top)} nodes share the highest total ({best}): "
                "a cycle picks one of them at random"
            )


async def _dry_run_post_filter(
    explanation: Explanation, fwk: Framework, found: FilterPass, pod: Pod
) -> Preemption | None:
    """PostFilter as ``Framework.run_post_filter`` runs it (in order, until one succeeds, the
    rejections' reasons joined), acting on nothing: DefaultPreemption's choice without its
    evictions; DynamicResources as is when the pod has no claims (it then only answers that it
    has nothing to deallocate); other plugins have no dry run and are left out (noted)."""
    reasons: list[str] = []
    preemption = None
    for plugin in fwk.post_filter_plugins:
        if isinstance(plugin, DefaultPreemption):
            best, _, status = await plugin.choose(found.state, pod, found.diagnosis)
            if best is not None:
                victims = [victim.key for victim in best.victims.pods]
                preemption = Preemption(plugin.name, best.node_name, victims, best.victims.num_pdb_violations)
                reasons = []  # a PostFilter that succeeds leaves no message
                break
            message = status.message() if status is not None else ""
            preemption = Preemption(plugin.name, message=message)
            status = (
                Status(status.code, (f"preemption: {message}",)) if status is not None and message else status
            )
        elif plugin.name == names.DYNAMIC_RESOURCES and not pod.resource_claims:
            _, status = await plugin.post_filter(found.state, pod, found.diagnosis)
        else:
            explanation.notes.append(f"PostFilter plugin {plugin.name} has no dry run: left out")
            continue
        if status is None or status.is_success:
            reasons = []
            break
        if status.code != Code.UNSCHEDULABLE:
            reasons = list(status.reasons)  # alone, as run_post_filter returns it
            break
        reasons.extend(status.reasons)
    found.diagnosis.post_filter_msg = ", ".join(reasons)
    return preemption
