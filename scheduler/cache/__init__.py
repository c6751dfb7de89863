"""The scheduler cache: NodeInfo per node, assumed pods, the per-cycle snapshot, and pod-group
membership (``pod_groups``, with GenericWorkload)."""

from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.node_tree import NodeTree, zone_key
from scheduler.cache.snapshot import Snapshot

__all__ = ["Cache", "CacheError", "NodeTree", "Snapshot", "zone_key"]
