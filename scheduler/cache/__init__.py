"""The scheduler cache: NodeInfo per node, assumed pods, and the per-cycle snapshot."""

from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.node_tree import NodeTree, zone_key
from scheduler.cache.snapshot import Snapshot

__all__ = ["Cache", "CacheError", "NodeTree", "Snapshot", "zone_key"]
