"""The data layer: compact views of API objects and the helpers to match them.

Everything else in the scheduler (framework, plugins, cache, queue) builds on this package;
it imports nothing else of the scheduler.
"""

from scheduler.api.objects import ContainerImage, HostPort, MalformedObject, Node, Pod
from scheduler.api.resources import PodResources, Resource, pod_resources
from scheduler.api.selectors import LabelSelector, NodeSelector, NodeSelectorTerm, SelectorError
from scheduler.api.taints import Taint, Toleration

__all__ = [
    "ContainerImage",
    "HostPort",
    "LabelSelector",
    "MalformedObject",
    "Node",
    "NodeSelector",
    "NodeSelectorTerm",
    "Pod",
    "PodResources",
    "Resource",
    "SelectorError",
    "Taint",
    "Toleration",
    "pod_resources",
]
