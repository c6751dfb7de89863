"""Scoring strategies over (requested, allocatable) per resource, in two shapes.

``score_one`` works on the lists of one node, exactly as upstream writes it; ``score_many`` works
on ``(resources, nodes)`` int64 matrices and must give the same numbers (the tests compare them).
A resource with allocatable 0 is left out of a node's score, including its weight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from scheduler.framework import MAX_NODE_SCORE
from scheduler.plugins.helper import go_div, go_div_array

MAX_UTILIZATION = 100
# Shape scores are configured in 0..10 and scaled to the scheduler's 0..100.
MAX_CUSTOM_PRIORITY_SCORE = 10


class Scorer(Protocol):
    """A strategy; ``weights[i]`` belongs to resource ``i`` of the lists or matrix rows."""

    weights: tuple[int, ...]

    def score_one(self, requested: Sequence[int], allocatable: Sequence[int]) -> int: ...

    def score_many(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray: ...


class _Weighted:
    __slots__ = ("_weight_row", "weights")

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)
        self._weight_row = np.asarray(self.weights, dtype=np.int64)

    def _weighted_mean_floor(self, per_resource: np.ndarray, counted: np.ndarray | None) -> np.ndarray:
        """Floor of the weighted mean per node; ``counted=None`` means every resource counts."""
        if counted is None:
            return self._weight_row.dot(per_resource) // max(sum(self.weights), 1)
        w = self._weight_row[:, None]
        total = (per_resource * w * counted).sum(axis=0)
        weight_sum = (w * counted).sum(axis=0)
        return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)


def _counted(allocatable: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(divisor, mask of counted resources); the mask is None when every allocatable is non-zero."""
    if allocatable.all():
        return allocatable, None
    counted = allocatable != 0
    return np.where(counted, allocatable, 1), counted


class LeastAllocated(_Weighted):
    """Favours nodes with more free capacity (spreading)."""

    __slots__ = ()

    def score_one(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self.weights, strict=True):
            if alloc == 0:
                continue
            score = 0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc
            total += score * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    def score_many(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        safe, counted = _counted(allocatable)
        # an overcommitted resource scores 0: clamp the free amount at 0 before scaling
        per = np.maximum(allocatable - requested, 0)
        per *= MAX_NODE_SCORE
        per //= safe
        return self._weighted_mean_floor(per, counted)


class MostAllocated(_Weighted):
    """Favours nodes with less free capacity (bin packing)."""

    __slots__ = ()

    def score_one(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self.weights, strict=True):
            if alloc == 0:
                continue
            total += min(req, alloc) * MAX_NODE_SCORE // alloc * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    def score_many(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        safe, counted = _counted(allocatable)
        per = np.minimum(requested, allocatable)
        per *= MAX_NODE_SCORE
        per //= safe
        return self._weighted_mean_floor(per, counted)


@dataclass(slots=True, frozen=True)
class ShapePoint:
    utilization: int
    score: int  # already scaled to 0..MAX_NODE_SCORE


class BrokenLinear:
    """A piecewise linear function through the shape points, flat before the first and after the last."""

    __slots__ = ("points",)

    def __init__(self, points: Sequence[ShapePoint]) -> None:
        if not points:
            raise ValueError("the utilization shape needs at least one point")
        self.points = tuple(points)

    def __call__(self, p: int) -> int:
        pts = self.points
        for i, point in enumerate(pts):
            if p <= point.utilization:
                if i == 0:
                    return pts[0].score
                prev = pts[i - 1]
                return prev.score + go_div(
                    (point.score - prev.score) * (p - prev.utilization), point.utilization - prev.utilization
                )
        return pts[-1].score

    def many(self, p: np.ndarray) -> np.ndarray:
        pts = self.points
        result = np.full(p.shape, pts[-1].score, dtype=np.int64)
        # the earliest segment whose end is >= p wins, so paint from the last one backwards
        for i in range(len(pts) - 1, -1, -1):
            point = pts[i]
            if i == 0:
                value = np.full(p.shape, pts[0].score, dtype=np.int64)
            else:
                prev = pts[i - 1]
                value = prev.score + go_div_array(
                    (point.score - prev.score) * (p - prev.utilization), point.utilization - prev.utilization
                )
            result = np.where(p <= point.utilization, value, result)
        return result


class RequestedToCapacityRatio(_Weighted):
    """Scores each resource's utilisation through a user-given shape (bin packing of any resource)."""

    __slots__ = ("function",)

    def __init__(self, weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> None:
        super().__init__(weights)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.function = BrokenLinear([ShapePoint(u, s * scale) for u, s in shape])

    def _resource_score(self, req: int, alloc: int) -> int:
        if alloc == 0 or req > alloc:
            return self.function(MAX_UTILIZATION)
        return self.function(req * MAX_UTILIZATION // alloc)

    def score_one(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self.weights, strict=True):
            if alloc == 0:
                continue
            score = self._resource_score(req, alloc)
            if score > 0:
                total += score * weight
                weight_sum += weight
        if not weight_sum:
            return 0
        return math.floor(total / weight_sum + 0.5)  # Go's math.Round: halves away from zero

    def score_many(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        safe = np.where(allocatable != 0, allocatable, 1)
        utilization = np.where(
            (allocatable == 0) | (requested > allocatable),
            MAX_UTILIZATION,
            requested * MAX_UTILIZATION // safe,
        )
        per = self.function.many(utilization)
        counted = (allocatable != 0) & (per > 0)
        w = np.asarray(self.weights, dtype=np.int64)[:, None]
        total = (per * w * counted).sum(axis=0)
        weight_sum = (w * counted).sum(axis=0)
        ratio = total / np.maximum(weight_sum, 1)
        return np.where(weight_sum > 0, np.floor(ratio + 0.5), 0).astype(np.int64)


def balance_change_score(with_pod: int | np.ndarray, without_pod: int | np.ndarray) -> Any:
    """BalancedAllocation's score since v1.36 (kubernetes#135573): how much the pod improves the
    node's balance, not the balance it leaves. Both balances lie in [50, 100], so their difference
    in [-50, 50] is folded back into [50, 100]: no change scores 75, better balance more, worse less.
    """
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without_pod) // 2


def balanced_score_one(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """100 * (1 - standard deviation of the utilisation fractions); resources with no capacity skipped."""
    fractions = [
        min(req / alloc, 1.0) for req, alloc in zip(requested, allocatable, strict=True) if alloc != 0
    ]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        # plain left-to-right sums, as Go adds (Python's sum() compensates float rounding)
        total = 0.0
        for f in fractions:
            total += f
        mean = total / len(fractions)
        squares = 0.0
        for f in fractions:
            squares += (f - mean) * (f - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_score_many(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """:func:`balanced_score_one` over ``(resources, nodes)``, with the same float operations in order."""
    if len(allocatable) == 2 and allocatable.all():
        # the default (cpu, memory) on nodes that have both: the two-value branch, directly
        fractions = np.minimum(requested / allocatable, 1.0)
        std = np.abs((fractions[0] - fractions[1]) / 2)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    counted = allocatable != 0
    fractions = np.where(counted, np.minimum(requested / np.where(counted, allocatable, 1), 1.0), 0.0)
    n = counted.sum(axis=0)
    nodes = requested.shape[1]
    total = np.zeros(nodes)
    first = np.zeros(nodes)
    second = np.zeros(nodes)
    seen = np.zeros(nodes, dtype=np.int64)
    for row, mask in zip(fractions, counted, strict=True):
        total = total + row  # adding the 0.0 of a skipped resource leaves the sum unchanged
        first = np.where(mask & (seen == 0), row, first)
        second = np.where(mask & (seen == 1), row, second)
        seen = seen + mask
    std = np.zeros(nodes)
    two = n == 2
    std = np.where(two, np.abs((first - second) / 2), std)
    many = n > 2
    if many.any():
        mean = total / np.maximum(n, 1)
        squares = np.zeros(nodes)
        for row, mask in zip(fractions, counted, strict=True):
            squares = squares + np.where(mask, (row - mean) * (row - mean), 0.0)
        std = np.where(many, np.sqrt(squares / np.maximum(n, 1)), std)
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
