"""Node names grouped by zone, listed round-robin across zones.

Upstream lists nodes zone by zone in turn (first node of every zone, then the second, ...), so
that a scan stopped early by percentageOfNodesToScore still sees nodes from every zone.
"""

from __future__ import annotations

from scheduler.api import Node

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


def zone_key(node: Node) -> str:
    """Region and zone of a node as one key ("" when it has neither), like upstream's GetZoneKey."""
    labels = node.labels
    zone = labels.get(ZONE_LABEL, labels.get(LEGACY_ZONE_LABEL, ""))
    region = labels.get(REGION_LABEL, labels.get(LEGACY_REGION_LABEL, ""))
    if not zone and not region:
        return ""
    # NUL keeps "a:b" + "c" apart from "a" + "b:c".
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Zones in order of first appearance, each with its node names in order of addition.

    ``generation`` changes whenever :meth:`list` would answer differently, so the snapshot
    rebuilds its node order only then.
    """

    __slots__ = ("_zone_of", "_zones", "generation")

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}  # insertion-ordered: zone order
        self._zone_of: dict[str, str] = {}
        self.generation = 0

    def __len__(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def add(self, node: Node) -> None:
        if node.name in self._zone_of:
            return
        zone = zone_key(node)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone
        self.generation += 1

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]
        self.generation += 1

    def update(self, node: Node) -> None:
        """Move the node when its zone changed (it goes to the end of its new zone, as upstream)."""
        if self._zone_of.get(node.name) != zone_key(node):
            self.remove(node.name)
            self.add(node)

    def list(self) -> list[str]:
        """Every node name, zones interleaved: z1[0], z2[0], ..., z1[1], z2[1], ..."""
        result: list[str] = []
        columns = list(self._zones.values())
        depth = max((len(names) for names in columns), default=0)
        for index in range(depth):
            for names in columns:
                if index < len(names):
                    result.append(names[index])
        return result
