"""One pod against the scheduler's snapshot, with the scheduler's own code, every node evaluated.

The steps are the scheduling cycle's (``scheduler.schedule_one``): PreFilter, the narrowing by its
result, the search for feasible nodes (asked for all of them instead of percentageOfNodesToScore),
the extenders' filters, PreScore/Score with the per-plugin weighted scores kept, the top set
``select_host`` picks from, and PostFilter's preemption as a dry run. Scores are normalized over
every feasible node; the next cycle's own view (``scheduler.explain.cycle``: the nominated or
hinted node, else the nodes its search would find, normalized over those) decides the node.
Nothing is assumed, reserved, bound, evicted or written. Without extenders nothing awaits, so no
informer event can change the cache meanwhile; with them the cache is held while they answer, as
a cycle holds it, each waiting its turn (``Cache.until_released``). The framework's metrics do
not time these evaluations.
"""

from __future__ import annotations

import contextlib
import random

from scheduler.api import Pod
from scheduler.explain.cycle import next_cycle
from scheduler.explain.filtering import FilterPass, filter_every_node
from scheduler.explain.model import Explanation, NodeVerdict, Preemption
from scheduler.explain.scoring import Scored, score_nodes
from scheduler.explain.suggest import suggest
from scheduler.framework import Code, NodeLister, Status
from scheduler.plugins import names
from scheduler.plugins.defaultpreemption.plugin import DefaultPreemption
from scheduler.runtime import Framework
from scheduler.schedule_one import FitError, Scheduler, prioritize_with_extenders, select_host

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
    cycle: bool = True,
    rng: random.Random | None = None,
) -> Explanation:
    """Everything a scheduling cycle of ``fwk`` would find for ``pod`` now, and more. With
    ``cycle`` False the node is chosen among every feasible node, as if nothing were sampled
    (shadow mode: another scheduler's start index and batch are not ours)."""
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
            await _score(explanation, scheduler, fwk, pod, snapshot, found, cycle, rng or random.Random())
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
    cycle: bool,
    rng: random.Random,
) -> None:
    cycle_state = found.state.clone()  # as PreFilter left it: the all-node PreScore runs on the other
    table, feasible = snapshot.table, found.feasible
    infos = [table.info(slot) for slot in feasible.tolist()]
    extender_scores: dict[str, int] = {}
    if scheduler.extenders:
        totals = await prioritize_with_extenders(scheduler.extenders, pod, infos)
        extender_scores = dict(zip((info.name for info in infos), totals.tolist(), strict=True))
    scored = score_nodes(fwk, found.state, pod, table, feasible, extender_scores)
    if isinstance(scored, Status):
        explanation.error = scored.message()
        return
    explanation.score_plugins = scored.plugins
    explanation.scores, explanation.top = scored.ranked(), scored.top()
    if not cycle:
        _choose_among_all(explanation, pod, scored, rng)
        return
    choice = await next_cycle(scheduler, fwk, pod, snapshot, found, cycle_state, extender_scores, rng)
    if isinstance(choice, Status):
        explanation.error = choice.message()
        return
    explanation.cycle, explanation.chosen, explanation.why_chosen = choice.view, choice.chosen, choice.why
    view = choice.view
    if not view.taken and len(feasible) > view.wanted:
        explanation.notes.append(
            f"a cycle stops at {view.wanted} feasible nodes (percentageOfNodesToScore), searching from "
            f"position {view.start_index} of the node order, and normalizes the scores over those, so "
            f"they can differ from the scores over all {len(feasible)} feasible nodes (both are shown)"
        )
    if view.hint and not view.taken:
        explanation.notes.append(
            f"the batch would hint {view.hint} (OpportunisticBatching), but the pod does not fit "
            "there: a cycle searches as usual"
        )


def _choose_among_all(explanation: Explanation, pod: Pod, scored: Scored, rng: random.Random) -> None:
    """The node a cycle would choose were every feasible node scored."""
    rows = scored.rows
    nominated = pod.nominated_node_name
    if nominated and nominated in {row.node for row in rows}:
        explanation.chosen = nominated
        explanation.why_chosen = "its nominated node fits: a cycle takes it without scoring"
    elif len(rows) == 1:
        explanation.chosen = rows[0].node
        explanation.why_chosen = "the only feasible node"
    else:
        explanation.chosen = rows[select_host(scored.totals, rng)].node
        best = explanation.scores[0].total
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
