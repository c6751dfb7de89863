"""NodeResourcesBalancedAllocation: prefer nodes whose use of resources the pod makes more even."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Pod
from scheduler.config.args import NodeResourcesBalancedAllocationArgs
from scheduler.framework import CycleState, Handle, NodeInfo, NodeTable, SignFragment, Status, signers
from scheduler.plugins import names
from scheduler.plugins.helper import NodeMemo
from scheduler.plugins.noderesources.resource_allocation import memoised_scores, node_lists, pod_request_list
from scheduler.plugins.noderesources.scorers import (
    balance_change_score,
    balanced_score_many,
    balanced_score_one,
)

_PRE_SCORE_KEY = "PreScore" + names.NODE_RESOURCES_BALANCED_ALLOCATION


class BalancedAllocation:
    name: ClassVar[str] = names.NODE_RESOURCES_BALANCED_ALLOCATION

    __slots__ = ("_memo", "_resources")

    def __init__(
        self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None
    ) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        self._resources = tuple(spec.name for spec in args.resources)
        self._memo = NodeMemo(np.int64)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Scoring depends on the pod's requests only (see Fit.sign_pod about DRA)."""
        return (SignFragment(signers.RESOURCES, signers.resources(pod)),), None

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        requests = pod_request_list(pod, self._resources, non_zero=False)
        if not any(requests):
            # A best-effort pod changes no node's balance; scoring it would stack such pods
            # onto the same node (kubernetes#129138).
            return Status.skip()
        state.write(_PRE_SCORE_KEY, requests)
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> tuple[int, ...]:
        requests = state.get(_PRE_SCORE_KEY)
        return pod_request_list(pod, self._resources, non_zero=False) if requests is None else requests

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        pod_requests = self._pod_requests(state, pod)
        if not any(pod_requests):
            return 0
        requested, allocatable = node_lists(node_info, self._resources, pod_requests, non_zero=False)
        return _score_one(pod_requests)(requested, allocatable)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        pod_requests = self._pod_requests(state, pod)
        if not any(pod_requests):
            return np.zeros(len(slots), dtype=np.int64)
        return memoised_scores(
            self._memo,
            table,
            slots,
            self._resources,
            pod_requests,
            False,
            _score_one(pod_requests),
            _score_many(pod_requests),
        )


def _score_one(pod_requests: Sequence[int]) -> Callable[[list[int], list[int]], int]:
    """The score of one node from its (requested with the pod, allocatable) lists."""

    def score(requested: list[int], allocatable: list[int]) -> int:
        # where a resource is left out (allocatable 0) its requested is 0 too
        before = [
            req - want if alloc else 0
            for req, want, alloc in zip(requested, pod_requests, allocatable, strict=True)
        ]
        return int(
            balance_change_score(
                balanced_score_one(requested, allocatable), balanced_score_one(before, allocatable)
            )
        )

    return score


def _score_many(pod_requests: Sequence[int]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """:func:`_score_one` over ``(resources, nodes)`` matrices."""
    column = np.asarray(pod_requests, dtype=np.int64)[:, None]

    def score(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        before = np.where(allocatable != 0, requested - column, 0)
        with_pod = balanced_score_many(requested, allocatable)
        return balance_change_score(with_pod, balanced_score_many(before, allocatable))

    return score
