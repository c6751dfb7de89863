"""What every command that builds the scheduler starts from: `run`, `explain` and `simulate`.

The same sequence for each, so a flag means the same thing everywhere: parse ``--feature-gates``,
load the ``--plugin`` modules, load ``--config`` (or the defaults) with both, let the command apply
its own flags, then build every profile offline (see ``policy.check_profiles``). A failing step
raises `StartupError` naming the step, and each command words the message its own way (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from scheduler.config import ConfigError, SchedulerConfiguration, default_config, load_config
from scheduler.features import FeatureGateError, FeatureGates
from scheduler.framework import PluginFactory
from scheduler.plugins.loading import PluginLoadError, declared_args, factories, load_registry
from scheduler.policy import check_profiles, watched_kinds
from scheduler.runtime import FrameworkError

# the steps, in order: "adjust" is the command's own (a flag overriding the file, a refusal)
Step = Literal["feature-gates", "plugins", "config", "adjust", "profiles"]


class StartupError(Exception):
    """A step of the start-up failed; ``str()`` is its cause's message."""

    def __init__(self, step: Step, message: str) -> None:
        super().__init__(message)
        self.step = step


@dataclass(frozen=True, slots=True)
class SchedulerSetup:
    """What the scheduler is built from: the configuration, plugins, watched kinds and gates."""

    config: SchedulerConfiguration
    registry: Mapping[str, PluginFactory]
    watches: Sequence[str]
    features: FeatureGates


def scheduler_setup(
    config_path: str | None,
    plugins: Sequence[str],
    feature_gates: str,
    adjust: Callable[[SchedulerConfiguration], None] | None = None,
) -> SchedulerSetup:
    """Everything checked before anything starts; ``adjust`` sees the loaded configuration
    before its profiles are built (it may raise ``StartupError("adjust", ...)``)."""
    try:
        features = FeatureGates.parse(feature_gates)
    except FeatureGateError as exc:
        raise StartupError("feature-gates", str(exc)) from exc
    try:
        sources = load_registry(plugins)
    except PluginLoadError as exc:
        raise StartupError("plugins", str(exc)) from exc
    plugin_args = declared_args(sources)
    try:
        config = (
            load_config(config_path, plugin_args, features)
            if config_path
            else default_config(plugin_args, features)
        )
    except ConfigError as exc:
        raise StartupError("config", str(exc)) from exc
    if adjust is not None:
        adjust(config)
    registry = factories(sources)
    try:
        check_profiles(config, registry, features)
    except FrameworkError as exc:
        raise StartupError("profiles", str(exc)) from exc
    return SchedulerSetup(config, registry, watched_kinds(config, sources), features)
