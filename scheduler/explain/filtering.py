"""The filtering half of a scheduling cycle over every node (no numFeasibleNodesToFind stop).

Explain and its suggestions run it; it is the cycle's own code (``scheduler.schedule_one``):
PreFilter, the narrowing by its result, the search asked for every node, the extenders' filters.
Untimed: the scheduler's extension-point metrics count its own cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scheduler.api import Pod
from scheduler.framework import CycleState, Diagnosis, NodeLister, Status
from scheduler.runtime import Framework
from scheduler.schedule_one import (
    Scheduler,
    find_nodes_that_pass_extenders,
    find_nodes_that_pass_filters,
    narrow_to_pre_filter_result,
    no_fit_diagnosis,
    pre_filter_diagnosis,
)


@dataclass(slots=True)
class FilterPass:
    """The filtering half of a cycle over every node."""

    state: CycleState
    feasible: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # the slots the PreFilter result keeps, in the node order (a cycle's search looks at these)
    candidates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    error: Status | None = None


async def filter_every_node(
    scheduler: Scheduler, fwk: Framework, pod: Pod, snapshot: NodeLister
) -> FilterPass:
    """PreFilter, then Filter (and the extenders' filters) on every node the PreFilter result keeps."""
    state = CycleState()
    if len(snapshot) == 0:
        return FilterPass(state, error=Status.unresolvable("no nodes available to schedule pods"))
    with fwk.unobserved():
        pre_result, status, plugins = fwk.run_pre_filter(state, pod, snapshot)
        if status is not None and not status.is_rejected:
            return FilterPass(state, error=status)
        if status is not None:
            return FilterPass(state, diagnosis=pre_filter_diagnosis(status, plugins))
        candidates, absent = narrow_to_pre_filter_result(snapshot, snapshot.order, pre_result, plugins)
        nominated = scheduler.nominated_to_respect(pod)
        search = find_nodes_that_pass_filters(
            fwk, state, pod, snapshot, candidates, nominated, scheduler.extenders, num_to_find=len(candidates)
        )
    if search.error is not None:
        return FilterPass(state, error=search.error)
    table = snapshot.table
    feasible = search.feasible
    extender_statuses: dict[str, Status] = {}
    filtered_out = False
    if scheduler.extenders and len(feasible):
        passed = await find_nodes_that_pass_extenders(
            scheduler.extenders, pod, [table.info(slot) for slot in feasible.tolist()]
        )
        if isinstance(passed, Status):
            return FilterPass(state, error=passed)
        nodes, extender_statuses = passed
        filtered_out = len(nodes) != len(feasible)
        feasible = np.fromiter((info.slot for info in nodes), dtype=np.int64, count=len(nodes))
    diagnosis = no_fit_diagnosis(search.rejections, table, extender_statuses, absent, plugins, filtered_out)
    return FilterPass(state, feasible, candidates, diagnosis)
