"""ImageLocality: prefer nodes that already hold the pod's images, weighted by how rare they are.

An image's size counts in proportion to the share of nodes that have it, so a popular image
does not pull every pod onto the same few nodes (the "node heating" problem).

The images are those of the (init) containers and of image volumes; only containers widen the
score's range (upstream counts ``len(initContainers) + len(containers)``).

A node's score depends on other nodes too (how many hold each image, how many nodes there are),
so the batch form memoises scores per image list only until any node changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scheduler.api import Pod
from scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, NodeTable, SignFragment, Status
from scheduler.framework.signers import IMAGE_NAMES, image_names, normalized_image_name
from scheduler.plugins import names
from scheduler.plugins.helper import NodeMemo, per_node

MB = 1024 * 1024
# Bounds of the summed, spread-scaled image sizes that map onto 0..MAX_NODE_SCORE.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_PRE_SCORE_KEY = "PreScore" + names.IMAGE_LOCALITY


@dataclass(slots=True, frozen=True)
class PodImages:
    """What ImageLocality scores a pod by: normalised image names, and how many containers it has."""

    names: tuple[str, ...]
    num_containers: int

    @classmethod
    def of(cls, pod: Pod) -> PodImages:
        volume_images = (
            (volume["image"].get("reference") or "")
            for volume in pod.volumes
            if volume.get("image") is not None
        )
        return cls(
            tuple(normalized_image_name(name) for name in (*pod.images, *volume_images)), len(pod.images)
        )


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def sum_image_scores(node_info: NodeInfo, images: tuple[str, ...], total_nodes: int) -> int:
    total = 0
    states = node_info.image_states
    for image in images:
        state = states.get(image)
        if state is not None:
            total += int(state.size * (state.num_nodes / total_nodes))
    return total


class ImageLocality:
    name: ClassVar[str] = names.IMAGE_LOCALITY

    __slots__ = ("_handle", "_memo")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self._memo = NodeMemo(np.int64, whole_table=True)

    def _images(self, state: CycleState, pod: Pod) -> PodImages:
        images = state.get(_PRE_SCORE_KEY)
        return PodImages.of(pod) if images is None else images

    def _total_nodes(self) -> int:
        assert self._handle is not None, "ImageLocality needs a handle to count the nodes"
        return len(self._handle.snapshot)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """Scoring depends on the pod's images: as upstream, the signature holds the canonical
        names of the containers' images, each once (image volumes are in the volumes'
        fragment, which the volume plugins sign; how many containers there are, which widens
        the score's range, is not signed either)."""
        return (SignFragment(IMAGE_NAMES, image_names(pod)),), None

    def pre_score(self, state: CycleState, pod: Pod, nodes: Any) -> Status | None:
        state.write(_PRE_SCORE_KEY, PodImages.of(pod))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        images = self._images(state, pod)
        if not images.names:
            return 0
        summed = sum_image_scores(node_info, images.names, self._total_nodes())
        return calculate_priority(summed, images.num_containers)

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        images = self._images(state, pod)
        scores = np.zeros(len(slots), dtype=np.int64)
        if not images.names or not table.has_images.any():
            return scores
        holders = np.flatnonzero(table.has_images[slots])
        if len(holders):
            total = self._total_nodes()

            def score(info: NodeInfo) -> int:
                summed = sum_image_scores(info, images.names, total)
                return calculate_priority(summed, images.num_containers) if summed > MIN_THRESHOLD else 0

            scores[holders] = self._memo.values(
                table, (images, total), slots[holders], per_node(table, score)
            )
        return scores
