"""Plugin args types of kubescheduler.config.k8s.io/v1 (types_pluginargs.go).

Each type knows its wire form: `decode` reads `pluginConfig[i].args` strictly
(field defaults fill what the user left out) and `to_dict` writes the v1 form back.
Raw Kubernetes API objects inside args (addedAffinity, defaultConstraints) stay
plain camelCase dicts, exactly as the plugins will match them against pods.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

from .decode import (
    as_bool,
    as_duration,
    as_int,
    as_list,
    as_mapping,
    as_opt_int,
    as_str,
    as_str_list,
)
from .durations import format_duration
from .fielderrors import FieldErrors, child, index
from .typedargs import decode_dataclass
from .types import API_VERSION

__all__ = [
    "ARGS_TYPES",
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "BuiltinArgs",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PodTopologySpreadArgs",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "decode_args",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"

_TYPE_META = ("apiVersion", "kind")


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]


def _header(kind: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind}


@dataclass(slots=True, frozen=True)
class ResourceSpec:
    name: str
    # 0 on the wire means "not set"; defaulting turns it into 1.
    weight: int = 1

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, raw: object) -> ResourceSpec:
        data = as_mapping(errs, path, raw, ("name", "weight"))
        return cls(
            name=as_str(errs, child(path, "name"), data.get("name"), ""),
            weight=as_int(errs, child(path, "weight"), data.get("weight"), 0),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "weight": self.weight}


@dataclass(slots=True, frozen=True)
class UtilizationShapePoint:
    utilization: int
    score: int

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, raw: object) -> UtilizationShapePoint:
        data = as_mapping(errs, path, raw, ("utilization", "score"))
        return cls(
            utilization=as_int(errs, child(path, "utilization"), data.get("utilization"), 0),
            score=as_int(errs, child(path, "score"), data.get("score"), 0),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"utilization": self.utilization, "score": self.score}


def _decode_resources(errs: FieldErrors, path: str, raw: object) -> list[ResourceSpec]:
    return [ResourceSpec.decode(errs, index(path, i), r) for i, r in enumerate(as_list(errs, path, raw))]


def _decode_shape(errs: FieldErrors, path: str, raw: object) -> list[UtilizationShapePoint]:
    return [
        UtilizationShapePoint.decode(errs, index(path, i), p) for i, p in enumerate(as_list(errs, path, raw))
    ]


@dataclass(slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: list[ResourceSpec] = field(default_factory=_default_resources)
    # The shape of RequestedToCapacityRatio; None when that strategy is not used.
    requested_to_capacity_ratio: list[UtilizationShapePoint] | None = None

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, raw: object) -> ScoringStrategy:
        data = as_mapping(errs, path, raw, ("type", "resources", "requestedToCapacityRatio"))
        shape: list[UtilizationShapePoint] | None = None
        if data.get("requestedToCapacityRatio") is not None:
            rtcr_path = child(path, "requestedToCapacityRatio")
            rtcr = as_mapping(errs, rtcr_path, data["requestedToCapacityRatio"], ("shape",))
            shape = _decode_shape(errs, child(rtcr_path, "shape"), rtcr.get("shape"))
        return cls(
            # Upstream does not default the type of a user-given strategy; "" is rejected later.
            type=as_str(errs, child(path, "type"), data.get("type"), ""),
            resources=_decode_resources(errs, child(path, "resources"), data.get("resources")),
            requested_to_capacity_ratio=shape,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "resources": [r.to_dict() for r in self.resources]}
        if self.requested_to_capacity_ratio is not None:
            out["requestedToCapacityRatio"] = {
                "shape": [p.to_dict() for p in self.requested_to_capacity_ratio]
            }
        return out


@dataclass(slots=True)
class NodeResourcesFitArgs:
    KIND: ClassVar[str] = "NodeResourcesFitArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("ignoredResources", "ignoredResourceGroups", "scoringStrategy")

    ignored_resources: list[str] = field(default_factory=list)
    ignored_resource_groups: list[str] = field(default_factory=list)
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> NodeResourcesFitArgs:
        raw_strategy = data.get("scoringStrategy")
        return cls(
            ignored_resources=as_str_list(
                errs, child(path, "ignoredResources"), data.get("ignoredResources")
            ),
            ignored_resource_groups=as_str_list(
                errs, child(path, "ignoredResourceGroups"), data.get("ignoredResourceGroups")
            ),
            scoring_strategy=ScoringStrategy()
            if raw_strategy is None
            else ScoringStrategy.decode(errs, child(path, "scoringStrategy"), raw_strategy),
        )

    def to_dict(self) -> dict[str, Any]:
        out = _header(self.KIND)
        if self.ignored_resources:
            out["ignoredResources"] = list(self.ignored_resources)
        if self.ignored_resource_groups:
            out["ignoredResourceGroups"] = list(self.ignored_resource_groups)
        out["scoringStrategy"] = self.scoring_strategy.to_dict()
        return out


@dataclass(slots=True)
class NodeResourcesBalancedAllocationArgs:
    KIND: ClassVar[str] = "NodeResourcesBalancedAllocationArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("resources",)

    resources: list[ResourceSpec] = field(default_factory=_default_resources)

    @classmethod
    def decode(
        cls, errs: FieldErrors, path: str, data: Mapping[str, Any]
    ) -> NodeResourcesBalancedAllocationArgs:
        return cls(resources=_decode_resources(errs, child(path, "resources"), data.get("resources")))

    def to_dict(self) -> dict[str, Any]:
        return {**_header(self.KIND), "resources": [r.to_dict() for r in self.resources]}


@dataclass(slots=True)
class NodeAffinityArgs:
    KIND: ClassVar[str] = "NodeAffinityArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("addedAffinity",)

    # A core/v1 NodeAffinity object, camelCase, or None (all nodes match).
    added_affinity: dict[str, Any] | None = None

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> NodeAffinityArgs:
        raw = data.get("addedAffinity")
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            errs.invalid(child(path, "addedAffinity"), raw, "must be an object")
            return cls()
        return cls(added_affinity=copy.deepcopy(dict(raw)))

    def to_dict(self) -> dict[str, Any]:
        out = _header(self.KIND)
        if self.added_affinity is not None:
            out["addedAffinity"] = copy.deepcopy(self.added_affinity)
        return out


@dataclass(slots=True)
class PodTopologySpreadArgs:
    KIND: ClassVar[str] = "PodTopologySpreadArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("defaultConstraints", "defaultingType")

    # core/v1 TopologySpreadConstraint objects, camelCase.
    default_constraints: list[dict[str, Any]] = field(default_factory=list)
    defaulting_type: str = "System"

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> PodTopologySpreadArgs:
        constraints_path = child(path, "defaultConstraints")
        constraints: list[dict[str, Any]] = []
        for i, c in enumerate(as_list(errs, constraints_path, data.get("defaultConstraints"))):
            if isinstance(c, Mapping):
                constraints.append(copy.deepcopy(dict(c)))
            else:
                errs.invalid(index(constraints_path, i), c, "must be an object")
        return cls(
            default_constraints=constraints,
            defaulting_type=as_str(errs, child(path, "defaultingType"), data.get("defaultingType"), "System"),
        )

    def to_dict(self) -> dict[str, Any]:
        out = _header(self.KIND)
        if self.default_constraints:
            out["defaultConstraints"] = copy.deepcopy(self.default_constraints)
        out["defaultingType"] = self.defaulting_type
        return out


@dataclass(slots=True)
class InterPodAffinityArgs:
    KIND: ClassVar[str] = "InterPodAffinityArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> InterPodAffinityArgs:
        return cls(
            hard_pod_affinity_weight=as_int(
                errs, child(path, "hardPodAffinityWeight"), data.get("hardPodAffinityWeight"), 1
            ),
            ignore_preferred_terms_of_existing_pods=as_bool(
                errs,
                child(path, "ignorePreferredTermsOfExistingPods"),
                data.get("ignorePreferredTermsOfExistingPods"),
                False,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **_header(self.KIND),
            "hardPodAffinityWeight": self.hard_pod_affinity_weight,
            "ignorePreferredTermsOfExistingPods": self.ignore_preferred_terms_of_existing_pods,
        }


@dataclass(slots=True)
class VolumeBindingArgs:
    KIND: ClassVar[str] = "VolumeBindingArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("bindTimeoutSeconds", "shape")

    bind_timeout_seconds: int = 600
    # Only with the StorageCapacityScoring feature (off in v1.36): None by default.
    shape: list[UtilizationShapePoint] | None = None

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> VolumeBindingArgs:
        shape = None
        if data.get("shape") is not None:
            shape = _decode_shape(errs, child(path, "shape"), data["shape"])
        return cls(
            bind_timeout_seconds=as_int(
                errs, child(path, "bindTimeoutSeconds"), data.get("bindTimeoutSeconds"), 600
            ),
            shape=shape,
        )

    def to_dict(self) -> dict[str, Any]:
        out = {**_header(self.KIND), "bindTimeoutSeconds": self.bind_timeout_seconds}
        if self.shape is not None:
            out["shape"] = [p.to_dict() for p in self.shape]
        return out


@dataclass(slots=True)
class DefaultPreemptionArgs:
    KIND: ClassVar[str] = "DefaultPreemptionArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("minCandidateNodesPercentage", "minCandidateNodesAbsolute")

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> DefaultPreemptionArgs:
        pct = as_opt_int(
            errs, child(path, "minCandidateNodesPercentage"), data.get("minCandidateNodesPercentage")
        )
        absolute = as_opt_int(
            errs, child(path, "minCandidateNodesAbsolute"), data.get("minCandidateNodesAbsolute")
        )
        return cls(
            min_candidate_nodes_percentage=10 if pct is None else pct,
            min_candidate_nodes_absolute=100 if absolute is None else absolute,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **_header(self.KIND),
            "minCandidateNodesPercentage": self.min_candidate_nodes_percentage,
            "minCandidateNodesAbsolute": self.min_candidate_nodes_absolute,
        }


@dataclass(slots=True)
class DynamicResourcesArgs:
    """DRA plugin timeouts in seconds (v1.36 enables both features by default)."""

    KIND: ClassVar[str] = "DynamicResourcesArgs"
    FIELDS: ClassVar[tuple[str, ...]] = ("filterTimeout", "bindingTimeout")

    # 0 disables the per-node filter timeout.
    filter_timeout: float = 10.0
    binding_timeout: float = 600.0

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> DynamicResourcesArgs:
        return cls(
            filter_timeout=as_duration(errs, child(path, "filterTimeout"), data.get("filterTimeout"), 10.0),
            binding_timeout=as_duration(
                errs, child(path, "bindingTimeout"), data.get("bindingTimeout"), 600.0
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **_header(self.KIND),
            "filterTimeout": format_duration(self.filter_timeout),
            "bindingTimeout": format_duration(self.binding_timeout),
        }


class BuiltinArgs(Protocol):
    """What every built-in args type declares: its kind, its wire fields, decode and to_dict."""

    KIND: ClassVar[str]
    FIELDS: ClassVar[tuple[str, ...]]

    @classmethod
    def decode(cls, errs: FieldErrors, path: str, data: Mapping[str, Any]) -> Self: ...

    def to_dict(self) -> dict[str, Any]: ...


# Plugin name -> its args type; a plugin missing here takes raw mappings.
ARGS_TYPES: dict[str, type[BuiltinArgs]] = {
    "DefaultPreemption": DefaultPreemptionArgs,
    "DynamicResources": DynamicResourcesArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "NodeAffinity": NodeAffinityArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "VolumeBinding": VolumeBindingArgs,
}


def decode_args(
    errs: FieldErrors, path: str, plugin: str, raw: object, plugin_args: Mapping[str, type] | None = None
) -> object:
    """The args object for `plugin` from `pluginConfig[i].args` (`raw` may be None).

    Built-in plugins get their typed args (defaults for what is missing), out-of-tree plugins
    that declare an args dataclass (``plugin_args``) that dataclass; any other plugin keeps the
    raw mapping, as upstream keeps runtime.Unknown.
    """
    args_type = ARGS_TYPES.get(plugin)
    declared = (plugin_args or {}).get(plugin)
    if args_type is None and declared is not None:
        return decode_dataclass(errs, path, declared, raw)
    if args_type is None:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            errs.invalid(path, raw, "must be an object")
            return {}
        return copy.deepcopy(dict(raw))
    data = as_mapping(errs, path, raw, (*_TYPE_META, *args_type.FIELDS))
    api_version = data.get("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        errs.invalid(child(path, "apiVersion"), api_version, f'must be "{API_VERSION}"')
    kind = data.get("kind")
    if kind is not None and kind != args_type.KIND:
        errs.invalid(child(path, "kind"), kind, f'must be "{args_type.KIND}" for plugin "{plugin}"')
    return args_type.decode(errs, path, data)
