"""Spread constraints compiled once per pod, and the node/pod predicates both phases share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api import LabelSelector, Node, Pod
from scheduler.api.selectors import Requirement
from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, untolerated
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

# Upstream's systemDefaultConstraints (DefaultingType System).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

_HARD_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)


def placed_matches(index: Any, namespace: str, selector: LabelSelector | None) -> Mapping[str, int]:
    """Per node, the placed pods a constraint counts. Upstream counts none for an empty selector
    (``labelSelector: {}``), although the incoming pod still matches itself."""
    if selector is None or selector.is_empty:
        return {}
    return index.count_by_node(namespace, selector)


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``None`` is the API's missing selector, which upstream turns into "matches nothing"."""
    return selector is not None and selector.matches(labels)


@dataclass(slots=True, frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False

    def with_selector(self, selector: LabelSelector) -> SpreadConstraint:
        return SpreadConstraint(
            self.max_skew,
            self.topology_key,
            selector,
            self.min_domains,
            self.honor_node_affinity,
            self.honor_node_taints,
        )

    def includes_node(self, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
        """nodeAffinityPolicy / nodeTaintsPolicy: does ``node`` count as a domain member for ``pod``?"""
        if self.honor_node_affinity and not required.matches(node):
            return False
        return not (self.honor_node_taints and untolerated(node.taints, pod.tolerations, _HARD_EFFECTS))


def _merge_match_label_keys(
    selector: LabelSelector | None, keys: Sequence[str], pod_labels: Mapping[str, str]
) -> LabelSelector | None:
    """matchLabelKeys add ``key In (pod's value)`` for every key the pod carries. A missing
    selector stays missing: upstream's merge keeps a "matches nothing" selector as it is."""
    extra = tuple(Requirement(key, "In", frozenset({pod_labels[key]})) for key in keys if key in pod_labels)
    if not extra or selector is None:
        return selector
    return LabelSelector(extra + selector.requirements)


def parse_constraints(
    raw: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[SpreadConstraint]:
    """The constraints with ``whenUnsatisfiable == action`` (one without it is neither kind);
    raises SelectorError on a bad selector."""
    result = []
    for c in raw:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = LabelSelector.parse(c.get("labelSelector"))
        selector = _merge_match_label_keys(selector, c.get("matchLabelKeys") or (), pod_labels)
        min_domains = c.get("minDomains")
        result.append(
            SpreadConstraint(
                max_skew=int(c.get("maxSkew") or 1),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                honor_node_affinity=(c.get("nodeAffinityPolicy") or HONOR) == HONOR,
                honor_node_taints=(c.get("nodeTaintsPolicy") or IGNORE) == HONOR,
            )
        )
    return result


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)
