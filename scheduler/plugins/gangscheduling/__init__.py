"""The workload plugins of upstream v1.36 for scheduling.k8s.io/v1alpha2 PodGroups: GangScheduling
(all or nothing), TopologyPlacementGenerator (one topology domain) and PodGroupPodsCount (the
placement holding most of the group)."""

from scheduler.plugins.gangscheduling.plugin import GangScheduling
from scheduler.plugins.gangscheduling.podgroups import PODGROUPS
from scheduler.plugins.gangscheduling.podscount import PodGroupPodsCount
from scheduler.plugins.gangscheduling.topology import TopologyPlacementGenerator

# Left out, with a log line, where the cluster does not serve PodGroups.
WORKLOAD_PLUGINS = (GangScheduling.name, TopologyPlacementGenerator.name, PodGroupPodsCount.name)

__all__ = [
    "PODGROUPS",
    "WORKLOAD_PLUGINS",
    "GangScheduling",
    "PodGroupPodsCount",
    "TopologyPlacementGenerator",
]
