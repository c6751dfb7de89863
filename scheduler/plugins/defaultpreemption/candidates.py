"""Dry-run preemption over the candidate nodes, and the choice of one (upstream's ordering)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api import Pod
from scheduler.framework import Code, CycleState, NodeInfo, PluginsRunner, Status
from scheduler.plugins.defaultpreemption.pdb import Budget
from scheduler.plugins.defaultpreemption.prechecks import (
    extensions_active,
    fit_only_refilter,
    hopeless_check,
    respects_nominated,
)
from scheduler.plugins.defaultpreemption.victims import (
    NO_VICTIMS,
    Victims,
    select_victims,
    start_time,
)

_PRIORITY_OFFSET = 2**31  # makes every int32 priority non-negative before summing, as upstream


@dataclass(slots=True)
class Candidate:
    node_name: str
    victims: Victims


def num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """minCandidateNodesPercentage of the nodes, at least minCandidateNodesAbsolute, at most all."""
    return min(max(num_nodes * percentage // 100, absolute), num_nodes)


def dry_run(
    runner: PluginsRunner,
    state: CycleState,
    pod: Pod,
    nodes: Sequence[NodeInfo],
    budgets: Sequence[Budget],
    offset: int,
    wanted: int,
    nominated_for: Callable[[str], Sequence[Pod]] | None = None,
) -> tuple[list[Candidate], dict[str, Status]]:
    """Candidates (PDB-respecting ones first) and the status of every node that is not one.

    Nodes are visited from ``offset`` round the list; the search stops once ``wanted``
    candidates are found, at least one of them violating no PDB. Each node with a lower-priority
    pod is tried on copies of its NodeInfo and (when some PreFilter extension may change it) of
    the cycle state, so the real ones stay untouched. Nodes the resource pre-check proves
    hopeless are tried only when no candidate turns up at all, for their exact statuses (the
    statuses of non-candidates matter only then). ``nominated_for`` (the handle's nominated
    pods per node) enables the NodeResourcesFit-only re-check of :func:`fit_only_refilter` on
    nodes without such pods.
    """
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, Status] = {}
    extensions = extensions_active(runner, state)
    hopeless = hopeless_check(runner, state, pod, nominated_for)
    fits = fit_only_refilter(runner, state, pod) if nominated_for is not None and not extensions else None

    def visit(info: NodeInfo) -> None:
        if not any(other.priority < pod.priority for other in info.pods.values()):
            # select_victims' own verdict, reached without copying the node or the state (most
            # nodes of an unschedulable pod that no lower-priority pod could make room for)
            statuses[info.name] = Status.unresolvable(NO_VICTIMS)
            return
        node_state = state.clone() if extensions else state
        check = None
        # fits is only ever set together with nominated_for
        if (
            fits is not None
            and nominated_for is not None
            and not respects_nominated(pod, nominated_for(info.name))
        ):
            check = fits
        victims, status = select_victims(runner, node_state, pod, info.clone(), budgets, extensions, check)
        if victims is not None and not victims.pods:
            error = RuntimeError(f'expected at least one victim pod on node "{info.name}"')
            status = Status.from_error(error)
        if status is not None or victims is None:
            statuses[info.name] = status or Status(Code.ERROR)
            return
        found = clean if victims.num_pdb_violations == 0 else violating
        if len(found) < wanted:
            found.append(Candidate(info.name, victims))

    order = [nodes[(offset + i) % len(nodes)] for i in range(len(nodes))]
    skipped: list[NodeInfo] = []
    for info in order:
        if hopeless is not None and hopeless(info):
            skipped.append(info)
            continue
        visit(info)
        if clean and len(clean) + len(violating) >= wanted:
            break
    if not clean and not violating and skipped:
        for info in skipped:
            visit(info)
        statuses = {info.name: statuses[info.name] for info in order if info.name in statuses}
    return clean + violating, statuses


def _pdb_violations(c: Candidate) -> Any:
    return -c.victims.num_pdb_violations


def _highest_priority(c: Candidate) -> Any:
    return -c.victims.pods[0].priority


def _sum_of_priorities(c: Candidate) -> Any:
    return -sum(p.priority + _PRIORITY_OFFSET for p in c.victims.pods)


def _fewest_victims(c: Candidate) -> Any:
    return -len(c.victims.pods)


def _latest_start(c: Candidate) -> Any:
    """The earliest start among the highest-priority victims; later is better."""
    top = c.victims.pods[0].priority
    return min(start_time(p) for p in c.victims.pods if p.priority == top)


# Each rule keeps the candidates with the highest value; the next rule only breaks ties.
RULES: tuple[Callable[[Candidate], Any], ...] = (
    _pdb_violations,
    _highest_priority,
    _sum_of_priorities,
    _fewest_victims,
    _latest_start,
)


def pick_one(candidates: Sequence[Candidate]) -> Candidate | None:
    """Upstream's pickOneNodeForPreemption: fewest PDB violations, then the lowest highest victim
    priority, the smallest priority sum, the fewest victims, the latest start; then the first."""
    remaining = list(candidates)
    for rule in RULES:
        if len(remaining) <= 1:
            break
        best = max(map(rule, remaining))
        remaining = [c for c in remaining if rule(c) == best]
    return remaining[0] if remaining else None
