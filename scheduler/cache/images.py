"""Which nodes hold which container images, for ImageLocality.

ImageLocality scales an image's score by the fraction of nodes that have it, so every NodeInfo's
``image_states[name]`` must know how many nodes hold ``name``. One :class:`ImageStateSummary` per
image is shared by all NodeInfos listing it, and its ``num_nodes`` is updated in place as nodes
come and go: no NodeInfo needs rewriting when another node pulls an image.
"""

from __future__ import annotations

from scheduler.api import Node
from scheduler.framework import ImageStateSummary, NodeInfo


class ImageStates:
    __slots__ = ("_holders", "_summaries")

    def __init__(self) -> None:
        self._summaries: dict[str, ImageStateSummary] = {}
        self._holders: dict[str, set[str]] = {}

    def add_node(self, node: Node, info: NodeInfo) -> None:
        """Record ``node``'s images and point ``info.image_states`` at the shared summaries."""
        states: dict[str, ImageStateSummary] = {}
        for image in node.images:
            for name in image.names:
                holders = self._holders.setdefault(name, set())
                summary = self._summaries.get(name)
                if summary is None:
                    # Upstream keeps the size reported by the first node that has the image.
                    summary = self._summaries[name] = ImageStateSummary(image.size_bytes, 0)
                holders.add(node.name)
                summary.num_nodes = len(holders)
                states[name] = summary
        info.image_states = states

    def remove_node(self, node: Node, info: NodeInfo) -> None:
        for name in info.image_states:
            holders = self._holders.get(name)
            if holders is None:
                continue
            holders.discard(node.name)
            if holders:
                self._summaries[name].num_nodes = len(holders)
            else:
                del self._holders[name]
                # Detach the summary so a NodeInfo still holding it cannot see it revived.
                self._summaries.pop(name).num_nodes = 0
        info.image_states = {}

    def num_nodes(self, image: str) -> int:
        holders = self._holders.get(image)
        return len(holders) if holders else 0
