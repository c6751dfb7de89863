"""NodeResourcesBalancedAllocation: prefer nodes whose utilisation stays even across resources."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from scheduler.api import Pod
from scheduler.config.args import NodeResourcesBalancedAllocationArgs
from scheduler.framework import CycleState, Handle, NodeInfo, NodeTable, Status
from scheduler.plugins import names
from scheduler.plugins.helper import NodeMemo
from scheduler.plugins.noderesources.resource_allocation import memoised_scores, node_lists, pod_request_list
from scheduler.plugins.noderesources.scorers import balanced_score_many, balanced_score_one

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
        return balanced_score_one(requested, allocatable)

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
            balanced_score_one,
            balanced_score_many,
        )
