"""KubeSchedulerConfiguration v1: load, default, validate.

    config = load_config("examples/config.yaml")   # or default_config()
    profile = config.profiles_by_name()["pyscheduler"]
    fit_args = profile.plugin_config["NodeResourcesFit"]

Every problem in a file is raised at once as a ConfigError naming the field.
"""

from .args import (
    ARGS_TYPES,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from .defaults import DEFAULT_PLUGINS, default_args, default_plugins, merge_plugin_set, merge_plugins
from .durations import format_duration, parse_duration
from .extenders import Extender, ExtenderManagedResource, ExtenderTLSConfig
from .fielderrors import ConfigError
from .load import default_config, load_config, parse_config
from .types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    ClientConnection,
    LeaderElection,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)
from .validation import validate

__all__ = [
    "API_VERSION",
    "ARGS_TYPES",
    "DEFAULT_PLUGINS",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KIND",
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "ClientConnection",
    "ConfigError",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "InterPodAffinityArgs",
    "LeaderElection",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "PodTopologySpreadArgs",
    "Profile",
    "ResourceSpec",
    "SchedulerConfiguration",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "default_args",
    "default_config",
    "default_plugins",
    "format_duration",
    "load_config",
    "merge_plugin_set",
    "merge_plugins",
    "parse_config",
    "parse_duration",
    "validate",
]
