"""KubeSchedulerConfiguration v1 as Python dataclasses (snake_case, defaults applied).

These are the *effective* settings after defaulting: the framework, the queue and
the server read them directly, and `to_dict()` prints them back in the v1 wire
form for /configz.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .durations import format_duration
from .extenders import Extender
from .typedargs import encode_dataclass

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KIND",
    "ClientConnection",
    "LeaderElection",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "SchedulerConfiguration",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
# Our deliberate difference from upstream ("default-scheduler"): we run next to it.
DEFAULT_SCHEDULER_NAME = "pyscheduler"

# (attribute, wire name) for every extension point, in the v1 field order.
EXTENSION_POINTS: tuple[tuple[str, str], ...] = (
    ("multi_point", "multiPoint"),
    ("pre_enqueue", "preEnqueue"),
    ("queue_sort", "queueSort"),
    ("pre_filter", "preFilter"),
    ("filter", "filter"),
    ("post_filter", "postFilter"),
    ("pre_score", "preScore"),
    ("score", "score"),
    ("reserve", "reserve"),
    ("permit", "permit"),
    ("pre_bind", "preBind"),
    ("bind", "bind"),
    ("post_bind", "postBind"),
)


@dataclass(slots=True, frozen=True)
class PluginRef:
    """A plugin named at an extension point; `weight` matters only for Score."""

    name: str
    weight: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.weight is not None:
            out["weight"] = self.weight
        return out


@dataclass(slots=True)
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[PluginRef] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.enabled:
            out["enabled"] = [p.to_dict() for p in self.enabled]
        if self.disabled:
            out["disabled"] = [p.to_dict() for p in self.disabled]
        return out


@dataclass(slots=True)
class Plugins:
    """Plugin sets per extension point, after merging the user's sets into the defaults.

    MultiPoint is not expanded here: that needs the plugin classes (the framework does it).
    """

    multi_point: PluginSet = field(default_factory=PluginSet)
    pre_enqueue: PluginSet = field(default_factory=PluginSet)
    queue_sort: PluginSet = field(default_factory=PluginSet)
    pre_filter: PluginSet = field(default_factory=PluginSet)
    filter: PluginSet = field(default_factory=PluginSet)
    post_filter: PluginSet = field(default_factory=PluginSet)
    pre_score: PluginSet = field(default_factory=PluginSet)
    score: PluginSet = field(default_factory=PluginSet)
    reserve: PluginSet = field(default_factory=PluginSet)
    permit: PluginSet = field(default_factory=PluginSet)
    pre_bind: PluginSet = field(default_factory=PluginSet)
    bind: PluginSet = field(default_factory=PluginSet)
    post_bind: PluginSet = field(default_factory=PluginSet)

    def items(self) -> list[tuple[str, PluginSet]]:
        """(wire name, set) for every extension point, multiPoint first."""
        return [(wire, getattr(self, attr)) for attr, wire in EXTENSION_POINTS]

    def enabled_names(self) -> list[str]:
        """Sorted names enabled at any extension point (upstream's pluginsNames)."""
        return sorted({p.name for _, s in self.items() for p in s.enabled})

    def to_dict(self) -> dict[str, Any]:
        return {wire: s.to_dict() for wire, s in self.items()}


@dataclass(slots=True)
class Profile:
    """One scheduling profile; pods pick it by `spec.schedulerName`.

    `plugin_config` maps a plugin name to its args object (see `args.py`), or to
    the raw mapping for a plugin without a known args type (out-of-tree plugins).
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schedulerName": self.scheduler_name}
        if self.percentage_of_nodes_to_score is not None:
            out["percentageOfNodesToScore"] = self.percentage_of_nodes_to_score
        out["plugins"] = self.plugins.to_dict()
        out["pluginConfig"] = [
            {"name": name, "args": _args_to_dict(args)} for name, args in self.plugin_config.items()
        ]
        return out


def _args_to_dict(args: object) -> Any:
    """The wire form of decoded args: built-in types write themselves, an out-of-tree plugin's
    dataclass is encoded field by field, a plain mapping is copied."""
    if isinstance(args, ArgsType):
        return args.to_dict()
    if dataclasses.is_dataclass(args) and not isinstance(args, type):
        return encode_dataclass(args)
    return copy.deepcopy(args)


@runtime_checkable
class ArgsType(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class ClientConnection:
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100

    def to_dict(self) -> dict[str, Any]:
        return {
            "kubeconfig": self.kubeconfig,
            "acceptContentTypes": self.accept_content_types,
            "contentType": self.content_type,
            "qps": self.qps,
            "burst": self.burst,
        }


@dataclass(slots=True)
class LeaderElection:
    """Lease-based leader election; durations are in seconds.

    An empty `resource_namespace` means "the namespace the scheduler pod runs in",
    decided at run time (upstream defaults to kube-system; a secondary scheduler
    installed by Helm lives in its own namespace).
    """

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_SCHEDULER_NAME
    resource_namespace: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "leaderElect": self.leader_elect,
            "leaseDuration": format_duration(self.lease_duration),
            "renewDeadline": format_duration(self.renew_deadline),
            "retryPeriod": format_duration(self.retry_period),
            "resourceLock": self.resource_lock,
            "resourceName": self.resource_name,
            "resourceNamespace": self.resource_namespace,
        }


@dataclass(slots=True)
class SchedulerConfiguration:
    """The whole effective configuration (what /configz serves)."""

    parallelism: int = 16
    # 0 = adaptive (upstream's numFeasibleNodesToFind); a profile may override it.
    percentage_of_nodes_to_score: int | None = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    profiles: list[Profile] = field(default_factory=list)
    # shared by every profile (see scheduler.extender)
    extenders: list[Extender] = field(default_factory=list)
    delay_cache_until_active: bool = False
    enable_profiling: bool = True
    enable_contention_profiling: bool = True

    def profiles_by_name(self) -> dict[str, Profile]:
        return {p.scheduler_name: p for p in self.profiles}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "parallelism": self.parallelism,
            "leaderElection": self.leader_election.to_dict(),
            "clientConnection": self.client_connection.to_dict(),
            "enableProfiling": self.enable_profiling,
            "enableContentionProfiling": self.enable_contention_profiling,
        }
        if self.percentage_of_nodes_to_score is not None:
            out["percentageOfNodesToScore"] = self.percentage_of_nodes_to_score
        out["podInitialBackoffSeconds"] = self.pod_initial_backoff_seconds
        out["podMaxBackoffSeconds"] = self.pod_max_backoff_seconds
        out["profiles"] = [p.to_dict() for p in self.profiles]
        if self.extenders:
            out["extenders"] = [e.to_dict() for e in self.extenders]
        if self.delay_cache_until_active:
            out["delayCacheUntilActive"] = True
        return out
