"""Upstream v1 defaulting: the default plugin list, mergePlugins, and default args.

Mirrors pkg/scheduler/apis/config/v1/{default_plugins,defaults}.go for v1.36 with
its default feature gates (DynamicResourceAllocation GA, NodeDeclaredFeatures beta;
GangScheduling and TopologyAwareWorkloadScheduling alpha, so off).
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.features import (
    DEFAULT_FEATURES,
    GANG_SCHEDULING,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    FeatureGates,
)

from .args import (
    ARGS_TYPES,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
)
from .fielderrors import FieldErrors, child, index
from .typedargs import decode_dataclass
from .types import EXTENSION_POINTS, PluginRef, Plugins, PluginSet, Profile, SchedulerConfiguration

__all__ = [
    "DEFAULT_PLUGINS",
    "apply_defaults",
    "default_args",
    "default_plugins",
    "merge_plugin_set",
    "merge_plugins",
]

# The default MultiPoint list of kube-scheduler v1.36, in upstream's order.
DEFAULT_PLUGINS: tuple[PluginRef, ...] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    # Before DefaultPreemption: freeing an idle ResourceClaim beats evicting a pod.
    PluginRef("DynamicResources", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
    # Feature-gated (beta, on by default in v1.36): appended after the base list.
    PluginRef("NodeDeclaredFeatures"),
)


def default_plugins(features: FeatureGates = DEFAULT_FEATURES) -> Plugins:
    """A fresh Plugins holding only the default MultiPoint set, with what the gates in force add
    (upstream's applyFeatureGates: the workload plugins after the base list)."""
    enabled = list(DEFAULT_PLUGINS)
    if features.enabled(GANG_SCHEDULING):
        enabled.append(PluginRef("GangScheduling"))
    if features.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        enabled += [PluginRef("TopologyPlacementGenerator"), PluginRef("PodGroupPodsCount", 1)]
    return Plugins(multi_point=PluginSet(enabled=enabled))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """The user's set merged into a default set, as upstream's mergePluginSet.

    Disabled names (or "*") drop defaults; a default the user also enables is
    replaced in place (keeping the default order, taking the user's weight); the
    user's other enabled plugins follow in their order. Duplicates are kept, for
    validation to report.
    """
    disabled = [PluginRef(p.name) for p in (*custom.disabled, *default.disabled)]
    disabled_names = {p.name for p in disabled}
    last_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            i = last_index.get(plugin.name)
            if i is not None:
                plugin = custom.enabled[i]
                replaced.add(i)
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Every extension point of `custom` merged into `default` (None keeps the defaults)."""
    if custom is None:
        return default
    return Plugins(
        **{
            attr: merge_plugin_set(getattr(default, attr), getattr(custom, attr))
            for attr, _ in EXTENSION_POINTS
        }
    )


def default_args(plugin: str) -> object | None:
    """Defaulted args for `plugin`, or None when it has no args type."""
    args_type = ARGS_TYPES.get(plugin)
    return None if args_type is None else args_type()


def _default_resource_weights(resources: list[ResourceSpec]) -> list[ResourceSpec]:
    if not resources:
        return [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    return [r if r.weight != 0 else ResourceSpec(r.name, 1) for r in resources]


def _default_args_fields(args: object) -> None:
    """Upstream's SetDefaults_*Args for values the user gave but left empty or zero."""
    if isinstance(args, NodeResourcesFitArgs):
        strategy = args.scoring_strategy
        strategy.resources = _default_resource_weights(strategy.resources)
    elif isinstance(args, NodeResourcesBalancedAllocationArgs):
        args.resources = _default_resource_weights(args.resources)


def _default_profile(errs: FieldErrors, path: str, profile: Profile, plugin_args: Mapping[str, type]) -> None:
    for args in profile.plugin_config.values():
        _default_args_fields(args)
    for name in profile.plugins.enabled_names():
        if name in profile.plugin_config:
            continue
        args = default_args(name)
        if args is None and name in plugin_args:
            # an out-of-tree plugin enabled without pluginConfig: its args as all defaults
            args = decode_dataclass(errs, child(path, f"pluginConfig[{name}].args"), plugin_args[name], None)
        if args is not None:
            profile.plugin_config[name] = args


def apply_defaults(
    errs: FieldErrors,
    config: SchedulerConfiguration,
    custom_plugins: list[Plugins | None],
    plugin_args: Mapping[str, type] | None = None,
    features: FeatureGates = DEFAULT_FEATURES,
) -> None:
    """Fill in the defaulted parts of a decoded configuration, in place.

    `custom_plugins[i]` is what profile i's file said under `plugins` (None when
    absent); it is merged into the default MultiPoint set. An out-of-tree plugin with an
    args type but no pluginConfig gets its defaults (an error for fields without one).
    """
    for i, (profile, custom) in enumerate(zip(config.profiles, custom_plugins, strict=True)):
        profile.plugins = merge_plugins(default_plugins(features), custom)
        _default_profile(errs, index("profiles", i), profile, plugin_args or {})
