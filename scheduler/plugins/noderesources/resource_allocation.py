"""What the resource scorers compare: per configured resource, (node requested + pod, allocatable).

Fit scores with the *non-zero* requests for cpu and memory (a request-less container counts
upstream's defaults), so empty pods still spread; BalancedAllocation uses the real requests.
An extended resource the pod does not ask for is left out (allocatable 0 means "skip").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from scheduler.api import Pod, Resource
from scheduler.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_scalar_resource
from scheduler.framework import NodeInfo, NodeTable
from scheduler.framework import nodetable as cols
from scheduler.plugins.helper import NodeMemo

# up to this many stale rows are rescored one by one rather than in one vectorised pass
_ONE_BY_ONE_LIMIT = 8


def pod_request_list(pod: Pod, resources: Sequence[str], non_zero: bool) -> tuple[int, ...]:
    requests = pod.scoring_requests if non_zero else pod.requests
    return tuple(0 if name == PODS else requests.get(name) for name in resources)


def node_lists(
    info: NodeInfo, resources: Sequence[str], pod_requests: Sequence[int], non_zero: bool
) -> tuple[list[int], list[int]]:
    """(requested, allocatable) of one node for each resource, the pod's request included."""
    alloc_of: Resource = info.node.allocatable
    used: Resource = info.non_zero_requested if non_zero else info.requested
    requested, allocatable = [], []
    for name, pod_request in zip(resources, pod_requests, strict=True):
        alloc = req = 0
        if name in (CPU, MEMORY):
            alloc, req = alloc_of.get(name), used.get(name) + pod_request
        elif name == EPHEMERAL_STORAGE:
            alloc, req = alloc_of.ephemeral_storage, info.requested.ephemeral_storage + pod_request
        elif name != PODS and pod_request and is_scalar_resource(name) and name in alloc_of.scalar:
            alloc, req = alloc_of.scalar[name], info.requested.scalar.get(name, 0) + pod_request
        if alloc == 0:
            req = 0
        requested.append(req)
        allocatable.append(alloc)
    return requested, allocatable


def table_matrices(
    table: NodeTable, slots: np.ndarray, resources: Sequence[str], pod_requests: Sequence[int], non_zero: bool
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`node_lists` for many nodes: two ``(len(resources), len(slots))`` int64 matrices.

    Each row is one gather of a contiguous table column (no 2-D fancy indexing).
    """
    n = len(slots)
    requested = np.zeros((len(resources), n), dtype=np.int64)
    allocatable = np.zeros((len(resources), n), dtype=np.int64)
    for i, (name, pod_request) in enumerate(zip(resources, pod_requests, strict=True)):
        if name in (CPU, MEMORY):
            column = cols.CPU if name == CPU else cols.MEMORY
            alloc_col = table.alloc[:, column]
            if non_zero:
                used_col = table.non_zero[:, cols.NZ_CPU if name == CPU else cols.NZ_MEMORY]
            else:
                used_col = table.requested[:, column]
        elif name == EPHEMERAL_STORAGE:
            alloc_col = table.alloc[:, cols.EPHEMERAL_STORAGE]
            used_col = table.requested[:, cols.EPHEMERAL_STORAGE]
        elif name != PODS and pod_request and is_scalar_resource(name) and name in table.scalar_alloc:
            alloc_col, used_col = table.scalar(name)
        else:
            continue
        allocatable[i] = alloc_col[slots]
        np.add(used_col[slots], pod_request, out=requested[i])
    if np.count_nonzero(allocatable) != allocatable.size:
        requested[allocatable == 0] = 0
    return requested, allocatable


def memoised_scores(
    memo: NodeMemo,
    table: NodeTable,
    slots: np.ndarray,
    resources: Sequence[str],
    pod_requests: tuple[int, ...],
    non_zero: bool,
    score_one: Callable[[list[int], list[int]], int],
    score_many: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Scores of ``slots``, recomputed only on rows that changed since pods with the same
    requests were last scored there (usually one: the node that took the previous pod).

    A handful of stale rows are scored one by one (cheaper than a dozen numpy calls); more are
    scored in one vectorised pass. Both forms give the same numbers.
    """

    def refresh(stale: np.ndarray) -> Any:
        if len(stale) <= _ONE_BY_ONE_LIMIT:
            infos = table.infos
            return [
                score_one(*node_lists(infos[slot], resources, pod_requests, non_zero))
                for slot in stale.tolist()
            ]
        return score_many(*table_matrices(table, stale, resources, pod_requests, non_zero))

    return memo.values(table, pod_requests, slots, refresh)
