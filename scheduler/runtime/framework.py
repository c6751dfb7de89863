"""One profile's plugins, and the runners for every extension point.

The scheduling cycle (schedule_one.py) calls these in order; the search for feasible nodes and
the choice of a host live there. Every runner reports with a Status (None is success): a plugin's
error, whether returned or raised, becomes an Error status worded as upstream's wrapped errors.
Filter and Score run over a numpy vector of node slots: batch plugins evaluate all candidates at
once, per-node plugins are called node by node.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import orjson

from scheduler import logs
from scheduler.api import Pod
from scheduler.config import Plugins, Profile
from scheduler.features import DEFAULT_FEATURES, OPPORTUNISTIC_BATCHING, FeatureGates
from scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Handle,
    NodeInfo,
    NodeLister,
    NodeTable,
    NodeVerdicts,
    PluginFactory,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    Status,
    signers,
)
from scheduler.framework.clock import REAL_CLOCK, Clock
from scheduler.framework.interface import (
    WILDCARD,
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    GangPlugin,
    PreBindPreFlightPlugin,
    PreFilterExtensions,
    ScoreNormalizer,
    SignPlugin,
)
from scheduler.runtime.batch import OpportunisticBatch
from scheduler.runtime.nominated import NominatedViews
from scheduler.runtime.waiting import WaitingPod, WaitingPodMap

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)
# the -v=10 score trace has its own logger, so tools can collect it without the rest
score_log = logging.getLogger("scheduler.scores")

# extension point (config attribute) -> the method a plugin defines to take part in it
EXTENSION_METHODS: dict[str, str] = {
    "pre_enqueue": "pre_enqueue",
    "queue_sort": "sort_key",
    "pre_filter": "pre_filter",
    "filter": "filter",
    "post_filter": "post_filter",
    "pre_score": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "pre_bind": "pre_bind",
    "bind": "bind",
    "post_bind": "post_bind",
}

_ANY_EVENT = ClusterEventWithHint(ClusterEvent(WILDCARD, ActionType.ALL))

# the plugin name recorded for a pod when extenders filtered nodes out (upstream's ExtenderName)
EXTENDER_NAME = "Extender"


MAX_PERMIT_WAIT = 15 * 60.0  # seconds; longer Permit timeouts are cut to this, as upstream


class FrameworkError(ValueError):
    """A profile that cannot be built (unknown plugin, plugin at a point it does not implement...)."""


def _build(name: str, factory: PluginFactory, profile: Profile, handle: Handle) -> Any:
    """The plugin, or a FrameworkError naming it and its pluginConfig entry when it cannot be built."""
    try:
        return factory(profile.plugin_config.get(name), handle)
    except Exception as exc:  # any constructor bug is a configuration problem, not a crash
        entries = list(profile.plugin_config)
        where = (
            f"pluginConfig[{entries.index(name)}] ({name})" if name in entries else "no pluginConfig entry"
        )
        raise FrameworkError(f"plugin {name!r} could not be built from {where}: {exc}") from exc


def _implements(plugin: Any, point: str) -> bool:
    return callable(getattr(plugin, EXTENSION_METHODS[point], None))


def _expand(plugins: Plugins, instance: Callable[[str], Any]) -> dict[str, list[tuple[str, int]]]:
    """Per extension point, the (plugin name, weight) list: multiPoint expanded as upstream does.

    Order: plugins named both in multiPoint and explicitly at the point (in the explicit order),
    then the other multiPoint plugins, then the remaining explicit ones. Explicit weights win.
    """
    result: dict[str, list[tuple[str, int]]] = {}
    multi = plugins.multi_point.enabled
    for point in EXTENSION_METHODS:
        plugin_set = getattr(plugins, point)
        disabled = {p.name for p in plugin_set.disabled}
        explicit = {p.name: p for p in plugin_set.enabled}
        for name in explicit:
            if not _implements(instance(name), point):
                raise FrameworkError(f"plugin {name!r} does not implement the {point} extension point")
        from_multi: list[tuple[str, int]] = []
        if "*" not in disabled:
            for ref in multi:
                if ref.name in disabled or not _implements(instance(ref.name), point):
                    continue
                if ref.name in explicit:
                    continue
                from_multi.append((ref.name, ref.weight or 1))
        multi_names = {ref.name for ref in multi}
        overrides = [(p.name, p.weight or 1) for p in plugin_set.enabled if p.name in multi_names]
        rest = [(p.name, p.weight or 1) for p in plugin_set.enabled if p.name not in multi_names]
        result[point] = overrides + from_multi + rest
    return result


_STATUS_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


def status_label(status: Any) -> str:
    """The ``status`` label of upstream's framework metrics (anything but a Status is a success)."""
    return _STATUS_LABELS[status.code] if isinstance(status, Status) else "Success"


Runner = TypeVar("Runner", bound=Callable[..., Any])


def _extension_point(
    name: str, status_of: Callable[[Any], Status | None] = lambda result: result
) -> Callable[[Runner], Runner]:
    """Time a runner as scheduler_framework_extension_point_duration_seconds{extension_point=name}
    when the framework has metrics; an exception is recorded as ``Error``. The runner keeps its
    signature."""

    def decorate(method: Runner) -> Runner:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def timed_async(self: Framework, *args: Any, **kwargs: Any) -> Any:
                if self.metrics is None:
                    return await method(self, *args, **kwargs)
                start, label = perf_counter(), "Error"
                try:
                    result = await method(self, *args, **kwargs)
                    label = status_label(status_of(result))
                    return result
                finally:
                    self.metrics.observe_extension_point(
                        name, label, self.profile_name, perf_counter() - start
                    )

            return cast(Runner, timed_async)

        @functools.wraps(method)
        def timed(self: Framework, *args: Any, **kwargs: Any) -> Any:
            if self.metrics is None:
                return method(self, *args, **kwargs)
            start, label = perf_counter(), "Error"
            try:
                result = method(self, *args, **kwargs)
                label = status_label(status_of(result))
                return result
            finally:
                self.metrics.observe_extension_point(name, label, self.profile_name, perf_counter() - start)

        return cast(Runner, timed)

    return decorate


class Framework:
    """The plugins of one profile, ready to run."""

    def __init__(
        self,
        profile: Profile,
        registry: Mapping[str, PluginFactory],
        handle: Handle,
        *,
        percentage_of_nodes_to_score: int | None = None,
        clock: Clock = REAL_CLOCK,
        metrics: SchedulerMetrics | None = None,
        features: FeatureGates = DEFAULT_FEATURES,
    ) -> None:
        self.profile_name = profile.scheduler_name
        self.clock = clock
        self.handle = handle
        # None in tests and tools: extension points are then not timed
        self.metrics = metrics
        self.percentage_of_nodes_to_score = (
            profile.percentage_of_nodes_to_score
            if profile.percentage_of_nodes_to_score is not None
            else percentage_of_nodes_to_score
        )
        self.plugins: dict[str, Any] = {}

        def instance(name: str) -> Any:
            if name not in self.plugins:
                factory = registry.get(name)
                if factory is None:
                    raise FrameworkError(f"plugin {name!r} is not registered (profile {self.profile_name!r})")
                self.plugins[name] = _build(name, factory, profile, handle)
            return self.plugins[name]

        points = _expand(profile.plugins, instance)

        def at(point: str) -> list[Any]:
            return [self.plugins[name] for name, _ in points[point]]

        self.pre_enqueue_plugins = at("pre_enqueue")
        queue_sort = at("queue_sort")
        if len(queue_sort) != 1:
            raise FrameworkError(f"exactly one queueSort plugin must be enabled, found {len(queue_sort)}")
        self.queue_sort = queue_sort[0]
        self.pre_filter_plugins = at("pre_filter")
        self.filter_plugins = at("filter")
        self.post_filter_plugins = at("post_filter")
        self.pre_score_plugins = at("pre_score")
        self.score_plugins = [(self.plugins[name], weight) for name, weight in points["score"]]
        self.reserve_plugins = at("reserve")
        self.permit_plugins = at("permit")
        self.pre_bind_plugins = at("pre_bind")
        self.bind_plugins = at("bind")
        if not self.bind_plugins:
            raise FrameworkError("at least one bind plugin must be enabled")
        self.post_bind_plugins = at("post_bind")
        self.waiting_pods = WaitingPodMap()
        # What each plugin can do, checked once here: Protocol isinstance checks are too slow
        # for every cycle.
        self._batch_filters = {p.name for p in self.filter_plugins if isinstance(p, BatchFilterPlugin)}
        self._batch_scores = {p.name for p, _ in self.score_plugins if isinstance(p, BatchScorePlugin)}
        self._normalizers = {p.name for p, _ in self.score_plugins if isinstance(p, ScoreNormalizer)}
        self._extensions = [p for p in self.pre_filter_plugins if isinstance(p, PreFilterExtensions)]
        # nodes with the nominated pods added, kept for the next cycle's search
        self.nominated_views = NominatedViews()
        self._pre_flights = {p.name for p in self.pre_bind_plugins if isinstance(p, PreBindPreFlightPlugin)}
        self._gang_plugins = [p for p in self.plugins.values() if isinstance(p, GangPlugin)]
        self._signers: list[SignPlugin] | None = None
        # OpportunisticBatching: None when the gate is off or a plugin cannot sign pods
        self.batch: OpportunisticBatch | None = None
        if features.enabled(OPPORTUNISTIC_BATCHING):
            self._signers = self._batchable_plugins()
            if self._signers is not None:
                self.batch = OpportunisticBatch(
                    self.profile_name, self.run_filter_plugins, clock=clock, metrics=metrics
                )

    def _batchable_plugins(self) -> list[SignPlugin] | None:
        """The plugins that sign pods, once each; None when one cannot (upstream's rule: every
        PreFilter, Filter, PreScore and Score plugin must) or extenders are configured."""
        if self.handle is not None and self.handle.extenders:
            log.info("batching is off for profile %s: it has extenders", self.profile_name)
            return None
        signers: dict[str, SignPlugin] = {}
        unsigned: list[str] = []
        candidates = [*self.pre_filter_plugins, *self.filter_plugins, *self.pre_score_plugins]
        for plugin in [*candidates, *(p for p, _ in self.score_plugins)]:
            if plugin.name in signers or plugin.name in unsigned:
                continue
            if isinstance(plugin, SignPlugin):
                signers[plugin.name] = plugin
            else:
                unsigned.append(plugin.name)
        if unsigned:
            log.info(
                "batching is off for profile %s: plugins %s do not sign pods",
                self.profile_name,
                ", ".join(unsigned),
            )
            return None
        return list(signers.values())

    # ------------------------------------------------------------------ queue

    def sort_key(self, info: QueuedPodInfo) -> Any:
        return self.queue_sort.sort_key(info)

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        for plugin in self.pre_enqueue_plugins:
            try:
                status = plugin.pre_enqueue(pod)
            except Exception as exc:  # the pod stays gated, as upstream keeps it out on an error
                log.exception("PreEnqueue plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is not None and not status.is_success:
                return plugin.name, status.with_plugin(plugin.name)
        return "", None

    def gang_of(self, pod: Pod) -> tuple[str, str] | None:
        """(the gang plugin's name, the gang's key) when a plugin schedules ``pod`` all or nothing."""
        for plugin in self._gang_plugins:
            key = plugin.gang_of(pod)
            if key:
                return plugin.name, key
        return None

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Cluster events per plugin, for the queue's hints.

        A plugin that does not say which events help its rejected pods gets every event, as
        upstream does, so its pods never wait for the five-minute flush.
        """
        events: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            events[name] = (
                list(plugin.events_to_register()) if isinstance(plugin, EnqueueExtensions) else [_ANY_EVENT]
            )
        if self.handle is not None and self.handle.extenders:
            # extenders cannot say which events help: a pod they rejected retries on any event
            events[EXTENDER_NAME] = [_ANY_EVENT]
        return events

    # ------------------------------------------------------------------ signatures

    @_extension_point("Sign", status_of=lambda result: None)
    def sign_pod(self, state: CycleState, pod: Pod) -> bytes | None:
        """The pod's signature (KEP-5598): equal signatures mean equal Filter and Score answers;
        None when batching is off or a plugin cannot sign this pod."""
        if self._signers is None:
            return None
        # every signature names the profile: pods of different profiles never share a batch
        fragments: dict[str, Any] = {signers.SCHEDULER_NAME: pod.scheduler_name}
        order = self._signers
        for index, plugin in enumerate(order):
            start = perf_counter()
            try:
                parts, status = plugin.sign_pod(pod)
            except Exception as exc:
                log.exception("SignPod failed for plugin %s, pod %s", plugin.name, pod.key)
                parts, status = (), Status.from_error(exc, plugin.name)
            self._observe_plugin(state, plugin, "Sign", status, start)
            if status is not None and not status.is_success:
                if status.code == Code.ERROR:
                    log.error("SignPod failed for plugin %s: %s", plugin.name, status.message())
                # Asked first next time: the answer does not depend on the order, and a plugin
                # that refuses every pod (PodTopologySpread with default constraints) then
                # costs one call per pod, not the whole round.
                order.insert(0, order.pop(index))
                return None
            for fragment in parts:
                fragments[fragment.key] = fragment.value
        try:
            return orjson.dumps(fragments, option=orjson.OPT_SORT_KEYS)
        except TypeError as exc:
            log.error("the signature of pod %s cannot be encoded: %s", pod.key, exc)
            return None

    # ------------------------------------------------------------------ filter

    @_extension_point("PreFilter", status_of=lambda result: result[1])
    def run_pre_filter(
        self, state: CycleState, pod: Pod, snapshot: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        result: PreFilterResult | None = None
        # The last Unschedulable PreFilter is the one reported (the others still run, so that
        # preemption can follow); UnschedulableAndUnresolvable stops at once.
        rejected: Status | None = None
        narrowing: list[str] = []
        for plugin in self.pre_filter_plugins:
            start = perf_counter()
            try:
                plugin_result, status = plugin.pre_filter(state, pod, snapshot)
                self._observe_plugin(state, plugin, "PreFilter", status, start)
            except Exception as exc:  # a plugin bug must not kill the loop
                log.exception("PreFilter plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is not None and status.is_skip:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if status is not None and not status.is_success:
                status = status.with_plugin(plugin.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, {plugin.name}
                if status.code == Code.UNSCHEDULABLE:
                    rejected = status
                    continue
                return None, status.as_error(f"running PreFilter plugin {_quoted(plugin.name)}"), set()
            if plugin_result is not None and plugin_result.node_names is not None:
                narrowing.append(plugin.name)
                result = plugin_result.merge(result) if result else plugin_result
                if not result.node_names:
                    if len(narrowing) == 1:
                        message = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    else:
                        message = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
                    return result, Status.unresolvable(message, plugin=plugin.name), set(narrowing)
        if rejected is not None:
            return None, rejected, {*narrowing, rejected.plugin}
        return result, None, set(narrowing)

    # Filter is timed by the search in schedule_one.py, which runs these over many nodes.

    def filter_plugins_in_play(self, state: CycleState) -> tuple[list[Any], list[Any]]:
        """The filters this cycle runs, split in two: the leading batch ones, which the search
        runs over whole chunks of nodes, and the rest, run node by node."""
        active = [p for p in self.filter_plugins if p.name not in state.skip_filter_plugins]
        first_per_node = next(
            (i for i, p in enumerate(active) if p.name not in self._batch_filters), len(active)
        )
        return active[:first_per_node], active[first_per_node:]

    def run_batch_filter(
        self, plugin: Any, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> NodeVerdicts | Status | None:
        """One batch filter over ``slots``: its verdicts, None when all pass, or an Error status."""
        started = perf_counter()
        try:
            verdict = plugin.filter_nodes(state, pod, table, slots)
        except Exception as exc:
            log.exception("Filter plugin %s failed for pod %s", plugin.name, pod.key)
            return Status.from_error(exc, plugin.name).as_error(_context(_FILTER_ERROR, plugin))
        self._observe_plugin(state, plugin, "Filter", None, started)
        return verdict

    def run_filter_plugins(
        self, state: CycleState, pod: Pod, info: NodeInfo, plugins: Sequence[Any] | None = None
    ) -> Status | None:
        """``plugins`` (default: every active filter) on one node, until the first rejection.

        Called once per node for per-node filters: written as a plain loop, no helper calls.
        """
        if plugins is None:
            plugins = [p for p in self.filter_plugins if p.name not in state.skip_filter_plugins]
        for plugin in plugins:
            try:
                status = plugin.filter(state, pod, info)
            except Exception as exc:
                log.exception("Filter plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is not None and status.code != Code.SUCCESS:
                status = status.with_plugin(plugin.name)
                return status if status.is_rejected else status.as_error(_context(_FILTER_ERROR, plugin))
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, info: NodeInfo
    ) -> Status | None:
        """Every filter on one node, counting the pods nominated there that ``pod`` must not displace.

        Upstream's RunFilterPluginsWithNominatedPods: preemption's dry runs and the nominated-node
        check use it so room freed for a preemptor is not promised twice.
        """
        active = [p for p in self.filter_plugins if p.name not in state.skip_filter_plugins]
        pods = self.handle.nominated_pods_for_node(info.name) if self.handle is not None else ()
        return self.run_filter_plugins_with(state, pod, info, active, nominated_pods_to_respect(pod, pods))

    def run_filter_plugins_with(
        self,
        state: CycleState,
        pod: Pod,
        info: NodeInfo,
        plugins: Sequence[Any],
        nominated: Sequence[Pod],
        views: NominatedViews | None = None,
    ) -> Status | None:
        """Filters with ``nominated`` added first; when they pass, again without them.

        The second pass matters for filters that a nominated pod could help (inter-pod affinity):
        the pod must fit whether or not the nominated pods end up on the node. ``views`` keeps
        the node's copy with them for the next pod (the scheduling cycle's search passes it).
        """
        if not nominated:
            return self.run_filter_plugins(state, pod, info, plugins)
        if self._extensions_in_play(state):
            with_state, with_info = state.clone(), info.clone()
            for other in nominated:
                with_info.add_pod(other)
                status = self.run_pre_filter_extension_add_pod(with_state, pod, other, with_info)
                if status is not None:
                    return status
        else:  # no AddPod extension: the state is the same with or without them
            with_state = state
            with_info = views.of(info, nominated) if views is not None else _with_pods(info, nominated)
        status = self.run_filter_plugins(with_state, pod, with_info, plugins)
        if status is not None:
            return status
        return self.run_filter_plugins(state, pod, info, plugins)

    def _extensions_in_play(self, state: CycleState) -> bool:
        """Whether some PreFilter extension (AddPod/RemovePod) runs in this cycle: without one,
        adding or removing pods on a copy of a node never changes the cycle state."""
        return any(plugin.name not in state.skip_filter_plugins for plugin in self._extensions)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, info: NodeInfo
    ) -> Status | None:
        """PreFilter extensions: ``pod_to_add`` now runs on ``info`` (already added to it)."""
        return self._run_extension("add_pod", state, pod, pod_to_add, info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, info: NodeInfo
    ) -> Status | None:
        """PreFilter extensions: ``pod_to_remove`` no longer runs on ``info`` (already removed)."""
        return self._run_extension("remove_pod", state, pod, pod_to_remove, info)

    def _run_extension(
        self, method: str, state: CycleState, pod: Pod, other: Pod, info: NodeInfo
    ) -> Status | None:
        for plugin in self._extensions:
            if plugin.name in state.skip_filter_plugins:
                continue
            extension = plugin.add_pod if method == "add_pod" else plugin.remove_pod
            try:
                status = extension(state, pod, other, info)
            except Exception as exc:
                log.exception(
                    "PreFilter extension %s of plugin %s failed for pod %s", method, plugin.name, pod.key
                )
                status = Status.from_error(exc, plugin.name)
            if status is not None and not status.is_success:
                upstream_name = "AddPod" if method == "add_pod" else "RemovePod"
                return status.with_plugin(plugin.name).as_error(
                    f"running {upstream_name} on PreFilter plugin {_quoted(plugin.name)}"
                )
        return None

    @_extension_point("PostFilter", status_of=lambda result: result[1])
    async def run_post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter plugins until one succeeds; the rejections' messages are joined as upstream.
        A plugin's post_filter may be a coroutine (it is awaited; the others never suspend)."""
        reasons: list[str] = []
        kept: PostFilterResult | None = None  # a rejecting plugin may still clear a nomination
        for plugin in self.post_filter_plugins:
            try:
                outcome = plugin.post_filter(state, pod, diagnosis)
                result, status = await outcome if inspect.isawaitable(outcome) else outcome
            except Exception as exc:
                log.exception("PostFilter plugin %s failed for pod %s", plugin.name, pod.key)
                return None, Status.from_error(exc, plugin.name)
            if status is None or status.is_success:
                return result, status
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, status.with_plugin(plugin.name)
            if status.code != Code.UNSCHEDULABLE:
                return None, status.with_plugin(plugin.name)
            reasons.extend(status.reasons)
            kept = result if result is not None else kept
        return kept, Status.unschedulable(*reasons) if reasons else None

    # ------------------------------------------------------------------ score

    def run_scoring(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> tuple[np.ndarray, Status | None]:
        """Weighted total scores of ``slots`` (PreScore, Score, NormalizeScore, weights), or an error."""
        infos = _NodeInfoList(table, slots)
        status = self.run_pre_score(state, pod, infos)
        if status is not None:
            return np.zeros(0, dtype=np.int64), status
        return self.run_score(state, pod, table, slots, infos)

    @_extension_point("PreScore")
    def run_pre_score(self, state: CycleState, pod: Pod, infos: Sequence[NodeInfo]) -> Status | None:
        for plugin in self.pre_score_plugins:
            start = perf_counter()
            try:
                status = plugin.pre_score(state, pod, infos)
            except Exception as exc:
                log.exception("PreScore plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            self._observe_plugin(state, plugin, "PreScore", status, start)
            if status is not None and status.is_skip:
                state.skip_score_plugins.add(plugin.name)
            elif status is not None and not status.is_success:
                return status.with_plugin(plugin.name).as_error(_context(_PRE_SCORE_ERROR, plugin))
        return None

    @_extension_point("Score", status_of=lambda result: result[1])
    def run_score(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray, infos: Sequence[NodeInfo]
    ) -> tuple[np.ndarray, Status | None]:
        active, scores, status = self._score_rows(state, pod, table, slots, infos)
        if status is not None:
            return scores, status
        weights = np.fromiter((w for _, w in active), dtype=np.int64, count=len(active))
        totals = weights @ scores if len(active) else np.zeros(len(slots), dtype=np.int64)
        if logs.v(10):
            _log_scores(pod, [p.name for p, _ in active], scores * weights[:, None], totals, table, slots)
        return totals, None

    def weighted_scores(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray
    ) -> tuple[list[str], np.ndarray, Status | None]:
        """PreScore and Score as ``run_scoring`` runs them, but each plugin's weighted scores (one
        row per active Score plugin, named) instead of their sums: what explain shows."""
        infos = _NodeInfoList(table, slots)
        status = self.run_pre_score(state, pod, infos)
        if status is not None:
            return [], np.zeros((0, len(slots)), dtype=np.int64), status
        active, scores, status = self._score_rows(state, pod, table, slots, infos)
        if status is not None:
            return [], scores, status
        weights = np.fromiter((w for _, w in active), dtype=np.int64, count=len(active))
        return [p.name for p, _ in active], scores * weights[:, None], None

    def _score_rows(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray, infos: Sequence[NodeInfo]
    ) -> tuple[list[tuple[Any, int]], np.ndarray, Status | None]:
        """The active Score plugins with their weights, and their normalized, range-checked scores
        (one row each), or an Error status."""
        active = [(p, w) for p, w in self.score_plugins if p.name not in state.skip_score_plugins]
        # one row per plugin, range-checked at once
        scores = np.empty((len(active), len(slots)), dtype=np.int64)
        for row, (plugin, _) in enumerate(active):
            start = perf_counter()
            context = _SCORE_ERROR
            try:
                if plugin.name in self._batch_scores:
                    scores[row] = plugin.score_nodes(state, pod, table, slots)
                else:
                    scores[row] = np.fromiter(
                        (plugin.score(state, pod, i) for i in infos), dtype=np.int64, count=len(infos)
                    )
                if plugin.name in self._normalizers:
                    context = _NORMALIZE_ERROR
                    plugin.normalize_scores(state, pod, scores[row])
            except Exception as exc:
                log.exception("Score plugin %s failed for pod %s", plugin.name, pod.key)
                error = Status.from_error(exc, plugin.name).as_error(_context(context, plugin))
                return active, scores[0:0], error
            self._observe_plugin(state, plugin, "Score", None, start)
        if scores.size and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
            bad_row = int(
                np.flatnonzero((scores < MIN_NODE_SCORE).any(1) | (scores > MAX_NODE_SCORE).any(1))[0]
            )
            row_scores = scores[bad_row]
            bad = int(row_scores.max() if row_scores.max() > MAX_NODE_SCORE else row_scores.min())
            name = active[bad_row][0].name
            message = (
                f"applying score defaultWeights on Score plugins: plugin {_quoted(name)} returns an "
                f"invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                "after normalizing"
            )
            return active, scores[0:0], Status.from_error(ValueError(message), name)
        return active, scores, None

    @contextlib.contextmanager
    def unobserved(self) -> Iterator[None]:
        """Run extension points untimed: explain and shadow mode evaluate pods no cycle schedules,
        and the scheduler's metrics count its cycles only. Around code that never suspends (a
        binding cycle running meanwhile would go untimed too)."""
        metrics, self.metrics = self.metrics, None
        try:
            yield
        finally:
            self.metrics = metrics

    def observe_extension_point(self, point: str, status: Status | None, started: float) -> None:
        """Time an extension point run outside this class (Filter: the search in schedule_one)."""
        if self.metrics is not None:
            self.metrics.observe_extension_point(
                point, status_label(status), self.profile_name, perf_counter() - started
            )

    def _observe_plugin(
        self, state: CycleState, plugin: Any, point: str, status: Status | None, start: float
    ) -> None:
        """Per-plugin latency, in the sampled cycles only (upstream's pluginMetricsSamplePercent)."""
        if state.record_plugin_metrics and self.metrics is not None:
            self.metrics.observe_plugin(plugin.name, point, status_label(status), perf_counter() - start)

    # ------------------------------------------------------------------ reserve / permit / bind

    @_extension_point("Reserve")
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        def reserve(plugin: Any) -> Status | None:
            started = perf_counter()
            status = plugin.reserve(state, pod, node_name)
            self._observe_plugin(state, plugin, "Reserve", status, started)
            return status

        return _first_rejection(
            "Reserve", pod, self.reserve_plugins, reserve, "running Reserve plugin {plugin}"
        )

    @_extension_point("Unreserve", status_of=lambda result: None)
    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in reversed(self.reserve_plugins):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve of plugin %s failed for pod %s", plugin.name, pod.key)

    @_extension_point("Permit")
    def run_permit(self, state: CycleState, pod: Pod, node_name: str, *, hold: bool = True) -> Status | None:
        """Success, a rejection, or WAIT (then the pod is registered in ``waiting_pods``, unless
        ``hold`` is False: the pod-group cycle's trial placements only ask)."""
        timeouts: dict[str, float] = {}
        wait_reasons: tuple[str, ...] = ()
        for plugin in self.permit_plugins:
            started = perf_counter()
            try:
                status, timeout = plugin.permit(state, pod, node_name)
                self._observe_plugin(state, plugin, "Permit", status, started)
            except Exception as exc:
                log.exception("Permit plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is None or status.is_success:
                continue
            if status.code == Code.WAIT:
                timeouts[plugin.name] = min(timeout, MAX_PERMIT_WAIT)
                wait_reasons = status.reasons  # upstream keeps the last waiting plugin's
                continue
            if status.is_rejected:
                return status.with_plugin(plugin.name)
            return status.with_plugin(plugin.name).as_error(f"running Permit plugin {_quoted(plugin.name)}")
        if timeouts:
            if hold:
                self.waiting_pods.add(WaitingPod(pod, node_name, timeouts, self.clock))
            return Status(
                Code.WAIT, (*wait_reasons, "one or more plugins asked to wait and no plugin rejected pod")
            )
        return None

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return None
        try:
            return await waiting.wait()
        finally:
            self.waiting_pods.pop(pod.uid)

    @_extension_point("PreBindPreFlight")
    def run_pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Ask each PreBind plugin whether it has work for this pod: success when one has, Skip
        when none has (their PreBind is then skipped), or an Error.

        A plugin without ``pre_bind_pre_flight`` is taken to have work.
        """
        result: Status | None = Status.skip()
        for plugin in self.pre_bind_plugins:
            if plugin.name not in self._pre_flights:
                result = None
                continue
            try:
                status = plugin.pre_bind_pre_flight(state, pod, node_name)
            except Exception as exc:
                log.exception("PreBindPreFlight of plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is None or status.is_success:
                result = None
            elif status.is_skip:
                state.skip_pre_bind_plugins.add(plugin.name)
            else:  # PreBindPreFlight may only succeed, skip or fail
                return status.with_plugin(plugin.name).as_error(
                    f"running PreBindPreFlight {_quoted(plugin.name)}"
                )
        return result

    def will_wait_on_permit(self, pod: Pod) -> bool:
        """A Permit plugin asked the pod to wait: as upstream, true until its binding cycle's
        WaitOnPermit ends, even once every plugin has allowed it (as a gang's members often are
        before their binding cycles start)."""
        return pod.uid in self.waiting_pods

    def discard_waiting_pod(self, pod: Pod) -> None:
        """Stop holding ``pod`` at Permit: its binding cycle failed before the wait."""
        waiting = self.waiting_pods.pop(pod.uid)
        if waiting is not None:
            waiting.reject("", "the binding cycle failed before the Permit wait")

    @_extension_point("PreBind")
    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for plugin in self.pre_bind_plugins:
            if plugin.name in state.skip_pre_bind_plugins:
                continue
            started = perf_counter()
            try:
                status = await plugin.pre_bind(state, pod, node_name)
                self._observe_plugin(state, plugin, "PreBind", status, started)
            except Exception as exc:
                log.exception("PreBind plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is not None and not status.is_success:
                if status.is_rejected:
                    return status.with_plugin(plugin.name)
                return status.with_plugin(plugin.name).as_error(
                    f"running PreBind plugin {_quoted(plugin.name)}"
                )
        return None

    @_extension_point("Bind")
    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for plugin in self.bind_plugins:
            started = perf_counter()
            try:
                status = await plugin.bind(state, pod, node_name)
                self._observe_plugin(state, plugin, "Bind", status, started)
            except Exception as exc:
                log.exception("Bind plugin %s failed for pod %s", plugin.name, pod.key)
                status = Status.from_error(exc, plugin.name)
            if status is not None and status.is_skip:
                continue
            if status is not None and not status.is_success:
                return status.with_plugin(plugin.name).as_error(f"running Bind plugin {_quoted(plugin.name)}")
            return None
        return Status.from_error(RuntimeError("no bind plugin bound the pod"), "")

    @_extension_point("PostBind", status_of=lambda result: None)
    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in self.post_bind_plugins:
            try:
                plugin.post_bind(state, pod, node_name)
            except Exception:
                log.exception("PostBind plugin %s failed for pod %s", plugin.name, pod.key)


def _log_scores(
    pod: Pod,
    plugins: Sequence[str],
    weighted: np.ndarray,
    totals: np.ndarray,
    table: NodeTable,
    slots: np.ndarray,
) -> None:
    """Every plugin's weighted score per node, then the sums, as kube-scheduler logs them at -v=10.

    The values are also attached to the records (``pod``, ``plugin``, ``node``, ``score``) so a
    handler can collect them without parsing text (bench.parity does).
    """
    names = [table.info(slot).name for slot in slots.tolist()]
    for column, node in enumerate(names):
        for row, plugin in enumerate(plugins):
            score = int(weighted[row, column])
            score_log.debug(
                "Plugin scored node for pod pod=%s plugin=%s node=%s score=%d",
                pod.key,
                plugin,
                node,
                score,
                extra={"pod": pod.key, "plugin": plugin, "node": node, "score": score},
            )
    for node, total in zip(names, totals.tolist(), strict=True):
        score_log.debug(
            "Calculated node's final score for pod pod=%s node=%s score=%d",
            pod.key,
            node,
            total,
            extra={"pod": pod.key, "plugin": "", "node": node, "score": total},
        )


def _with_pods(info: NodeInfo, pods: Sequence[Pod]) -> NodeInfo:
    copied = info.clone()
    for other in pods:
        copied.add_pod(other)
    return copied


def nominated_pods_to_respect(pod: Pod, nominated: Sequence[Pod]) -> list[Pod]:
    """The nominated pods ``pod`` must leave room for: equal or higher priority, other than itself."""
    return [other for other in nominated if other.priority >= pod.priority and other.uid != pod.uid]


# How upstream words an error of each extension point ({plugin} is the quoted plugin name).
_FILTER_ERROR = "running {plugin} filter plugin"
_PRE_SCORE_ERROR = "running PreScore plugin {plugin}"
_SCORE_ERROR = "running Score plugins: plugin {plugin} failed with"
_NORMALIZE_ERROR = "running Normalize on Score plugins: plugin {plugin} failed with"


def _quoted(name: str) -> str:
    """A plugin name as Go's %q prints it in upstream's error messages."""
    return json.dumps(name)


def _context(template: str, plugin: Any) -> str:
    return template.format(plugin=_quoted(plugin.name))


def _first_rejection(
    point: str, pod: Pod, plugins: Sequence[Any], call: Callable[[Any], Status | None], error_context: str
) -> Status | None:
    """Run ``call`` on each plugin in order; the first non-success stops the run. An error (or a
    raised exception) becomes an Error status worded with ``error_context``, as upstream's."""
    for plugin in plugins:
        try:
            status = call(plugin)
        except Exception as exc:
            log.exception("%s plugin %s failed for pod %s", point, plugin.name, pod.key)
            status = Status.from_error(exc, plugin.name)
        if status is not None and not status.is_success:
            status = status.with_plugin(plugin.name)
            return status if status.is_rejected else status.as_error(_context(error_context, plugin))
    return None


class _NodeInfoList(Sequence[NodeInfo]):
    """The NodeInfos of ``slots``, built only if a plugin actually looks at them (most PreScore
    plugins skip or use the table, and building 500 entries costs more than their whole work)."""

    __slots__ = ("_infos", "_slots", "_table")

    def __init__(self, table: NodeTable, slots: np.ndarray) -> None:
        self._table = table
        self._slots = slots
        self._infos: list[NodeInfo] | None = None

    def _list(self) -> list[NodeInfo]:
        if self._infos is None:
            # every slot given holds a node (NodeTable.info's check, skipped on this hot path)
            infos = cast("list[NodeInfo]", self._table.infos)
            self._infos = list(map(infos.__getitem__, self._slots.tolist()))
        return self._infos

    def __len__(self) -> int:
        return len(self._slots)

    def __getitem__(self, index: Any) -> Any:
        return self._list()[index]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._list())
