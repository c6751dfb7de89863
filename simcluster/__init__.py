"""A local Kubernetes API endpoint with simulated nodes (`pyscheduler sim-cluster`).

Speaks the real REST protocol (discovery, list/watch with resource versions, bookmarks,
410 Gone, optimistic concurrency, patches, pods/binding) so unmodified kubectl and
kubernetes_asyncio work against it; nodes, the kubelet and workload controllers are simulated.
"""

from simcluster.cluster import SimCluster
from simcluster.errors import ApiError
from simcluster.faults import FaultInjector
from simcluster.store import Store

__all__ = ["ApiError", "FaultInjector", "SimCluster", "Store"]
