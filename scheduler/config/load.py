"""Reading a KubeSchedulerConfiguration file: strict decode, then defaults, then validation.

The same pipeline as kube-scheduler's (decode strictly, default, validate), and
every problem found on the way is raised together as one ConfigError.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from scheduler.features import DEFAULT_FEATURES, FeatureGates

from .args import decode_args
from .decode import (
    as_bool,
    as_duration,
    as_float,
    as_int,
    as_list,
    as_mapping,
    as_opt_int,
    as_str,
)
from .defaults import apply_defaults
from .extenders import decode_extenders
from .fielderrors import ConfigError, FieldErrors, child, index
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
from .validation import REMOVED_PLUGIN_MESSAGE, REMOVED_PLUGINS, validate_configuration

__all__ = ["default_config", "load_config", "parse_config"]

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
_LEADER_ELECTION_FIELDS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_CLIENT_CONNECTION_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")
_PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")


def default_config(
    plugin_args: Mapping[str, type] | None = None, features: FeatureGates = DEFAULT_FEATURES
) -> SchedulerConfiguration:
    """The configuration used without --config: one `pyscheduler` profile, all defaults."""
    return parse_config({"apiVersion": API_VERSION, "kind": KIND}, plugin_args, features)


def load_config(
    path: str | os.PathLike[str],
    plugin_args: Mapping[str, type] | None = None,
    features: FeatureGates = DEFAULT_FEATURES,
) -> SchedulerConfiguration:
    """Read, default and validate a YAML or JSON config file.

    ``plugin_args``: the args dataclass of each out-of-tree plugin that declares one (see
    ``typedargs``); other plugins outside the tree get their args as plain mappings.
    """
    where = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(where, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(where, f"cannot read: {exc}") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(where, f"invalid YAML: {_describe_yaml_error(exc)}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, "must hold a KubeSchedulerConfiguration object")
    return parse_config(data, plugin_args, features)


def parse_config(
    data: Mapping[str, Any],
    plugin_args: Mapping[str, type] | None = None,
    features: FeatureGates = DEFAULT_FEATURES,
) -> SchedulerConfiguration:
    """Decode (strictly), default and validate an already-parsed config document; the default
    plugin set depends on the feature gates in force (``features``)."""
    errs = FieldErrors()
    if not isinstance(data, Mapping):
        raise ConfigError("", "the configuration must be a KubeSchedulerConfiguration object")
    plugin_args = plugin_args or {}
    _check_type_meta(errs, data)
    config, custom_plugins = _decode_configuration(errs, data, plugin_args)
    apply_defaults(errs, config, custom_plugins, plugin_args, features)
    validate_configuration(errs, config)
    errs.raise_if_any()
    return config


def _check_type_meta(errs: FieldErrors, data: Mapping[str, Any]) -> None:
    api_version = data.get("apiVersion")
    if api_version is None:
        errs.required("apiVersion", f'must be "{API_VERSION}"')
    elif api_version != API_VERSION:
        errs.add("apiVersion", f'unknown value "{api_version}"; only "{API_VERSION}" is supported')
    kind = data.get("kind")
    if kind is None:
        errs.required("kind", f'must be "{KIND}"')
    elif kind != KIND:
        errs.unknown_value("kind", kind)


def _decode_configuration(
    errs: FieldErrors, raw: Mapping[str, Any], plugin_args: Mapping[str, type]
) -> tuple[SchedulerConfiguration, list[Plugins | None]]:
    data = as_mapping(errs, "", raw, _TOP_FIELDS)
    profiles: list[Profile] = []
    custom_plugins: list[Plugins | None] = []
    raw_profiles = as_list(errs, "profiles", data.get("profiles"))
    for i, raw_profile in enumerate(raw_profiles):
        profile, plugins, named = _decode_profile(errs, index("profiles", i), raw_profile, plugin_args)
        # Only a lone profile gets the default name; with several, validation asks for one.
        if not named and len(raw_profiles) == 1:
            profile.scheduler_name = DEFAULT_SCHEDULER_NAME
        profiles.append(profile)
        custom_plugins.append(plugins)
    if not profiles:
        profiles.append(Profile())
        custom_plugins.append(None)
    config = SchedulerConfiguration(
        parallelism=as_int(errs, "parallelism", data.get("parallelism"), 16),
        percentage_of_nodes_to_score=as_int(
            errs, "percentageOfNodesToScore", data.get("percentageOfNodesToScore"), 0
        ),
        pod_initial_backoff_seconds=as_int(
            errs, "podInitialBackoffSeconds", data.get("podInitialBackoffSeconds"), 1
        ),
        pod_max_backoff_seconds=as_int(errs, "podMaxBackoffSeconds", data.get("podMaxBackoffSeconds"), 10),
        client_connection=_decode_client_connection(errs, data.get("clientConnection")),
        leader_election=_decode_leader_election(errs, data.get("leaderElection")),
        profiles=profiles,
        extenders=decode_extenders(errs, data.get("extenders")),
        delay_cache_until_active=as_bool(
            errs, "delayCacheUntilActive", data.get("delayCacheUntilActive"), False
        ),
        enable_profiling=as_bool(errs, "enableProfiling", data.get("enableProfiling"), True),
        enable_contention_profiling=as_bool(
            errs, "enableContentionProfiling", data.get("enableContentionProfiling"), True
        ),
    )
    return config, custom_plugins


def _decode_client_connection(errs: FieldErrors, raw: object) -> ClientConnection:
    path = "clientConnection"
    data = as_mapping(errs, path, raw, _CLIENT_CONNECTION_FIELDS)
    d = ClientConnection()
    qps = as_float(errs, child(path, "qps"), data.get("qps"), d.qps)
    burst = as_int(errs, child(path, "burst"), data.get("burst"), d.burst)
    content_type = as_str(errs, child(path, "contentType"), data.get("contentType"), "")
    return ClientConnection(
        kubeconfig=as_str(errs, child(path, "kubeconfig"), data.get("kubeconfig"), d.kubeconfig),
        accept_content_types=as_str(
            errs, child(path, "acceptContentTypes"), data.get("acceptContentTypes"), d.accept_content_types
        ),
        # Upstream treats empty and zero as "not set" for these three.
        content_type=content_type or d.content_type,
        qps=qps if qps != 0 else d.qps,
        burst=burst if burst != 0 else d.burst,
    )


def _decode_leader_election(errs: FieldErrors, raw: object) -> LeaderElection:
    path = "leaderElection"
    data = as_mapping(errs, path, raw, _LEADER_ELECTION_FIELDS)
    d = LeaderElection()

    def text(name: str, default: str) -> str:
        # Empty strings are "not set" (upstream defaults them), except the namespace,
        # whose empty value means "the pod's own namespace".
        return as_str(errs, child(path, name), data.get(name), default) or default

    return LeaderElection(
        leader_elect=as_bool(errs, child(path, "leaderElect"), data.get("leaderElect"), d.leader_elect),
        lease_duration=as_duration(
            errs, child(path, "leaseDuration"), data.get("leaseDuration"), d.lease_duration
        ),
        renew_deadline=as_duration(
            errs, child(path, "renewDeadline"), data.get("renewDeadline"), d.renew_deadline
        ),
        retry_period=as_duration(errs, child(path, "retryPeriod"), data.get("retryPeriod"), d.retry_period),
        resource_lock=text("resourceLock", d.resource_lock),
        resource_name=text("resourceName", d.resource_name),
        resource_namespace=as_str(
            errs, child(path, "resourceNamespace"), data.get("resourceNamespace"), d.resource_namespace
        ),
    )


def _decode_profile(
    errs: FieldErrors, path: str, raw: object, plugin_args: Mapping[str, type]
) -> tuple[Profile, Plugins | None, bool]:
    """The profile, the user's `plugins` (None if absent) and whether it was named."""
    data = as_mapping(errs, path, raw, _PROFILE_FIELDS)
    named = data.get("schedulerName") is not None
    plugins = None
    if data.get("plugins") is not None:
        plugins = _decode_plugins(errs, child(path, "plugins"), data["plugins"])
    profile = Profile(
        scheduler_name=as_str(errs, child(path, "schedulerName"), data.get("schedulerName"), ""),
        percentage_of_nodes_to_score=as_opt_int(
            errs, child(path, "percentageOfNodesToScore"), data.get("percentageOfNodesToScore")
        ),
    )
    config_path = child(path, "pluginConfig")
    for j, raw_config in enumerate(as_list(errs, config_path, data.get("pluginConfig"))):
        item_path = index(config_path, j)
        item = as_mapping(errs, item_path, raw_config, ("name", "args"))
        plugin = item.get("name")
        if not isinstance(plugin, str) or not plugin:
            errs.required(child(item_path, "name"))
            continue
        if plugin in profile.plugin_config:
            errs.duplicate(item_path, plugin)
            continue
        if plugin in REMOVED_PLUGINS:
            errs.invalid(item_path, plugin, REMOVED_PLUGIN_MESSAGE)
            continue
        args_path = child(item_path, "args")
        profile.plugin_config[plugin] = decode_args(errs, args_path, plugin, item.get("args"), plugin_args)
    return profile, plugins, named


def _decode_plugins(errs: FieldErrors, path: str, raw: object) -> Plugins:
    data = as_mapping(errs, path, raw, [wire for _, wire in EXTENSION_POINTS])
    return Plugins(
        **{
            attr: _decode_plugin_set(errs, child(path, wire), data.get(wire))
            for attr, wire in EXTENSION_POINTS
        }
    )


def _decode_plugin_set(errs: FieldErrors, path: str, raw: object) -> PluginSet:
    data = as_mapping(errs, path, raw, ("enabled", "disabled"))
    enabled: list[PluginRef] = []
    seen: set[str] = set()
    for i, item in enumerate(as_list(errs, child(path, "enabled"), data.get("enabled"))):
        item_path = index(child(path, "enabled"), i)
        ref = _decode_plugin_ref(errs, item_path, item, with_weight=True)
        if ref is None:
            continue
        if ref.name in REMOVED_PLUGINS:
            errs.invalid(item_path, ref.name, REMOVED_PLUGIN_MESSAGE)
        elif ref.name in seen:
            # Upstream lets this through to the framework, which refuses to start.
            errs.duplicate(child(item_path, "name"), ref.name)
        seen.add(ref.name)
        enabled.append(ref)
    disabled = [
        ref
        for i, item in enumerate(as_list(errs, child(path, "disabled"), data.get("disabled")))
        if (ref := _decode_plugin_ref(errs, index(child(path, "disabled"), i), item, with_weight=False))
    ]
    return PluginSet(enabled=enabled, disabled=disabled)


def _decode_plugin_ref(errs: FieldErrors, path: str, raw: object, *, with_weight: bool) -> PluginRef | None:
    data = as_mapping(errs, path, raw, ("name", "weight"))
    name = as_str(errs, child(path, "name"), data.get("name"), "")
    weight = as_opt_int(errs, child(path, "weight"), data.get("weight"))
    if not name:
        errs.required(child(path, "name"))
        return None
    return PluginRef(name, weight if with_weight else None)


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys, as upstream's strict YAML decoding does."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in out:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate field {key!r} (line {mark.line + 1}, column {mark.column + 1})", None
            )
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _describe_yaml_error(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return "; ".join(parts) + where
    return str(exc)
