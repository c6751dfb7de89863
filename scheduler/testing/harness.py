"""Run one plugin, or a whole profile, on a synthetic cluster and look at what it decided.

What plugin authors write their table tests with::

    from scheduler.testing import make_node, make_pod, run_plugin

    outcome = run_plugin(CostByLabel, nodes=[make_node("spot", labels={"lifecycle": "spot"}),
                                             make_node("od")], pod=make_pod("p"))
    assert outcome.scores == {"spot": 100, "od": 0}

``run_plugin`` drives the plugin's own extension points as the framework would (PreFilter,
Filter on every node, PreScore, Score, NormalizeScore) and checks that its per-node and batch
forms agree; ``run_permit`` runs its Permit and, when it says Wait, holds the pod in
``handle.waiting_pods`` on the handle's clock, as the framework does; ``run_profile`` runs a
whole profile (a ``KubeSchedulerConfiguration`` profile, the defaults by default) through the
real framework and the scheduler's search, up to the choice of a node, without any API server.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.api import Node, Pod
from scheduler.config import SchedulerConfiguration, default_config
from scheduler.framework import (
    BatchFilterPlugin,
    BatchScorePlugin,
    Code,
    CycleState,
    FilterPlugin,
    PluginFactory,
    PreFilterPlugin,
    PreScorePlugin,
    ScoreNormalizer,
    ScorePlugin,
    Status,
    WaitingPod,
)
from scheduler.testing.builders import FakeHandle, expand_verdicts, table_of


@dataclass(slots=True)
class PluginOutcome:
    """What one plugin said about each node (node name -> ...)."""

    pre_filter: Status | None = None  # its PreFilter status (None: passed or no PreFilter)
    narrowed_to: frozenset[str] | None = None  # the nodes its PreFilterResult kept (None: all)
    filters: dict[str, Status | None] = field(default_factory=dict)  # None: the node passes
    raw_scores: dict[str, int] = field(default_factory=dict)  # before NormalizeScore
    scores: dict[str, int] = field(default_factory=dict)  # after NormalizeScore
    pre_score: Status | None = None

    @property
    def feasible(self) -> list[str]:
        return [name for name, status in self.filters.items() if status is None]


def run_plugin(
    plugin: Any,
    *,
    nodes: Sequence[Node],
    pod: Pod,
    pods: Iterable[Pod] = (),
    args: Any = None,
    handle: FakeHandle | None = None,
) -> PluginOutcome:
    """Run ``plugin`` (a plugin class, built with ``args``, or an instance) for ``pod`` on
    ``nodes`` holding ``pods`` (placed by their ``node_name``)."""
    cluster = table_of(nodes, pods)
    handle = handle or FakeHandle(cluster)
    instance = plugin(args, handle) if isinstance(plugin, type) else plugin
    state = CycleState()
    outcome = PluginOutcome()
    names = [info.name for info in cluster.infos]
    if isinstance(instance, PreFilterPlugin):
        result, status = instance.pre_filter(state, pod, handle.snapshot)
        if status is not None and status.is_skip:
            state.skip_filter_plugins.add(instance.name)
        else:
            outcome.pre_filter = status
        if result is not None and result.node_names is not None:
            outcome.narrowed_to = result.node_names
        if status is not None and status.is_rejected:
            return outcome
    if isinstance(instance, FilterPlugin) and instance.name not in state.skip_filter_plugins:
        per_node = [instance.filter(state, pod, info) for info in cluster.infos]
        if isinstance(instance, BatchFilterPlugin):
            batch = expand_verdicts(
                instance.filter_nodes(state, pod, cluster.table, cluster.slots), len(names)
            )
            if [_verdict(s) for s in batch] != [_verdict(s) for s in per_node]:
                raise AssertionError(f"{instance.name}: batch filter {batch} != per-node filter {per_node}")
        outcome.filters = dict(zip(names, per_node, strict=True))
    else:
        outcome.filters = dict.fromkeys(names)
    feasible = [info for info in cluster.infos if outcome.filters[info.name] is None]
    if not isinstance(instance, ScorePlugin) or not feasible:
        return outcome
    if isinstance(instance, PreScorePlugin):
        outcome.pre_score = instance.pre_score(state, pod, feasible)
        if outcome.pre_score is not None and outcome.pre_score.is_skip:
            return outcome
    raw = np.array([int(instance.score(state, pod, info)) for info in feasible], dtype=np.int64)
    if isinstance(instance, BatchScorePlugin):
        slots = np.array([info.slot for info in feasible], dtype=np.int64)
        batch_scores = instance.score_nodes(state, pod, cluster.table, slots)
        if batch_scores.tolist() != raw.tolist():
            raise AssertionError(f"{instance.name}: batch scores {batch_scores} != per-node scores {raw}")
    outcome.raw_scores = {info.name: int(score) for info, score in zip(feasible, raw, strict=True)}
    scores = raw.copy()
    if isinstance(instance, ScoreNormalizer):
        instance.normalize_scores(state, pod, scores)
    outcome.scores = {info.name: int(score) for info, score in zip(feasible, scores, strict=True)}
    return outcome


def _verdict(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, status.reasons)


@dataclass(slots=True)
class PermitOutcome:
    """What a Permit plugin said, and, when it said Wait, the pod it holds."""

    status: Status | None
    timeout: float
    waiting: WaitingPod | None = None  # in handle.waiting_pods until allowed, rejected or timed out
    # the end of the wait: None when allowed, the rejection (or timeout) Status otherwise
    ended: asyncio.Future[Status | None] | None = None

    @property
    def is_waiting(self) -> bool:
        return self.ended is not None and not self.ended.done()


def run_permit(
    plugin: Any,
    *,
    pod: Pod,
    node_name: str = "node",
    handle: FakeHandle | None = None,
    args: Any = None,
    state: CycleState | None = None,
) -> PermitOutcome:
    """Run the Permit of ``plugin`` (a class, built with ``args``, or an instance) for ``pod`` on
    ``node_name``. A Wait registers the pod in ``handle.waiting_pods`` with the plugin's timeout
    on ``handle.clock`` (a FakeClock: ``await handle.clock.advance(s)`` moves it), as the
    framework does; the plugin (or the test) then ``allow``s or ``reject``s it. Needs a running
    event loop (an async test)."""
    from scheduler.runtime.framework import MAX_PERMIT_WAIT
    from scheduler.runtime.waiting import WaitingPod as HeldPod
    from scheduler.runtime.waiting import WaitingPodMap

    handle = handle or FakeHandle()
    instance = plugin(args, handle) if isinstance(plugin, type) else plugin
    status, timeout = instance.permit(state or CycleState(), pod, node_name)
    if status is None or status.code != Code.WAIT:
        return PermitOutcome(status, timeout)
    pods = handle.waiting_pods
    if not isinstance(pods, WaitingPodMap):
        raise TypeError("run_permit needs the FakeHandle's own waiting pods (or an attached Framework's)")
    held = HeldPod(pod, node_name, {instance.name: min(timeout, MAX_PERMIT_WAIT)}, handle.clock)
    pods.add(held)

    async def wait() -> Status | None:
        try:
            return await held.wait()
        finally:
            pods.pop(pod.uid)

    return PermitOutcome(status, timeout, held, asyncio.ensure_future(wait()))


@dataclass(slots=True)
class ProfileOutcome:
    """A profile's decision for one pod."""

    node: str  # the chosen node, "" when none fits
    feasible: list[str]
    rejected: dict[str, Status]  # per node, the first Filter that rejected it
    scores: dict[str, int]  # weighted totals of the feasible nodes that were scored
    message: str  # upstream's FailedScheduling message when nothing fits ("" otherwise)
    error: Status | None = None


def run_profile(
    *,
    nodes: Sequence[Node],
    pod: Pod,
    pods: Iterable[Pod] = (),
    config: SchedulerConfiguration | None = None,
    registry: Mapping[str, PluginFactory] | None = None,
    seed: int = 0,
    listers: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
) -> ProfileOutcome:
    """The first profile of ``config`` (upstream's defaults when None) deciding where ``pod`` goes
    on ``nodes`` holding ``pods``; ``registry`` adds (or replaces) plugins of the in-tree ones;
    ``listers`` holds the plain API objects of other kinds (``{"resourceclaims": [...]}``)."""
    # imported here: the harness of a single plugin needs none of the scheduler's machinery
    from scheduler.build import DiscardEvents, DiscardStatus, build_scheduler
    from scheduler.plugins.registry import in_tree_registry
    from scheduler.policy import available_plugins
    from scheduler.schedule_one import FitError, ScheduleResult, find_nodes_that_pass_filters, run_now
    from scheduler.testing.builders import FakeClient, FakeLister

    config = config or default_config()
    plugins = {**in_tree_registry(), **(registry or {})}
    available_plugins(config, plugins)
    parts = build_scheduler(
        config,
        plugins,
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
        listers={kind: FakeLister(objects) for kind, objects in (listers or {}).items()},
        rng=random.Random(seed),
    )
    for node in nodes:
        parts.cache.add_node(node)
    for placed in pods:
        parts.cache.add_pod(placed)
    fwk = parts.frameworks[config.profiles[0].scheduler_name]
    snapshot = parts.cache.snapshot()
    state = CycleState()
    _, pre_status, _ = fwk.run_pre_filter(state, pod, snapshot)
    decision = run_now(parts.scheduler.schedule_pod(fwk, CycleState(), pod))
    search = find_nodes_that_pass_filters(fwk, state, pod, snapshot, snapshot.order, {})
    table = snapshot.table
    feasible = [table.info(int(slot)).name for slot in search.feasible]
    rejected = {}
    diagnosis = search.rejections.to_diagnosis(table)
    rejected.update(diagnosis.node_to_status)
    scores: dict[str, int] = {}
    if pre_status is None and len(search.feasible) > 1:
        totals, _ = fwk.run_scoring(state, pod, table, search.feasible)
        scores = {name: int(total) for name, total in zip(feasible, totals.tolist(), strict=True)}
    if isinstance(decision, Status):
        return ProfileOutcome("", feasible, rejected, scores, "", decision)
    if isinstance(decision, FitError):
        return ProfileOutcome("", feasible, rejected, scores, decision.message())
    assert isinstance(decision, ScheduleResult)
    return ProfileOutcome(decision.node_name, feasible, rejected, scores, "")
