"""Placements: the node sets a pod group is tried on, one after another (TopologyAwareWorkloadScheduling).

A placement generator splits the nodes (e.g. one placement per zone); the pod-group cycle places
the whole group within each placement in turn, and placement scorers pick among the placements
where it fits (upstream's PlacementGeneratePlugin and PlacementScorePlugin). Alpha, like the gate:
the in-tree workload plugins are their only users so far.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scheduler.framework.interface import NodeLister, PodGroupState
from scheduler.framework.status import Status

# CycleState key under which a trial placement is written for the placement's PreFilter.
PLACEMENT_KEY = "PodGroupPlacement"


@dataclass(frozen=True, slots=True)
class Placement:
    name: str
    nodes: frozenset[str] | None = None  # None: every node


EVERY_NODE = Placement("")


@runtime_checkable
class PlacementGeneratePlugin(Protocol):
    name: str

    def generate_placements(
        self, group: Mapping[str, Any], members: PodGroupState | None, nodes: NodeLister
    ) -> tuple[Sequence[Placement], Status | None]:
        """The placements to try the group on (``[EVERY_NODE]`` when it has no constraint)."""


@runtime_checkable
class PlacementScorePlugin(Protocol):
    name: str

    def score_placement(self, members: PodGroupState | None, proposed: int) -> int:
        """A placement where ``proposed`` pods of the group would be placed now."""

    def normalize_placement_scores(self, scores: list[int]) -> Status | None:
        """Rescale the scores of every candidate placement into 0..100, in place."""
