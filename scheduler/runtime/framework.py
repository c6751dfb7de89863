"""One profile's plugins, and the runners for every extension point.

The scheduling cycle (schedule_one.py) calls these in order. Filter and Score run over a numpy
vector of node slots: batch plugins evaluate all candidates at once, per-node plugins are called
node by node (lazily, so the search can stop as soon as enough feasible nodes are found).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from scheduler import logs
from scheduler.api import Pod
from scheduler.config import Plugins, Profile
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
    PluginFactory,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    Status,
)
from scheduler.framework.clock import REAL_CLOCK, Clock
from scheduler.framework.interface import WILDCARD
from scheduler.runtime.waiting import WaitingPod

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

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FILTER_CHUNK = 256
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
MAX_PERMIT_WAIT = 15 * 60.0  # seconds; longer Permit timeouts are cut to this, as upstream


class FrameworkError(ValueError):
    """A profile that cannot be built (unknown plugin, plugin at a point it does not implement...)."""


@dataclass(slots=True)
class Rejections:
    """Which candidate slots were rejected, and with which status (indexes into ``statuses``)."""

    slots: list[np.ndarray] = field(default_factory=list)
    status_ids: list[np.ndarray] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)

    def add(self, slots: np.ndarray, status_ids: np.ndarray, statuses: Sequence[Status], plugin: str) -> None:
        base = len(self.statuses)
        self.statuses.extend(s.with_plugin(plugin) for s in statuses)
        self.slots.append(slots)
        self.status_ids.append(status_ids.astype(np.int64) + base)

    def add_one(self, slot: int, status: Status) -> None:
        self.add(np.array([slot]), np.zeros(1, dtype=np.int64), [status], status.plugin)

    def count(self) -> int:
        return sum(len(s) for s in self.slots)

    def to_diagnosis(self, table: NodeTable) -> Diagnosis:
        diagnosis = Diagnosis()
        infos, statuses = table.infos, self.statuses
        node_to_status = diagnosis.node_to_status
        for slots, ids in zip(self.slots, self.status_ids, strict=True):
            # runs for every unschedulable pod over every node: plain loops, no per-item calls
            for slot, status_id in zip(slots.tolist(), ids.tolist(), strict=True):
                node_to_status[infos[slot].node.name] = statuses[status_id]  # type: ignore[union-attr]
        for status in self.statuses:
            if status.code == Code.PENDING:
                diagnosis.pending_plugins.add(status.plugin)
            else:
                diagnosis.unschedulable_plugins.add(status.plugin)
        return diagnosis


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


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Upstream's percentageOfNodesToScore rule (0 or None = adaptive: 50% minus 1% per 125 nodes)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


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


def _extension_point(name: str, status_of: Callable[[Any], Status | None] = lambda result: result) -> Any:
    """Time a runner as scheduler_framework_extension_point_duration_seconds{extension_point=name}
    when the framework has metrics; an exception is recorded as ``Error``."""

    def decorate(method: Any) -> Any:
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

            return timed_async

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

        return timed

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
        rng: random.Random | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.profile_name = profile.scheduler_name
        self.clock = clock
        self.handle = handle
        # SchedulerMetrics from the handle, or None (tests, tools): extension points are timed then
        self.metrics = getattr(handle, "metrics", None)
        self._rng = rng or random.Random()
        self.percentage_of_nodes_to_score = (
            profile.percentage_of_nodes_to_score
            if profile.percentage_of_nodes_to_score is not None
            else percentage_of_nodes_to_score
        )
        self.plugins: dict[str, Any] = {}
        attach = getattr(handle, "attach_framework", None)
        if callable(attach):  # lets PostFilter plugins re-run the filters (preemption)
            attach(self)

        def instance(name: str) -> Any:
            if name not in self.plugins:
                factory = registry.get(name)
                if factory is None:
                    raise FrameworkError(f"plugin {name!r} is not registered (profile {self.profile_name!r})")
                self.plugins[name] = factory(profile.plugin_config.get(name), handle)
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
        self.filter_is_batch = [callable(getattr(p, "filter_nodes", None)) for p in self.filter_plugins]
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
        self.waiting_pods: dict[str, WaitingPod] = {}
        self._next_start = 0

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

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Cluster events per plugin, for the queue's hints.

        A plugin that does not say which events help its rejected pods gets every event, as
        upstream does, so its pods never wait for the five-minute flush.
        """
        events: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            register = getattr(plugin, "events_to_register", None)
            events[name] = list(register()) if callable(register) else [_ANY_EVENT]
        return events

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

    @_extension_point("Filter", status_of=lambda result: None)
    def find_feasible(
        self,
        state: CycleState,
        pod: Pod,
        snapshot: NodeLister,
        candidates: np.ndarray,
        nominated: Mapping[str, Sequence[Pod]] | None = None,
    ) -> tuple[np.ndarray, Rejections, int]:
        """Feasible slots (in evaluation order, at most the number to find), rejections, nodes processed.

        ``candidates`` are slots in evaluation order, taken chunk by chunk: in each chunk the
        batch filters (those before the first per-node-only filter) run over all its slots at
        once, then the remaining filters run per node; the search stops once enough feasible
        nodes are found. ``nominated`` maps node names to the nominated pods
        of equal or higher priority (see :func:`nominated_pods_to_respect`): those nodes skip the
        batch filters, which cannot see such pods, and run every filter per node with them added.
        """
        table = snapshot.table
        num_to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, len(candidates))
        if not self.score_plugins:
            num_to_find = min(1, len(candidates))
        rejections = Rejections()
        plugins = [
            (p, batch)
            for p, batch in zip(self.filter_plugins, self.filter_is_batch, strict=True)
            if p.name not in state.skip_filter_plugins
        ]
        first_per_node = next((i for i, (_, batch) in enumerate(plugins) if not batch), len(plugins))
        batch_plugins = [plugin for plugin, _ in plugins[:first_per_node]]
        per_node = [plugin for plugin, _ in plugins[first_per_node:]]
        every_filter = [plugin for plugin, _ in plugins]
        held = self._slots_with_nominated(snapshot, nominated)
        is_held = np.isin(candidates, np.fromiter(held, dtype=np.int64, count=len(held))) if held else None
        positions = np.arange(len(candidates))

        # Like upstream, stop once enough feasible nodes are found: candidates are filtered in
        # chunks (twice the number to find, then doubling), so a mostly-empty cluster never pays
        # for filtering every node.
        found: list[np.ndarray] = []
        count = 0
        processed = len(candidates)
        start, size = 0, max(2 * num_to_find, MIN_FILTER_CHUNK)
        while start < len(candidates) and count < num_to_find:
            stop = min(start + size, len(candidates))
            alive, pos = candidates[start:stop], positions[start:stop]
            held_here: list[tuple[int, int]] = []
            if is_held is not None:
                mask = is_held[start:stop]
                held_here = list(zip(pos[mask].tolist(), alive[mask].tolist(), strict=True))
                alive, pos = alive[~mask], pos[~mask]
            for plugin in batch_plugins:
                if alive.size == 0:
                    break
                started = perf_counter()
                with _plugin_errors(plugin, "Filter", pod, _FILTER_ERROR):
                    verdict = plugin.filter_nodes(state, pod, table, alive)
                self._observe_plugin(state, plugin, "Filter", None, started)
                if verdict is None or not verdict.rejected.any():
                    continue
                rejected = verdict.rejected
                rejections.add(alive[rejected], verdict.status_ids[rejected], verdict.statuses, plugin.name)
                keep = ~rejected
                alive, pos = alive[keep], pos[keep]
            if not per_node and not held_here:
                taken = alive[: num_to_find - count]
                found.append(taken)
                count += len(taken)
                if count >= num_to_find and len(taken):
                    processed = int(pos[len(taken) - 1]) + 1
            else:
                order = list(zip(pos.tolist(), alive.tolist(), strict=True))
                if held_here:
                    order = sorted(order + held_here)
                chunk_feasible: list[int] = []
                for position, slot in order:
                    info = table.info(slot)
                    if nominated is not None and slot in held:
                        status = self._filter_with_nominated(
                            state, pod, info, every_filter, nominated[info.name]
                        )
                    else:
                        status = self._filter_one(state, pod, info, per_node)
                    if status is None:
                        chunk_feasible.append(slot)
                        if count + len(chunk_feasible) >= num_to_find:
                            processed = position + 1
                            break
                    elif status.code == Code.ERROR:
                        raise CycleError(status)
                    else:
                        rejections.add_one(slot, status)
                found.append(np.array(chunk_feasible, dtype=np.int64))
                count += len(chunk_feasible)
            start, size = stop, size * 2
        feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return feasible, rejections, processed

    def _filter_one(self, state: CycleState, pod: Pod, info: Any, plugins: Sequence[Any]) -> Status | None:
        return _first_rejection("Filter", pod, plugins, lambda p: p.filter(state, pod, info), _FILTER_ERROR)

    def run_filters_with_nominated_pods(self, state: CycleState, pod: Pod, info: NodeInfo) -> Status | None:
        """Every filter on one node, counting the pods nominated there that ``pod`` must not displace.

        Upstream's RunFilterPluginsWithNominatedPods: preemption's dry runs and the nominated-node
        check use it so room freed for a preemptor is not promised twice.
        """
        active = [p for p in self.filter_plugins if p.name not in state.skip_filter_plugins]
        pods = self.handle.nominated_pods_for_node(info.name) if self.handle is not None else ()
        return self._filter_with_nominated(state, pod, info, active, nominated_pods_to_respect(pod, pods))

    def _filter_with_nominated(
        self, state: CycleState, pod: Pod, info: NodeInfo, plugins: Sequence[Any], nominated: Sequence[Pod]
    ) -> Status | None:
        """Filters with ``nominated`` added first; when they pass, again without them.

        The second pass matters for filters that a nominated pod could help (inter-pod affinity):
        the pod must fit whether or not the nominated pods end up on the node.
        """
        if not nominated:
            return self._filter_one(state, pod, info, plugins)
        with_state, with_info = state.clone(), info.clone()
        for other in nominated:
            with_info.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(with_state, pod, other, with_info)
            if status is not None:
                return status
        status = self._filter_one(with_state, pod, with_info, plugins)
        if status is not None:
            return status
        return self._filter_one(state, pod, info, plugins)

    def _slots_with_nominated(
        self, snapshot: NodeLister, nominated: Mapping[str, Sequence[Pod]] | None
    ) -> set[int]:
        if not nominated:
            return set()
        infos = (snapshot.get(name) for name, pods in nominated.items() if pods)
        return {info.slot for info in infos if info is not None}

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
        for plugin in self.pre_filter_plugins:
            extension = getattr(plugin, method, None)
            if extension is None or plugin.name in state.skip_filter_plugins:
                continue
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
    def run_post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter plugins until one succeeds; the rejections' messages are joined as upstream."""
        reasons: list[str] = []
        kept: PostFilterResult | None = None  # a rejecting plugin may still clear a nomination
        for plugin in self.post_filter_plugins:
            try:
                result, status = plugin.post_filter(state, pod, diagnosis)
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

    def next_start_index(self, num_nodes: int) -> int:
        return self._next_start % num_nodes if num_nodes else 0

    def advance_start_index(self, processed: int, num_nodes: int) -> None:
        if num_nodes:
            self._next_start = (self._next_start + processed) % num_nodes

    def run_scoring(self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray) -> np.ndarray:
        """Weighted total scores of ``slots`` (PreScore, Score, NormalizeScore, weights)."""
        infos = _NodeInfoList(table, slots)
        self.run_pre_score(state, pod, infos)
        return self.run_score(state, pod, table, slots, infos)

    @_extension_point("PreScore")
    def run_pre_score(self, state: CycleState, pod: Pod, infos: Sequence[NodeInfo]) -> None:
        plugin: Any = None
        try:
            for plugin in self.pre_score_plugins:
                start = perf_counter()
                status = plugin.pre_score(state, pod, infos)
                self._observe_plugin(state, plugin, "PreScore", status, start)
                if status is not None and status.is_skip:
                    state.skip_score_plugins.add(plugin.name)
                elif status is not None and not status.is_success:
                    raise CycleError(
                        status.with_plugin(plugin.name).as_error(_context(_PRE_SCORE_ERROR, plugin))
                    )
        except CycleError:
            raise
        except Exception as exc:
            log.exception("PreScore plugin %s failed for pod %s", plugin.name, pod.key)
            raise CycleError(
                Status.from_error(exc, plugin.name).as_error(_context(_PRE_SCORE_ERROR, plugin))
            ) from exc

    @_extension_point("Score", status_of=lambda result: None)
    def run_score(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: np.ndarray, infos: Sequence[NodeInfo]
    ) -> np.ndarray:
        plugin: Any = None
        active = [(p, w) for p, w in self.score_plugins if p.name not in state.skip_score_plugins]
        # one row per plugin, checked and weighted at once
        scores = np.empty((len(active), len(slots)), dtype=np.int64)
        context = _SCORE_ERROR
        try:
            for row, (plugin, _) in enumerate(active):
                start = perf_counter()
                context = _SCORE_ERROR
                score_nodes = getattr(plugin, "score_nodes", None)
                if score_nodes is not None:
                    scores[row] = score_nodes(state, pod, table, slots)
                else:
                    scores[row] = np.fromiter(
                        (plugin.score(state, pod, i) for i in infos), dtype=np.int64, count=len(infos)
                    )
                normalize = getattr(plugin, "normalize_scores", None)
                if normalize is not None:
                    context = _NORMALIZE_ERROR
                    normalize(state, pod, scores[row])
                self._observe_plugin(state, plugin, "Score", None, start)
        except Exception as exc:
            log.exception("Score plugin %s failed for pod %s", plugin.name, pod.key)
            raise CycleError(Status.from_error(exc, plugin.name).as_error(_context(context, plugin))) from exc
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
            raise CycleError(Status.from_error(ValueError(message), name))
        weights = np.fromiter((w for _, w in active), dtype=np.int64, count=len(active))
        totals = weights @ scores if len(active) else np.zeros(len(slots), dtype=np.int64)
        if logs.v(10):
            _log_scores(pod, [p.name for p, _ in active], scores * weights[:, None], totals, table, slots)
        return totals

    def _observe_plugin(
        self, state: CycleState, plugin: Any, point: str, status: Status | None, start: float
    ) -> None:
        """Per-plugin latency, in the sampled cycles only (upstream's pluginMetricsSamplePercent)."""
        if state.record_plugin_metrics and self.metrics is not None:
            self.metrics.observe_plugin(plugin.name, point, status_label(status), perf_counter() - start)

    def select_host(self, totals: np.ndarray) -> int:
        """Index of the highest total; ties are broken uniformly at random, as upstream does."""
        best = np.flatnonzero(totals == totals.max())
        return int(best[0] if len(best) == 1 else best[self._rng.randrange(len(best))])

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
    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Success, a rejection, or WAIT (then the pod is registered in ``waiting_pods``)."""
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
            self.waiting_pods[pod.uid] = WaitingPod(pod, node_name, timeouts, self.clock)
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
            self.waiting_pods.pop(pod.uid, None)

    @_extension_point("PreBindPreFlight")
    def run_pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Ask each PreBind plugin whether it has work for this pod: success when one has, Skip
        when none has (their PreBind is then skipped), or an Error.

        A plugin without ``pre_bind_pre_flight`` is taken to have work.
        """
        result: Status | None = Status.skip()
        for plugin in self.pre_bind_plugins:
            pre_flight = getattr(plugin, "pre_bind_pre_flight", None)
            if pre_flight is None:
                result = None
                continue
            try:
                status = pre_flight(state, pod, node_name)
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
        return pod.uid in self.waiting_pods

    def discard_waiting_pod(self, pod: Pod) -> None:
        """Stop holding ``pod`` at Permit: its binding cycle failed before the wait."""
        waiting = self.waiting_pods.pop(pod.uid, None)
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
            self._infos = list(map(self._table.infos.__getitem__, self._slots.tolist()))  # type: ignore[arg-type]
        return self._infos

    def __len__(self) -> int:
        return len(self._slots)

    def __getitem__(self, index: Any) -> Any:
        return self._list()[index]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._list())


@contextmanager
def _plugin_errors(plugin: Any, point: str, pod: Pod, error_context: str) -> Iterator[None]:
    """A plugin's exception ends the cycle as an Error status, which is reported and retried."""
    try:
        yield
    except CycleError:
        raise
    except Exception as exc:
        log.exception("%s plugin %s failed for pod %s", point, plugin.name, pod.key)
        raise CycleError(
            Status.from_error(exc, plugin.name).as_error(_context(error_context, plugin))
        ) from exc


class CycleError(Exception):
    """A plugin error that ends the scheduling cycle; the pod is retried with backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status
