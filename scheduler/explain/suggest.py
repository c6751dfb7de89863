"""The smallest changes that would let a pod fit, where they can be computed.

Each resource or taint suggestion is checked by running the real filters again for a changed copy
of the pod (less of one resource, one more toleration): the node count it states is what the
framework then finds feasible, not an estimate. Label and pod-affinity suggestions say which
selector nothing in the cluster satisfies.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api import NodeSelectorTerm, Pod, Resource, SelectorError, Taint, Toleration
from scheduler.api.resources import CPU, MEMORY
from scheduler.explain.filtering import filter_every_node
from scheduler.explain.model import Explanation, NodeVerdict
from scheduler.framework import NodeLister
from scheduler.plugins import names
from scheduler.plugins.dynamicresources import CANNOT_ALLOCATE, DynamicResources
from scheduler.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from scheduler.plugins.interpodaffinity.terms import parse_pod_terms
from scheduler.runtime import Framework
from scheduler.schedule_one import Scheduler

INSUFFICIENT = "Insufficient "
HARD_EFFECTS = ("NoSchedule", "NoExecute")
TAINT_TRIALS = 8  # distinct taints tried at most, the most common first


async def suggest(
    scheduler: Scheduler, fwk: Framework, pod: Pod, snapshot: NodeLister, explanation: Explanation
) -> list[str]:
    """What would help ``pod``, from the verdicts in ``explanation``, one sentence each."""
    feasible_now = len(explanation.scores)
    by_plugin: dict[str, list[NodeVerdict]] = {}
    for verdict in explanation.rejected:
        by_plugin.setdefault(verdict.plugin, []).append(verdict)
    found = await _resources(
        scheduler, fwk, pod, snapshot, by_plugin.get(names.NODE_RESOURCES_FIT, []), feasible_now
    )
    found += await _taints(
        scheduler, fwk, pod, snapshot, by_plugin.get(names.TAINT_TOLERATION, []), feasible_now
    )
    if names.NODE_AFFINITY in by_plugin:
        found += _labels(pod, snapshot)
    if names.INTER_POD_AFFINITY in by_plugin:
        found += _pod_affinity(pod, snapshot, by_plugin[names.INTER_POD_AFFINITY])
    if names.DYNAMIC_RESOURCES in by_plugin:
        found += await _devices(scheduler, fwk, pod, snapshot, by_plugin[names.DYNAMIC_RESOURCES])
    return found


async def _fits(scheduler: Scheduler, fwk: Framework, trial: Pod, snapshot: NodeLister) -> int:
    result = await filter_every_node(scheduler, fwk, trial, snapshot)
    return 0 if result.error is not None else len(result.feasible)


# ---------------------------------------------------------------------- resources


async def _resources(
    scheduler: Scheduler,
    fwk: Framework,
    pod: Pod,
    snapshot: NodeLister,
    verdicts: Sequence[NodeVerdict],
    feasible_now: int,
) -> list[str]:
    """Per insufficient resource: the most any rejecting node has free, and how many nodes the
    pod fits with no more than that."""
    short: dict[str, list[str]] = {}
    for verdict in verdicts:
        for reason in verdict.reasons:
            if reason.startswith(INSUFFICIENT):
                short.setdefault(reason[len(INSUFFICIENT) :], []).append(verdict.node)
    found = []
    for resource, nodes in short.items():
        free = [_free(snapshot, node, resource) for node in nodes]
        most = max(free, default=0)
        if most <= 0 or most >= pod.requests.get(resource):
            continue
        requests = _copy(pod.requests)
        requests.set(resource, most)
        fits = await _fits(scheduler, fwk, dataclasses.replace(pod, requests=requests), snapshot)
        if fits > feasible_now:
            found.append(f"fits {fits} node(s) with {resource} <= {_amount(resource, most)}")
    return found


def _free(snapshot: NodeLister, node: str, resource: str) -> int:
    info = snapshot.get(node)
    if info is None:
        return 0
    return info.node.allocatable.get(resource) - info.requested.get(resource)


def _copy(resource: Resource) -> Resource:
    return dataclasses.replace(resource, scalar=dict(resource.scalar))


def _amount(resource: str, value: int) -> str:
    """Millicores for cpu, binary units for memory, plain numbers otherwise."""
    if resource == CPU:
        return f"{value}m" if value % 1000 else str(value // 1000)
    if resource == MEMORY or resource.startswith(("ephemeral-storage", "hugepages-")):
        for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size:
                return f"{value // size}{unit}"  # rounded down: still fits
    return str(value)


# ---------------------------------------------------------------------- devices


async def _devices(
    scheduler: Scheduler, fwk: Framework, pod: Pod, snapshot: NodeLister, verdicts: Sequence[NodeVerdict]
) -> list[str]:
    """Per shortage of devices (a counter or a capacity that ran out, devices held by others):
    the nodes DynamicResources rejected for it. No trial: what would help is freeing them."""
    plugin = fwk.plugins.get(names.DYNAMIC_RESOURCES)
    rejected = [v.node for v in verdicts if CANNOT_ALLOCATE in v.reasons]
    if not isinstance(plugin, DynamicResources) or not rejected:
        return []
    state = (await filter_every_node(scheduler, fwk, pod, snapshot)).state
    nodes: dict[str, list[str]] = {}
    for node in rejected:
        info = snapshot.get(node)
        for shortage in plugin.shortages(state, pod, info) if info is not None else ():
            nodes.setdefault(shortage, []).append(node)
    return [f"devices on {_nodes(names_)}: {shortage}" for shortage, names_ in nodes.items()]


def _nodes(names_: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(names_) - shown} more" if len(names_) > shown else ""
    return ", ".join(names_[:shown]) + more


# ---------------------------------------------------------------------- taints


async def _taints(
    scheduler: Scheduler,
    fwk: Framework,
    pod: Pod,
    snapshot: NodeLister,
    verdicts: Sequence[NodeVerdict],
    feasible_now: int,
) -> list[str]:
    """One suggestion per distinct untolerated NoSchedule/NoExecute taint of the rejecting nodes
    whose toleration alone lets the pod fit somewhere; the ``TAINT_TRIALS`` taints on most nodes
    are tried (each trial filters every node again)."""
    taints: Counter[Taint] = Counter()
    for verdict in verdicts:
        info = snapshot.get(verdict.node)
        for taint in info.node.taints if info is not None else ():
            if taint.effect in HARD_EFFECTS and not any(t.tolerates(taint) for t in pod.tolerations):
                taints[taint] += 1
    found = []
    for taint, _ in taints.most_common(TAINT_TRIALS):
        operator = "Equal" if taint.value else "Exists"
        toleration = Toleration(taint.key, operator, taint.value, taint.effect)
        trial = dataclasses.replace(pod, tolerations=(*pod.tolerations, toleration))
        fits = await _fits(scheduler, fwk, trial, snapshot)
        if fits > feasible_now:  # a toleration that opens no node alone is no help
            shown = (
                f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"
            )
            found.append(f"needs a toleration for {shown} (it then fits {fits} node(s))")
    return found


# ---------------------------------------------------------------------- node labels


def _labels(pod: Pod, snapshot: NodeLister) -> list[str]:
    """The nodeSelector pairs and required node-affinity expressions no node satisfies."""
    nodes = [info.node for info in snapshot.node_infos()]
    found = []
    for key, value in pod.node_selector.items():
        having = sum(1 for node in nodes if node.labels.get(key) == value)
        if having == 0:
            found.append(f"no node has label {key}={value}")
        else:
            found.append(f"only {having} node(s) have label {key}={value}")
    required = (
        ((pod.affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    ) or {}
    for raw in required.get("nodeSelectorTerms") or ():
        try:
            term = NodeSelectorTerm.parse(raw)
        except SelectorError:
            continue  # PreFilter reported it
        for requirement, expression in zip(term.expressions, raw.get("matchExpressions") or (), strict=False):
            if not any(requirement.matches(node.labels) for node in nodes):
                found.append(f"no node matches node affinity {_expression(expression)}")
    return found


def _expression(expression: Mapping[str, Any]) -> str:
    values = ",".join(str(v) for v in expression.get("values") or ())
    operator = expression.get("operator", "")
    return (
        f"{expression.get('key')} {operator} ({values})" if values else f"{expression.get('key')} {operator}"
    )


# ---------------------------------------------------------------------- pod affinity


def _pod_affinity(pod: Pod, snapshot: NodeLister, verdicts: Sequence[NodeVerdict]) -> list[str]:
    """Required affinity terms no running pod matches; how many nodes anti-affinity excludes."""
    try:
        terms = parse_pod_terms(pod)
    except SelectorError:
        return []
    raw = (pod.affinity or {}).get("podAffinity") or {}
    raw_terms = raw.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    reasons = [reason for verdict in verdicts for reason in verdict.reasons]
    found = []
    if ERR_REASON_AFFINITY_RULES_NOT_MATCH in reasons:
        running = [other for info in snapshot.node_infos() for other in info.pods.values()]
        for term, raw_term in zip(terms.required_affinity, raw_terms, strict=False):
            if term.namespace_selector is not None:
                continue  # needs the namespaces' labels: not simple
            if not any(term.matches(other, {}) for other in running):
                found.append(
                    f"no running pod matches pod affinity {_selector(raw_term.get('labelSelector'))} "
                    f"in namespace(s) {','.join(sorted(term.namespaces))}"
                )
    anti = reasons.count(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if anti:
        raw_anti = ((pod.affinity or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or ()
        shown = "; ".join(f"{_selector(t.get('labelSelector'))} per {t.get('topologyKey')}" for t in raw_anti)
        found.append(f"pod anti-affinity ({shown}) excludes {anti} node(s): pods it repels run there")
    return found


def _selector(selector: Mapping[str, Any] | None) -> str:
    if not selector:
        return "(nothing)"
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    parts += [_expression(e) for e in selector.get("matchExpressions") or ()]
    return ",".join(parts) or "(everything)"
