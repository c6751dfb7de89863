"""What a configuration may ask for, checked before anything starts.

`pyscheduler run`, `explain` and `simulate` share these: the refusals that keep pyscheduler off
kube-scheduler's own profile name and Lease (and shadow mode off its own profiles), the default
plugins this build leaves out, the offline build of every profile that makes a bad plugin set
fail before start-up, and the kinds the enabled out-of-tree plugins watch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
from scheduler.config import DEFAULT_PLUGINS, EXTENSION_POINTS, PluginSet, SchedulerConfiguration
from scheduler.features import DEFAULT_FEATURES, FeatureGates
from scheduler.framework import PluginFactory
from scheduler.plugins.loading import PluginSource

# kube-scheduler's own profile name and Lease (namespace, name): a secondary scheduler keeps off them
KUBE_SCHEDULER_NAME = "default-scheduler"
KUBE_SCHEDULER_LEASE = ("kube-system", "kube-scheduler")


def refuse_default_scheduler(config: SchedulerConfiguration) -> str | None:
    """Why this configuration would make pyscheduler act as the cluster's default scheduler, if it would.

    A profile named default-scheduler takes every pod that names no scheduler, next to the
    kube-scheduler that also takes them; the Lease kube-system/kube-scheduler is kube-scheduler's
    own, so holding it would stop kube-scheduler.
    """
    for i, profile in enumerate(config.profiles):
        if profile.scheduler_name == KUBE_SCHEDULER_NAME:
            return (
                f'refusing profiles[{i}].schedulerName "{KUBE_SCHEDULER_NAME}": pods that name no '
                "scheduler would be scheduled by both pyscheduler and kube-scheduler; pass "
                "--allow-default-scheduler-name if this cluster runs no kube-scheduler"
            )
    lease = config.leader_election
    if lease.leader_elect and (lease.resource_namespace, lease.resource_name) == KUBE_SCHEDULER_LEASE:
        return (
            "refusing leaderElection.resourceName/resourceNamespace kube-system/kube-scheduler: it is "
            "kube-scheduler's own Lease, holding it would stop kube-scheduler; pass "
            "--allow-default-scheduler-name if this cluster runs no kube-scheduler"
        )
    return None


def refuse_shadow(config: SchedulerConfiguration, shadow: str) -> str | None:
    """Why ``--shadow`` cannot name this scheduler: its pods would be scheduled for real."""
    names = [profile.scheduler_name for profile in config.profiles]
    if shadow and shadow in names:
        return f'refusing --shadow "{shadow}": it is one of pyscheduler\'s own profiles ({", ".join(names)})'
    return None


def available_plugins(config: SchedulerConfiguration, registry: Mapping[str, PluginFactory]) -> list[str]:
    """Drop default plugins this build does not have yet; returns their names (logged at start-up).

    Plugins the user named explicitly are never dropped: an unknown one is a config error.
    """
    default_names = {ref.name for ref in DEFAULT_PLUGINS}
    missing: set[str] = set()
    for profile in config.profiles:
        multi = profile.plugins.multi_point
        keep = []
        for ref in multi.enabled:
            if ref.name in registry or ref.name not in default_names:
                keep.append(ref)
            else:
                missing.add(ref.name)
        profile.plugins.multi_point = PluginSet(enabled=keep, disabled=list(multi.disabled))
    return sorted(missing)


def without_plugins(config: SchedulerConfiguration, names: Sequence[str]) -> None:
    """Take the plugins ``names`` out of every profile, at every extension point."""
    for profile in config.profiles:
        for attr, _ in EXTENSION_POINTS:
            plugin_set = getattr(profile.plugins, attr)
            plugin_set.enabled = [ref for ref in plugin_set.enabled if ref.name not in names]


def check_profiles(
    config: SchedulerConfiguration,
    registry: Mapping[str, PluginFactory],
    features: FeatureGates = DEFAULT_FEATURES,
) -> None:
    """Build every profile once, offline, so a bad plugin set or args fail before start-up
    (FrameworkError naming the profile and plugin)."""
    available_plugins(config, registry)
    build_scheduler(
        config,
        registry,
        _Offline(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda pod: None,
        features=features,
    )


def watched_kinds(config: SchedulerConfiguration, sources: Mapping[str, PluginSource]) -> list[str]:
    """The kinds the enabled out-of-tree plugins declare in ``watches`` ("group/version/plural")."""
    enabled = {name for profile in config.profiles for name in profile.plugins.enabled_names()}
    return sorted({kind for name in enabled if name in sources for kind in sources[name].watches})


class _Offline:
    """The API client of the offline profile check: no plugin may call the API while being built."""

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        raise RuntimeError("no API calls while the profiles are checked")
