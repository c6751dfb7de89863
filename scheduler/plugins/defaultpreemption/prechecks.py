"""Cheap answers that let the dry run skip work without changing what it finds.

A dry run per node clones the node and the cycle state and runs every filter once per
lower-priority pod. Two facts, each read from the profile once per preemption, make most of that
unnecessary when they hold:

- a node whose lower-priority pods, all gone, would still leave too little CPU, memory,
  ephemeral storage or pod room for the preemptor, once the pods nominated there that it must
  respect are counted, fails NodeResourcesFit in the dry run whatever else happens (the dry run
  adds those nominated pods before it runs the filters), so it is no candidate;
- when no PreFilter extension (AddPod/RemovePod) is active for the pod, the dry run never writes
  to the cycle state, so it needs no copy of it and no extension calls;
- when every active filter but NodeResourcesFit reads only the Node object (NodeUnschedulable,
  NodeName, TaintToleration, NodeAffinity) and no nominated pod must be respected on the node,
  the filters passed once on the node are decided again, as each victim is added back, by
  NodeResourcesFit alone (its yes/no, without the wording of its reasons);
- a node without any lower-priority pod has no victims (checked before anything is copied).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scheduler.api import Pod
from scheduler.framework import CycleState, NodeInfo, PluginsRunner, PreFilterExtensions
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.noderesources import Fit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration

# In-tree filters whose verdict depends on the Node object alone, never on the pods placed on it.
_NODE_ONLY = (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity)


def _active(plugins: Any, state: CycleState) -> list[Any]:
    return [p for p in plugins if p.name not in state.skip_filter_plugins]


def extensions_active(runner: PluginsRunner, state: CycleState) -> bool:
    """Would the runner call some AddPod/RemovePod extension for this cycle?"""
    return any(isinstance(p, PreFilterExtensions) for p in _active(runner.pre_filter_plugins, state))


def hopeless_check(
    runner: PluginsRunner,
    state: CycleState,
    pod: Pod,
    nominated_for: Callable[[str], Sequence[Pod]] | None = None,
) -> Callable[[NodeInfo], bool] | None:
    """A test for "no victims here can make room for ``pod``", or None when the profile's filters
    give no such guarantee (NodeResourcesFit is not among the active filters).

    With ``nominated_for`` (the handle's nominated pods per node, the ones the dry run's filters
    add), the room those the pod must respect would take is counted as taken: a node holding a
    preemptor's nomination is then hopeless for the next preemptor without a dry run.
    """
    if not any(isinstance(p, Fit) for p in _active(runner.filter_plugins, state)):
        return None
    want = pod.requests
    priority = pod.priority

    def hopeless(info: NodeInfo) -> bool:
        lower = [other.requests for other in info.pods.values() if other.priority < priority]
        if not lower:
            return True  # nothing to evict (the common case on nodes of important pods: kept cheap)
        held = _respected(pod, info, nominated_for) if nominated_for is not None else ()
        alloc, used = info.node.allocatable, info.requested
        if len(info.pods) - len(lower) + len(held) + 1 > alloc.allowed_pod_number:
            return True
        cpu = memory = storage = 0
        for r in lower:
            cpu += r.milli_cpu
            memory += r.memory
            storage += r.ephemeral_storage
        for other in held:
            cpu -= other.requests.milli_cpu
            memory -= other.requests.memory
            storage -= other.requests.ephemeral_storage
        # NodeResourcesFit checks a resource only when the pod asks for some of it
        room = (
            (want.milli_cpu, alloc.milli_cpu - used.milli_cpu + cpu),
            (want.memory, alloc.memory - used.memory + memory),
            (want.ephemeral_storage, alloc.ephemeral_storage - used.ephemeral_storage + storage),
        )
        return any(wanted > 0 and wanted > free for wanted, free in room)

    return hopeless


def _respected(pod: Pod, info: NodeInfo, nominated_for: Callable[[str], Sequence[Pod]]) -> list[Pod]:
    """The nominated pods the dry run adds to ``info`` before filtering, when adding them only
    adds their requests: none are counted if one is already on the node (adding it replaces it)."""
    held = [
        other for other in nominated_for(info.name) if other.priority >= pod.priority and other.uid != pod.uid
    ]
    if any(other.uid in info.pods for other in held):
        return []
    return held


def fit_only_refilter(
    runner: PluginsRunner, state: CycleState, pod: Pod
) -> Callable[[NodeInfo], bool] | None:
    """NodeResourcesFit's verdict on a node as a plain yes/no, when Fit is the only active filter
    whose verdict depends on the pods (None otherwise).

    It is Fit's own test (``insufficient`` finding no reason) without building the reasons: the
    dry run's re-checks only ask whether the pod still fits.
    """
    fit = None
    for plugin in _active(runner.filter_plugins, state):
        if isinstance(plugin, Fit):
            fit = plugin
        elif not isinstance(plugin, _NODE_ONLY):
            return None
    if fit is None:
        return None
    request = fit.request_of(state, pod)
    want = request.requests
    checked = [
        (attr, amount)
        for attr, amount in (
            ("milli_cpu", want.milli_cpu),
            ("memory", want.memory),
            ("ephemeral_storage", want.ephemeral_storage),
        )
        if amount > 0
    ]
    scalars = request.scalars

    def fits(info: NodeInfo) -> bool:
        alloc, used = info.node.allocatable, info.requested
        if len(info.pods) + 1 > alloc.allowed_pod_number:
            return False
        for attr, amount in checked:
            if amount > getattr(alloc, attr) - getattr(used, attr):
                return False
        return all(amount <= alloc.scalar.get(name, 0) - used.scalar.get(name, 0) for name, amount in scalars)

    return fits


def respects_nominated(pod: Pod, nominated: Sequence[Pod]) -> bool:
    """Must ``pod`` leave room for some of ``nominated`` (equal or higher priority, not itself)?"""
    return any(other.priority >= pod.priority and other.uid != pod.uid for other in nominated)
