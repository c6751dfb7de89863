"""The DefaultPreemption PostFilter plugin (upstream's defaultpreemption + preemption.Evaluator).

When no node fits a pod, find nodes where evicting lower-priority pods would make it fit,
let the extenders with a preempt verb narrow these candidates (or change their victims),
pick the one whose eviction hurts least, nominate the pod there and evict the victims in the
background. The filters count nominated pods, so the freed room waits for the preemptor.
``post_filter`` is a coroutine only for the extenders' sake: without them it never suspends.

Gangs (pyscheduler's guards, docs/gang.md): a member's preemption in a pod group's trial is only
recorded (deferred.py) until the whole group fits; victims that belong to a gang go with their
whole gang or not at all (gangs.py); a Coscheduling member preempts only when its group could
then be placed (groupfit.py).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from typing import ClassVar

from scheduler.api import Pod
from scheduler.config import DefaultPreemptionArgs
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Extender,
    Handle,
    NodeInfo,
    NodeLister,
    PluginsRunner,
    PostFilterResult,
    QueueingHint,
    Status,
    WaitingPods,
)
from scheduler.framework.interface import POD
from scheduler.framework.messages import fit_error_message
from scheduler.plugins import names
from scheduler.plugins.defaultpreemption.candidates import Candidate, dry_run, num_candidates, pick_one
from scheduler.plugins.defaultpreemption.deferred import deferred_evictions
from scheduler.plugins.defaultpreemption.executor import Executor, terminating_by_preemption
from scheduler.plugins.defaultpreemption.gangs import whole_gangs
from scheduler.plugins.defaultpreemption.groupfit import group_refusal
from scheduler.plugins.defaultpreemption.pdb import Budget, parse_budgets

log = logging.getLogger(__name__)

NOT_HELPFUL = "Preemption is not helpful for scheduling"
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
NEVER = "not eligible due to preemptionPolicy=Never."
VICTIMS_TERMINATING = "not eligible due to a terminating pod on the nominated node."


class DefaultPreemption:
    name: ClassVar[str] = names.DEFAULT_PREEMPTION

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        self.args = args or DefaultPreemptionArgs()
        self._handle = handle
        self.rng = random.Random()
        self.executor = Executor(handle, self.name, self._waiting_pods)

    # ------------------------------------------------------------------ PreEnqueue

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold a preemptor back while its victims are still being evicted (upstream does too), so
        a retry before the evictions land cannot start a second preemption elsewhere."""
        if self.executor.holds_back(pod.uid):
            return Status.unresolvable(WAITING_FOR_PREEMPTION)
        return None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        """A pod deletion may end the wait PreEnqueue imposes: the preemptor held back is looked at
        again once its victims are gone (upstream registers the same event)."""
        return (ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deletion),)

    def _after_pod_deletion(self, pod: Pod, old: Pod, new: Pod | None) -> QueueingHint:
        return QueueingHint.SKIP if self.executor.holds_back(pod.uid) else QueueingHint.QUEUE

    # ------------------------------------------------------------------ PostFilter

    async def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, status, victims = await self._preempt(state, pod, diagnosis)
        if self._handle.metrics is not None:
            self._handle.metrics.observe_preemption(victims)
        if status is not None and status.reasons:
            status = Status(status.code, (f"preemption: {status.message()}",), self.name, status.error)
        return result, status

    async def _preempt(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None, int | None]:
        pod = self._latest(pod)
        best, result, status = await self.choose(state, pod, diagnosis)
        if best is None:
            return result, status, None
        to_evict = [v for v in best.victims.pods if not v.is_terminating]
        if not to_evict:
            # As upstream: every victim is already on its way out, so nothing is called, no
            # nomination is cleared and the pod waits for their deletion like any other event.
            return PostFilterResult(best.node_name), None, None
        displaced = [
            p
            for p in self._handle.nominated_pods_for_node(best.node_name)
            if p.priority < pod.priority and p.uid != pod.uid
        ]
        deferred = deferred_evictions(state)
        if deferred is not None:  # a pod group's trial: evict only once the whole group fits
            node_name = best.node_name
            deferred.defer(pod.uid, to_evict, lambda fresh: self._start(pod, node_name, fresh, displaced))
            return PostFilterResult(best.node_name), None, None
        log.info("preempting %d pod(s) on %s for %s", len(to_evict), best.node_name, pod.key)
        self.executor.start(pod, best.node_name, to_evict, displaced)
        return PostFilterResult(best.node_name), None, len(best.victims.pods)

    def _start(self, pod: Pod, node_name: str, to_evict: list[Pod], displaced: list[Pod]) -> None:
        """A deferred preemption carried out: its victims are counted when evicted."""
        log.info(
            "preempting %d pod(s) on %s for %s, its pod group fitting", len(to_evict), node_name, pod.key
        )
        if self._handle.metrics is not None:
            self._handle.metrics.observe_preemption_victims(len(to_evict))
        self.executor.start(pod, node_name, to_evict, displaced)

    async def choose(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[Candidate | None, PostFilterResult | None, Status | None]:
        """The dry run alone, evicting nothing: the candidate preemption would pick (its node and
        victims), or (None, the result, the status) PostFilter answers when none helps. Explain
        calls it directly."""
        eligible, reason = self.eligible(pod, diagnosis)
        if not eligible:
            return None, None, Status.unschedulable(reason)

        snapshot = self._handle.snapshot
        all_nodes = snapshot.node_infos()
        if not all_nodes:
            return None, None, Status.from_error(RuntimeError("no nodes available"))
        potential = nodes_where_preemption_might_help(all_nodes, diagnosis)
        candidates: list[Candidate] = []
        statuses: dict[str, Status] = {}
        if potential:
            runner = self._runner()
            offset = self.rng.randrange(len(potential))
            args = self.args
            wanted = num_candidates(
                len(potential), args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
            )
            budgets = self._budgets()
            candidates, statuses = dry_run(
                runner, state, pod, potential, budgets, offset, wanted, self._handle.nominated_pods_for_node
            )
            candidates, refused = whole_gangs(self._handle, pod, candidates, all_nodes, budgets)
            if refused and wanted < len(potential):  # look further for a candidate that may go
                candidates, statuses = dry_run(
                    runner,
                    state,
                    pod,
                    potential,
                    budgets,
                    offset,
                    len(potential),
                    self._handle.nominated_pods_for_node,
                )
                candidates, refused = whole_gangs(self._handle, pod, candidates, all_nodes, budgets)
            statuses.update(refused)
        if not candidates:
            errors = [s for s in statuses.values() if s.code == Code.ERROR]
            if errors:
                return None, None, aggregate_errors(errors)
            message = fit_error_message(
                len(all_nodes),
                Diagnosis(
                    node_to_status=dict(statuses), absent_nodes_status=Status.unresolvable(NOT_HELPFUL)
                ),
            )
            # An empty nomination clears a stale one.
            return None, PostFilterResult(""), Status.unschedulable(message)

        if self._handle.extenders:
            narrowed = await call_extenders(self._handle.extenders, pod, candidates, snapshot)
            if isinstance(narrowed, Status):
                return None, None, narrowed
            candidates = narrowed
        best = pick_one(candidates)
        if best is None:
            return None, None, Status.unschedulable("no candidate node for preemption")
        refusal = group_refusal(self._handle, pod, best, all_nodes)
        if refusal is not None:  # its Coscheduling group would not be placed: evict nothing
            return None, PostFilterResult(""), refusal
        return best, None, None

    def eligible(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, str]:
        """Upstream's PodEligibleToPreemptOthers."""
        if pod.preemption_policy == "Never":
            return False, NEVER
        nominated = pod.nominated_node_name
        if nominated:
            status = diagnosis.status_of(nominated)
            if status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""  # the nominated node cannot work any more: preempt elsewhere
            info: NodeInfo | None = self._handle.snapshot.get(nominated)
            if info is not None and any(
                p.priority < pod.priority and terminating_by_preemption(p) for p in info.pods.values()
            ):
                return False, VICTIMS_TERMINATING
        return True, ""

    # ------------------------------------------------------------------ helpers

    def _runner(self) -> PluginsRunner:
        return self._handle.plugins_runner

    def _waiting_pods(self) -> WaitingPods:
        return self._handle.waiting_pods

    def _latest(self, pod: Pod) -> Pod:
        """The informer's newest copy (its nominatedNodeName may have changed meanwhile)."""
        try:
            latest = self._handle.lister("pods").get(pod.key)
        except KeyError:
            return pod
        return latest if isinstance(latest, Pod) and latest.uid == pod.uid else pod

    def _budgets(self) -> list[Budget]:
        try:
            return parse_budgets(self._handle.lister("poddisruptionbudgets").list())
        except KeyError:
            return []


async def call_extenders(
    extenders: Sequence[Extender], pod: Pod, candidates: list[Candidate], nodes: NodeLister
) -> list[Candidate] | Status:
    """Upstream's callExtenders: each interested extender with a preempt verb gets the candidates
    (node -> victims) the previous ones left and answers with those it keeps, each with at least
    one victim. A failure, or a node without victims, is an error unless the extender is
    ignorable (then it is skipped, or the node dropped). The candidates keep their order."""
    victims = {c.node_name: c.victims for c in candidates}
    for extender in extenders:
        if not victims:
            break
        if not extender.supports_preemption() or not extender.is_interested(pod):
            continue
        try:
            answer = await extender.process_preemption(pod, victims, nodes)
        except Exception as exc:
            if extender.is_ignorable():
                log.info(
                    "skipped extender %s as it returned error and has ignorable flag set: %s",
                    extender.name,
                    exc,
                )
                continue
            return Status.from_error(exc)
        for node_name, kept in list(answer.items()):
            if kept.pods:
                continue
            if not extender.is_ignorable():
                return Status.from_error(
                    RuntimeError(f'expected at least one victim pod on node "{node_name}"')
                )
            log.info("ignored node %s for which extender %s reported no victims", node_name, extender.name)
            del answer[node_name]
        victims = answer
    order = {c.node_name: i for i, c in enumerate(candidates)}
    names = sorted(victims, key=lambda name: order.get(name, len(order)))
    return [Candidate(name, victims[name]) for name in names]


def aggregate_errors(errors: Sequence[Status]) -> Status:
    """One error status for the dry run's errors, worded as apimachinery's error aggregate: the
    message alone, or the distinct messages in brackets."""
    messages = list(dict.fromkeys(s.message() for s in errors))
    if len(errors) == 1 or len(messages) == 1:
        return errors[0]
    return Status(Code.ERROR, (f"[{', '.join(messages)}]",))


def nodes_where_preemption_might_help(nodes: Sequence[NodeInfo], diagnosis: Diagnosis) -> list[NodeInfo]:
    """The nodes (in order) whose status is Unschedulable: where removing pods may help."""
    absent = diagnosis.absent_nodes_status
    statuses = diagnosis.node_to_status
    names = {name for name, s in statuses.items() if s.code == Code.UNSCHEDULABLE}
    if absent is not None and absent.code == Code.UNSCHEDULABLE:  # the nodes PreFilter excluded too
        return [info for info in nodes if info.name in names or info.name not in statuses]
    return [info for info in nodes if info.name in names]
