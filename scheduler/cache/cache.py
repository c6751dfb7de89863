"""The scheduler's picture of where pods run: NodeInfo per node, plus pods assumed but not yet bound.

Informer events (any scheduler's pods, nodes) and the scheduling cycle (assume / forget) both
mutate it; the binding cycle's expiry clock bounds how long an assumed pod may wait to be
confirmed by the informer. Every NodeInfo change is mirrored into the columnar
:class:`~scheduler.framework.NodeTable` at once, so batch plugins always read current rows.

Events can arrive in any order: a pod may name a node the cache has not seen yet (it is kept on a
placeholder NodeInfo and attached when the node arrives) and a node may be deleted while pods are
still on it (the NodeInfo leaves the table and the node list but keeps the pods until their own
delete events, which must not fail).

A scheduling cycle that awaits (an extender's answer) holds the cache (``held``): the changes that
arrive meanwhile wait, in order, until it has decided, so the cycle sees one consistent picture as
upstream's cycle sees the snapshot it took at its start.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from scheduler.api import Node, Pod
from scheduler.cache.images import ImageStates
from scheduler.cache.node_tree import NodeTree
from scheduler.cache.snapshot import Snapshot
from scheduler.framework import NodeInfo, NodeTable
from scheduler.framework.pod_index import PodIndex

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)


class CacheError(RuntimeError):
    """A scheduling-cycle request the cache cannot honour (e.g. assuming a pod it already has)."""


@dataclass(slots=True)
class _PodState:
    pod: Pod
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


P = ParamSpec("P")
R = TypeVar("R")


def _deferred_while_held(
    method: Callable[Concatenate[Cache, P], R],
) -> Callable[Concatenate[Cache, P], R | None]:
    """A change that, while a cycle holds the cache, is queued (returning None) until it is released."""

    @functools.wraps(method)
    def change(self: Cache, *args: P.args, **kwargs: P.kwargs) -> R | None:
        if self._deferred is not None:
            self._deferred.append(functools.partial(method, self, *args, **kwargs))
            return None
        return method(self, *args, **kwargs)

    return change


class Cache:
    """Single-threaded by design: every call happens on the scheduler's event loop."""

    def __init__(
        self,
        *,
        assumed_pod_ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.table = NodeTable()
        self._ttl = assumed_pod_ttl
        self._clock = clock
        self._metrics = metrics
        # Every NodeInfo by node name; slot < 0 marks a placeholder (node unknown or deleted).
        self._infos: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._tree = NodeTree()
        self._images = ImageStates()
        self.pod_index = PodIndex()  # placed pods by label, for affinity and spread queries
        self._snapshot = Snapshot(self.table, self._infos, self.pod_index)
        self._snapshot_tree_generation = -1
        self._changed_nodes: set[str] = set()
        # changes waiting for a holding cycle to finish (None: not held)
        self._deferred: list[Callable[[], Any]] | None = None
        self._released = asyncio.Event()  # set whenever the cache is not held
        self._released.set()
        self._report()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Keep the cache unchanged while a scheduling cycle awaits; the informers' and the
        bindings' changes made meanwhile are applied, in order, when the block ends."""
        if self._deferred is not None:
            raise CacheError("the cache is already held by a scheduling cycle")
        self._deferred = []
        self._released.clear()
        try:
            yield
        finally:
            deferred, self._deferred = self._deferred, None
            self._released.set()
            for change in deferred:
                try:
                    change()
                except Exception:
                    log.exception("a cache change made while a scheduling cycle held the cache failed")

    async def until_released(self) -> None:
        """Return once nobody holds the cache, at once (without yielding) when nobody does, so
        that ``held()`` right after it cannot fail. Whoever holds it while awaiting (a cycle
        waiting for its extenders, explain, shadow mode) makes the others wait their turn."""
        while self._deferred is not None:
            await self._released.wait()

    # ------------------------------------------------------------------ nodes

    @_deferred_while_held
    def add_node(self, node: Node) -> NodeInfo:
        return self._add_node(node)

    @_deferred_while_held
    def update_node(self, old: Node, new: Node) -> NodeInfo:
        return self._update_node(new)

    def _add_node(self, node: Node) -> NodeInfo:
        info = self._infos.get(node.name)
        if info is not None and info.slot >= 0:
            return self._update_node(node)
        if info is None:
            info = self._infos[node.name] = NodeInfo(node=node)
        else:
            info.node = node  # pods arrived first, or the node came back while pods remained
            info.generation += 1
        self._images.add_node(node, info)
        self.table.add(info)
        self._tree.add(node)
        self._report()
        return info

    def _update_node(self, new: Node) -> NodeInfo:
        info = self._infos.get(new.name)
        if info is None or info.slot < 0:
            return self._add_node(new)
        # The cached node, not the event's old object, is what the image counts were built from.
        self._images.remove_node(info.node, info)
        self._images.add_node(new, info)
        self._tree.update(new)
        info.node = new
        info.generation += 1
        self.table.sync_row(info)
        return info

    @_deferred_while_held
    def remove_node(self, node: Node) -> None:
        info = self._infos.get(node.name)
        if info is None or info.slot < 0:
            return
        self._images.remove_node(info.node, info)
        self._tree.remove(node.name)
        self.table.remove(info)
        info.generation += 1
        self._changed_nodes.discard(node.name)
        if not info.pods:
            del self._infos[node.name]
        self._report()

    # ------------------------------------------------------------------ pods seen by the informer

    @_deferred_while_held
    def add_pod(self, pod: Pod) -> None:
        """An assigned pod (any scheduler's); confirms it if we assumed it, even on another node."""
        if not pod.node_name:
            log.warning("pod %s given to the cache is not assigned to a node; ignored", pod.key)
            return
        state = self._pods.get(pod.uid)
        if state is None:
            self._place(pod)
            self._pods[pod.uid] = _PodState(pod)
        else:
            if state.assumed and state.pod.node_name != pod.node_name:
                log.info(
                    "pod %s was bound to %s, not to %s where it was assumed",
                    pod.key,
                    pod.node_name,
                    state.pod.node_name,
                )
            self._move(state.pod, pod)
            state.pod = pod
            state.assumed = False
            state.binding_finished = False
            state.deadline = None
            self._assumed.discard(pod.uid)
        self._report()

    @_deferred_while_held
    def update_pod(self, old: Pod, new: Pod) -> None:
        state = self._pods.get(new.uid)
        if state is None or state.assumed:
            # An update can be the first sight of a pod (e.g. bound after a relist): same as add.
            self.add_pod(new)
            return
        self._move(state.pod, new)
        state.pod = new

    @_deferred_while_held
    def remove_pod(self, pod: Pod) -> None:
        state = self._pods.pop(pod.uid, None)
        if state is None:
            return
        self._assumed.discard(pod.uid)
        # The cached copy knows the node the pod was accounted on.
        self._unplace(state.pod)
        self._report()

    # ------------------------------------------------------------------ the scheduling cycle

    def assume_pod(self, pod: Pod) -> None:
        """Account ``pod`` (``node_name`` set) before binding, so the next cycles see it placed."""
        if not pod.node_name:
            raise CacheError(f"pod {pod.key} has no node to be assumed on")
        if pod.uid in self._pods:
            raise CacheError(f"pod {pod.key} is in the cache, so it cannot be assumed")
        self._place(pod)
        self._pods[pod.uid] = _PodState(pod, assumed=True)
        self._assumed.add(pod.uid)
        self._report()

    @_deferred_while_held
    def finish_binding(self, pod: Pod) -> None:
        """The bind request is over: from now on the assumed pod expires unless confirmed."""
        state = self._pods.get(pod.uid)
        if state is not None and state.assumed:
            state.binding_finished = True
            state.deadline = self._clock() + self._ttl

    @_deferred_while_held
    def forget_pod(self, pod: Pod) -> None:
        """Undo :meth:`assume_pod` (binding failed). A pod already confirmed stays."""
        self._forget(pod)

    def undo_assume(self, pod: Pod) -> None:
        """Undo an :meth:`assume_pod` of the running cycle at once, even while it holds the cache:
        the pod-group cycle tries a group's placements and takes them back before deciding."""
        self._forget(pod)

    def assumed_uids(self) -> Set[str]:
        """The uids of the pods assumed right now (a live, read-only view)."""
        return self._assumed

    def assumed_node(self, uid: str) -> str:
        """The node an assumed pod is accounted on ("" when the pod is not assumed)."""
        return self._pods[uid].pod.node_name if uid in self._assumed else ""

    def _forget(self, pod: Pod) -> None:
        state = self._pods.get(pod.uid)
        if state is None or not state.assumed:
            log.warning("pod %s was not assumed, so it cannot be forgotten", pod.key)
            return
        del self._pods[pod.uid]
        self._assumed.discard(pod.uid)
        self._unplace(state.pod)
        self._report()

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def cleanup_expired_assumed_pods(self) -> list[Pod]:
        """Drop assumed pods whose binding finished more than the TTL ago without confirmation."""
        if self._deferred is not None:
            return []  # a cycle holds the cache: next round
        now = self._clock()
        expired: list[Pod] = []
        for uid in list(self._assumed):
            state = self._pods[uid]
            if state.binding_finished and state.deadline is not None and now > state.deadline:
                log.warning("assumed pod %s expired before its binding was confirmed", state.pod.key)
                del self._pods[uid]
                self._assumed.discard(uid)
                self._unplace(state.pod)
                expired.append(state.pod)
        if expired:
            self._report()
        return expired

    def snapshot(self) -> Snapshot:
        """Refresh (only what is stale) and return the one snapshot object."""
        snap = self._snapshot
        if self._tree.generation != self._snapshot_tree_generation:
            snap.set_nodes([self._infos[name] for name in self._tree.list()])
            self._snapshot_tree_generation = self._tree.generation
        elif self._changed_nodes:
            snap.nodes_changed(self._infos[name] for name in self._changed_nodes)
        self._changed_nodes.clear()
        return snap

    # ------------------------------------------------------------------ inspection

    def node_count(self) -> int:
        return len(self._tree)

    def pod_count(self) -> int:
        return len(self._pods)

    def assumed_count(self) -> int:
        return len(self._assumed)

    def get_node_info(self, name: str) -> NodeInfo | None:
        info = self._infos.get(name)
        return info if info is not None and info.slot >= 0 else None

    def dump(self) -> dict[str, Any]:
        """A debugging view: node -> pod keys (placeholders flagged), and the assumed pods."""
        return {
            "nodes": {
                name: {"pods": sorted(p.key for p in info.pods.values()), "present": info.slot >= 0}
                for name, info in sorted(self._infos.items())
            },
            "assumed": sorted(self._pods[uid].pod.key for uid in self._assumed),
        }

    # ------------------------------------------------------------------ internals

    def _place(self, pod: Pod) -> None:
        self._touched(self._add_to_node(pod))

    def _unplace(self, pod: Pod) -> None:
        info = self._remove_from_node(pod)
        if info is not None:
            self._touched(info)

    def _move(self, old: Pod, new: Pod) -> None:
        """``old`` becomes ``new``; a node's row is written once, so an update that changes no
        request (a binding confirmed, a status change) leaves the row's values as they were."""
        left = self._remove_from_node(old)
        arrived = self._add_to_node(new)
        if left is not None and left is not arrived:
            self._touched(left)
        self._touched(arrived)

    def _add_to_node(self, pod: Pod) -> NodeInfo:
        info = self._infos.get(pod.node_name)
        if info is None:
            # The node has not arrived yet: hold the pod on a placeholder until it does.
            info = self._infos[pod.node_name] = NodeInfo(node=Node(name=pod.node_name))
        info.add_pod(pod)
        self.pod_index.add(pod)
        return info

    def _remove_from_node(self, pod: Pod) -> NodeInfo | None:
        """Take ``pod`` off its node; the node's info if it is in the table and held the pod."""
        self.pod_index.remove(pod)
        info = self._infos.get(pod.node_name)
        if info is None or info.remove_pod(pod.uid) is None:
            log.debug("pod %s was not accounted on node %r", pod.key, pod.node_name)
            return None
        if info.slot >= 0:
            return info
        if not info.pods:
            del self._infos[pod.node_name]
        return None

    def _touched(self, info: NodeInfo) -> None:
        if info.slot >= 0:
            self.table.sync_row(info)
            self._changed_nodes.add(info.name)

    def _report(self) -> None:
        if self._metrics is not None:
            self._metrics.set_cache_size(len(self._tree), len(self._pods), len(self._assumed))
