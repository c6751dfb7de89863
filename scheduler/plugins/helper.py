"""Arithmetic shared by several plugins, with Go's integer semantics where upstream relies on them."""

from __future__ import annotations

import numpy as np

from scheduler.framework import MAX_NODE_SCORE, NodeVerdicts, Status


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, like Go's ``/`` on int64 (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_array(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Element-wise :func:`go_div` for int64 arrays."""
    q = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (np.asarray(b) > 0), q, -q)


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> None:
    """Scale raw scores in place so the highest becomes ``max_priority`` (upstream's DefaultNormalizeScore).

    With ``reverse`` the order flips (fewer untolerated taints is better); when every score is 0 a
    reversed normalisation gives every node ``max_priority`` and a plain one leaves them at 0.
    """
    if len(scores) == 0:
        return
    max_count = int(scores.max())
    if max_count <= 0:
        if reverse:
            scores[:] = max_priority
        return
    scaled = go_div_array(max_priority * scores, max_count)
    scores[:] = max_priority - scaled if reverse else scaled


def verdicts_from_mask(rejected: np.ndarray, status: Status) -> NodeVerdicts | None:
    """One reason for every rejected slot; ``None`` (everyone passes) when nothing was rejected."""
    if not rejected.any():
        return None
    return NodeVerdicts.uniform(rejected, status)
