"""The in-tree plugin registry: plugin name -> plugin class (constructed as ``Cls(args, handle)``)."""

from __future__ import annotations

from scheduler.framework import PluginFactory
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.defaultpreemption import DefaultPreemption
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.gangscheduling import GangScheduling, PodGroupPodsCount, TopologyPlacementGenerator
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import BalancedAllocation, Fit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.queuesort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumerestrictions import VolumeRestrictions
from scheduler.plugins.volumezone import VolumeZone


def in_tree_registry() -> dict[str, PluginFactory]:
    """A fresh mapping each call, so a caller may add out-of-tree plugins to its own copy."""
    plugins = (
        PrioritySort,
        SchedulingGates,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        Fit,
        PodTopologySpread,
        InterPodAffinity,
        DynamicResources,
        BalancedAllocation,
        ImageLocality,
        VolumeRestrictions,
        NodeVolumeLimits,
        VolumeBinding,
        VolumeZone,
        DefaultPreemption,
        DefaultBinder,
        NodeDeclaredFeatures,
        # the Workload API's (GangScheduling, TopologyAwareWorkloadScheduling gates): in the
        # default profile only with their gates on
        GangScheduling,
        TopologyPlacementGenerator,
        PodGroupPodsCount,
        # scheduler-plugins' gang scheduling: available, enabled only by a profile that names it
        Coscheduling,
    )
    return {plugin.name: plugin for plugin in plugins}
