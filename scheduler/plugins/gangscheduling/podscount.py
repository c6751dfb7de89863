"""PodGroupPodsCount: prefer the placement that holds the most pods of the group (placed ones
included, so close counts score close), normalised against the best placement."""

from __future__ import annotations

from typing import Any, ClassVar

from scheduler.framework import MAX_NODE_SCORE, MIN_NODE_SCORE, Handle, PodGroupState, Status

NAME = "PodGroupPodsCount"


class PodGroupPodsCount:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def score_placement(self, members: PodGroupState | None, proposed: int) -> int:
        return (len(members.scheduled_uids()) if members is not None else 0) + proposed

    def normalize_placement_scores(self, scores: list[int]) -> Status | None:
        best = max(scores, default=0)
        if best == 0:
            return Status.from_error(
                RuntimeError("no pods from pod group are assigned to any of the candidate placements"), NAME
            )
        for i, score in enumerate(scores):
            scores[i] = MIN_NODE_SCORE + score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // best
        return None
