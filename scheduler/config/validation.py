"""Validation of the defaulted configuration, as upstream's validation/*.go.

Every check appends to a FieldErrors with the exact field path, so a bad file is
reported whole. Messages follow upstream's field errors ("Invalid value: ...",
"Required value", "Duplicate value: ...", "Forbidden: ..."), except unsupported
enum values, which read `unknown value "Foo"`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .args import (
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
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from .decode import as_list, as_mapping
from .durations import format_duration
from .extenders import validate_extenders
from .fielderrors import FieldErrors, child, index
from .types import API_VERSION, SchedulerConfiguration

__all__ = ["REMOVED_PLUGINS", "validate", "validate_args", "validate_configuration"]

# Plugins removed from the v1 API; naming one is an error, as upstream.
REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
REMOVED_PLUGIN_MESSAGE = (
    f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version "{API_VERSION}")'
)

_SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
_MAX_CUSTOM_PRIORITY_SCORE = 10
# client-go's leader elector requires renewDeadline > JitterFactor * retryPeriod.
_LEADER_ELECTION_JITTER = 1.2

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate(config: SchedulerConfiguration) -> None:
    """Raise ConfigError naming every problem in `config`; return quietly if it is valid."""
    errs = FieldErrors()
    validate_configuration(errs, config)
    errs.raise_if_any()


def validate_configuration(errs: FieldErrors, cfg: SchedulerConfiguration) -> None:
    _validate_client_connection(errs, cfg)
    _validate_leader_election(errs, cfg)
    if cfg.parallelism <= 0:
        errs.invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero")
    if not cfg.profiles:
        errs.required("profiles")
    seen: dict[str, int] = {}
    for i, profile in enumerate(cfg.profiles):
        path = index("profiles", i)
        if not profile.scheduler_name:
            errs.required(child(path, "schedulerName"))
        elif profile.scheduler_name in seen:
            errs.duplicate(child(path, "schedulerName"), profile.scheduler_name)
        else:
            seen[profile.scheduler_name] = i
        _validate_percentage(
            errs, child(path, "percentageOfNodesToScore"), profile.percentage_of_nodes_to_score
        )
        for j, (name, args) in enumerate(profile.plugin_config.items()):
            config_path = index(child(path, "pluginConfig"), j)
            if name in REMOVED_PLUGINS:
                errs.invalid(config_path, name, REMOVED_PLUGIN_MESSAGE)
            else:
                validate_args(errs, child(config_path, "args"), args)
    _validate_common_queue_sort(errs, cfg)
    _validate_percentage(errs, "percentageOfNodesToScore", cfg.percentage_of_nodes_to_score)
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.invalid("podInitialBackoffSeconds", cfg.pod_initial_backoff_seconds, "must be greater than 0")
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.invalid(
            "podMaxBackoffSeconds",
            cfg.pod_max_backoff_seconds,
            "must be greater than or equal to PodInitialBackoffSeconds",
        )
    validate_extenders(errs, cfg.extenders)


def _validate_client_connection(errs: FieldErrors, cfg: SchedulerConfiguration) -> None:
    if cfg.client_connection.burst < 0:
        errs.invalid("clientConnection.burst", cfg.client_connection.burst, "must be non-negative")


def _validate_leader_election(errs: FieldErrors, cfg: SchedulerConfiguration) -> None:
    le = cfg.leader_election
    if not le.leader_elect:
        return
    for name, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            errs.invalid(f"leaderElection.{name}", format_duration(value), "must be greater than zero")
    if le.lease_duration <= le.renew_deadline:
        errs.invalid(
            "leaderElection.leaseDuration",
            format_duration(le.renew_deadline),
            "LeaseDuration must be greater than RenewDeadline",
        )
    if (
        le.retry_period > 0
        and le.renew_deadline > 0
        and le.renew_deadline <= _LEADER_ELECTION_JITTER * le.retry_period
    ):
        errs.invalid(
            "leaderElection.renewDeadline",
            format_duration(le.renew_deadline),
            f"must be greater than {_LEADER_ELECTION_JITTER} times retryPeriod"
            f" ({format_duration(le.retry_period)})",
        )
    if not le.resource_lock:
        errs.invalid("leaderElection.resourceLock", le.resource_lock, "resourceLock is required")
    elif le.resource_lock != "leases":
        errs.invalid("leaderElection.resourceLock", le.resource_lock, 'resourceLock value must be "leases"')
    if not le.resource_name:
        errs.invalid("leaderElection.resourceName", le.resource_name, "resourceName is required")


def _validate_percentage(errs: FieldErrors, path: str, value: int | None) -> None:
    if value is not None and not 0 <= value <= 100:
        errs.invalid(path, value, "not in valid range [0-100]")


def _validate_common_queue_sort(errs: FieldErrors, cfg: SchedulerConfiguration) -> None:
    """QueueSort (and its args) must agree across profiles: there is one queue."""
    if not cfg.profiles:
        return
    first = cfg.profiles[0]
    canon = first.plugins.queue_sort
    if len(canon.enabled) > 1:
        errs.invalid(
            "profiles[0].plugins.queueSort.enabled",
            len(canon.enabled),
            "only one queue sort plugin can be enabled",
        )
    sort_name = canon.enabled[0].name if canon.enabled else ""
    sort_args = first.plugin_config.get(sort_name)
    for i, profile in enumerate(cfg.profiles[1:], start=1):
        path = index("profiles", i)
        current = profile.plugins.queue_sort
        if current != canon:
            errs.invalid(
                child(path, "plugins.queueSort"),
                [p.name for p in current.enabled],
                "must be the same for all profiles",
            )
        if sort_name:
            for j, (name, args) in enumerate(profile.plugin_config.items()):
                if name == sort_name and args != sort_args:
                    errs.add(
                        child(index(child(path, "pluginConfig"), j), "args"),
                        "the queueSort plugin's args must be the same for all profiles",
                    )


# --- plugin args -------------------------------------------------------------------------


def validate_args(errs: FieldErrors, path: str, args: object) -> None:
    """Validate one plugin's args object (raw mappings of unknown plugins are not checked)."""
    if isinstance(args, NodeResourcesFitArgs):
        _validate_fit(errs, path, args)
    elif isinstance(args, NodeResourcesBalancedAllocationArgs):
        _validate_balanced(errs, path, args)
    elif isinstance(args, DefaultPreemptionArgs):
        _validate_preemption(errs, path, args)
    elif isinstance(args, InterPodAffinityArgs):
        w = args.hard_pod_affinity_weight
        if not 0 <= w <= 100:
            errs.invalid(child(path, "hardPodAffinityWeight"), w, "not in valid range [0, 100]")
    elif isinstance(args, VolumeBindingArgs):
        _validate_volume_binding(errs, path, args)
    elif isinstance(args, DynamicResourcesArgs):
        _validate_dynamic_resources(errs, path, args)
    elif isinstance(args, PodTopologySpreadArgs):
        _validate_topology_spread(errs, path, args)
    elif isinstance(args, NodeAffinityArgs) and args.added_affinity is not None:
        _validate_node_affinity(errs, child(path, "addedAffinity"), args.added_affinity)


def _validate_fit(errs: FieldErrors, path: str, args: NodeResourcesFitArgs) -> None:
    for i, name in enumerate(args.ignored_resources):
        _validate_label_name(errs, index(child(path, "ignoredResources"), i), name)
    for i, group in enumerate(args.ignored_resource_groups):
        group_path = index(child(path, "ignoredResourceGroups"), i)
        if "/" in group:
            errs.invalid(group_path, group, "resource group name can't contain '/'")
        _validate_label_name(errs, group_path, group)
    strategy_path = child(path, "scoringStrategy")
    strategy = args.scoring_strategy
    if strategy.type not in _SCORING_STRATEGY_TYPES:
        errs.unknown_value(child(strategy_path, "type"), strategy.type)
    _validate_resource_weights(errs, child(strategy_path, "resources"), strategy.resources)
    rtcr_path = child(strategy_path, "requestedToCapacityRatio")
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if strategy.requested_to_capacity_ratio is None:
            errs.required(rtcr_path, "must be specified when type is RequestedToCapacityRatio")
        else:
            _validate_shape(errs, child(rtcr_path, "shape"), strategy.requested_to_capacity_ratio)
    elif strategy.requested_to_capacity_ratio is not None:
        errs.forbidden(rtcr_path, "must be nil when type is not RequestedToCapacityRatio")


def _validate_resource_weights(errs: FieldErrors, path: str, resources: list[ResourceSpec]) -> None:
    for i, r in enumerate(resources):
        if not 0 < r.weight <= 100:
            errs.invalid(
                child(index(path, i), "weight"),
                r.weight,
                f"resource weight of {r.name} not in valid range (0, 100]",
            )


def _validate_shape(errs: FieldErrors, path: str, shape: list[UtilizationShapePoint]) -> None:
    if not shape:
        errs.required(path, "at least one point must be specified")
        return
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.invalid(
                child(index(path, i), "utilization"),
                shape[i].utilization,
                "values must be sorted in increasing order",
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            errs.invalid(
                child(index(path, i), "utilization"), point.utilization, "not in valid range [0, 100]"
            )
        if not 0 <= point.score <= _MAX_CUSTOM_PRIORITY_SCORE:
            errs.invalid(
                child(index(path, i), "score"),
                point.score,
                f"not in valid range [0, {_MAX_CUSTOM_PRIORITY_SCORE}]",
            )


def _validate_balanced(errs: FieldErrors, path: str, args: NodeResourcesBalancedAllocationArgs) -> None:
    seen: set[str] = set()
    for i, r in enumerate(args.resources):
        item = index(child(path, "resources"), i)
        if r.name in seen:
            errs.duplicate(child(item, "name"), r.name)
        seen.add(r.name)
        if r.weight != 1:
            errs.invalid(child(item, "weight"), r.weight, "must be 1")


def _validate_preemption(errs: FieldErrors, path: str, args: DefaultPreemptionArgs) -> None:
    pct_path = child(path, "minCandidateNodesPercentage")
    abs_path = child(path, "minCandidateNodesAbsolute")
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    if not 0 <= pct <= 100:
        errs.invalid(pct_path, pct, "not in valid range [0, 100]")
    if absolute < 0:
        errs.invalid(abs_path, absolute, "not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        errs.invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
        errs.invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage")


def _validate_volume_binding(errs: FieldErrors, path: str, args: VolumeBindingArgs) -> None:
    if args.bind_timeout_seconds < 0:
        errs.invalid(
            child(path, "bindTimeoutSeconds"),
            args.bind_timeout_seconds,
            "invalid BindTimeoutSeconds, should not be a negative value",
        )
    if args.shape is not None:
        # StorageCapacityScoring is alpha (off) in v1.36, so a shape would silently do nothing.
        errs.invalid(
            child(path, "shape"),
            [p.to_dict() for p in args.shape],
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        )


def _validate_dynamic_resources(errs: FieldErrors, path: str, args: DynamicResourcesArgs) -> None:
    if args.filter_timeout < 0:
        errs.invalid(
            child(path, "filterTimeout"), format_duration(args.filter_timeout), "must be zero or positive"
        )
    if args.binding_timeout < 1:
        errs.invalid(
            child(path, "bindingTimeout"), format_duration(args.binding_timeout), "must be at least 1 second"
        )


# --- raw API objects inside args ----------------------------------------------------------


def _validate_label_name(errs: FieldErrors, path: str, value: str) -> None:
    """A qualified name ([DNS-subdomain prefix/]name), as metav1validation.ValidateLabelName."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        errs.invalid(path, value, "prefix part must be non-empty")
    elif prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        errs.invalid(path, value, "prefix part must be a lowercase RFC 1123 subdomain")
    if not name:
        errs.invalid(path, value, "name part must be non-empty")
    elif len(name) > 63:
        errs.invalid(path, value, "name part must be no more than 63 characters")
    elif not _NAME_PART.match(name):
        errs.invalid(
            path,
            value,
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character",
        )


_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")


def _validate_topology_spread(errs: FieldErrors, path: str, args: PodTopologySpreadArgs) -> None:
    type_path = child(path, "defaultingType")
    if args.defaulting_type not in ("System", "List"):
        errs.unknown_value(type_path, args.defaulting_type)
    elif args.defaulting_type == "System" and args.default_constraints:
        errs.invalid(type_path, args.defaulting_type, "when .defaultConstraints are not empty")
    list_path = child(path, "defaultConstraints")
    seen: set[tuple[object, object]] = set()
    for i, raw in enumerate(args.default_constraints):
        p = index(list_path, i)
        c = as_mapping(errs, p, raw, _CONSTRAINT_FIELDS)
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            errs.invalid(child(p, "maxSkew"), skew if skew is not None else 0, "not in valid range (0, inf)")
        key = c.get("topologyKey")
        if not key:
            errs.required(child(p, "topologyKey"), "can not be empty")
        elif not isinstance(key, str):
            errs.invalid(child(p, "topologyKey"), key, "must be a string")
        else:
            _validate_label_name(errs, child(p, "topologyKey"), key)
        action = c.get("whenUnsatisfiable")
        if not action:
            errs.required(child(p, "whenUnsatisfiable"), "can not be empty")
        elif action not in _WHEN_UNSATISFIABLE:
            errs.unknown_value(child(p, "whenUnsatisfiable"), action)
        if c.get("labelSelector") is not None:
            errs.forbidden(
                child(p, "labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            )
        min_domains = c.get("minDomains")
        if min_domains is not None and (isinstance(min_domains, bool) or not isinstance(min_domains, int)):
            errs.invalid(child(p, "minDomains"), min_domains, "must be an integer")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = c.get(policy)
            if value is not None and value not in _INCLUSION_POLICIES:
                errs.unknown_value(child(p, policy), value)
        for k, label in enumerate(as_list(errs, child(p, "matchLabelKeys"), c.get("matchLabelKeys"))):
            if not isinstance(label, str):
                errs.invalid(index(child(p, "matchLabelKeys"), k), label, "must be a string")
        pair = (str(key), str(action))
        if key and action and pair in seen:
            errs.duplicate(p, f"{{{key}, {action}}}")
        seen.add(pair)


_AFFINITY_FIELDS = (
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
)
_SET_OPERATORS = ("In", "NotIn")
_EXISTS_OPERATORS = ("Exists", "DoesNotExist")
_NUMERIC_OPERATORS = ("Gt", "Lt")


def _validate_node_affinity(errs: FieldErrors, path: str, affinity: Mapping[str, Any]) -> None:
    data = as_mapping(errs, path, affinity, _AFFINITY_FIELDS)
    required_path = child(path, "requiredDuringSchedulingIgnoredDuringExecution")
    if data.get(_AFFINITY_FIELDS[0]) is not None:
        selector = as_mapping(errs, required_path, data[_AFFINITY_FIELDS[0]], ("nodeSelectorTerms",))
        terms_path = child(required_path, "nodeSelectorTerms")
        for i, term in enumerate(as_list(errs, terms_path, selector.get("nodeSelectorTerms"))):
            _validate_selector_term(errs, index(terms_path, i), term)
    preferred_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, raw in enumerate(as_list(errs, preferred_path, data.get(_AFFINITY_FIELDS[1]))):
        p = index(preferred_path, i)
        item = as_mapping(errs, p, raw, ("weight", "preference"))
        weight = item.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int):
            errs.invalid(child(p, "weight"), weight, "must be an integer")
        _validate_selector_term(errs, child(p, "preference"), item.get("preference"))


def _validate_selector_term(errs: FieldErrors, path: str, raw: object) -> None:
    term = as_mapping(errs, path, raw, ("matchExpressions", "matchFields"))
    exprs_path = child(path, "matchExpressions")
    for i, raw_req in enumerate(as_list(errs, exprs_path, term.get("matchExpressions"))):
        _validate_label_requirement(errs, index(exprs_path, i), raw_req)
    fields_path = child(path, "matchFields")
    for i, raw_req in enumerate(as_list(errs, fields_path, term.get("matchFields"))):
        _validate_field_requirement(errs, index(fields_path, i), raw_req)


def _requirement(errs: FieldErrors, path: str, raw: object) -> tuple[object, object, list[Any]]:
    req = as_mapping(errs, path, raw, ("key", "operator", "values"))
    return req.get("key"), req.get("operator"), as_list(errs, child(path, "values"), req.get("values"))


def _validate_label_requirement(errs: FieldErrors, path: str, raw: object) -> None:
    key, op, values = _requirement(errs, path, raw)
    if not isinstance(key, str) or not key:
        errs.required(child(path, "key"))
    else:
        _validate_label_name(errs, child(path, "key"), key)
    values_path = child(path, "values")
    if op in _SET_OPERATORS:
        if not values:
            errs.required(values_path, "must be specified when `operator` is 'In' or 'NotIn'")
    elif op in _EXISTS_OPERATORS:
        if values:
            errs.forbidden(values_path, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif op in _NUMERIC_OPERATORS:
        if len(values) != 1:
            errs.required(values_path, "must be specified single value when `operator` is 'Lt' or 'Gt'")
        elif not _is_integer_text(values[0]):
            errs.invalid(index(values_path, 0), values[0], "must be an integer")
    else:
        errs.invalid(child(path, "operator"), op, "not a valid selector operator")
    for i, v in enumerate(values):
        if not isinstance(v, str):
            errs.invalid(index(values_path, i), v, "must be a string")


def _validate_field_requirement(errs: FieldErrors, path: str, raw: object) -> None:
    key, op, values = _requirement(errs, path, raw)
    if key != "metadata.name":
        errs.invalid(child(path, "key"), key, "not a valid field selector key")
    if op not in _SET_OPERATORS:
        errs.invalid(child(path, "operator"), op, "not a valid selector operator")
    elif len(values) != 1:
        errs.required(
            child(path, "values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )


def _is_integer_text(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        int(value, 10)
    except ValueError:
        return False
    return True
