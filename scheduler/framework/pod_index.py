"""Placed pods by namespace and label, so selector queries visit only the pods that can match.

InterPodAffinity and PodTopologySpread ask, every cycle, "which pods in these namespaces match
this selector, and on which nodes?". Scanning every pod of every node answers that in
O(pods); this index answers it from the pods carrying the selector's most selective label
(``key In values`` or ``key Exists``), and keeps per-node counts of the non-terminating pods for
each ``key=value`` so the commonest spread selector (one ``matchLabels`` entry) costs nothing to
count.

The cache keeps it up to date on the same paths that place pods on NodeInfos (add, update,
remove, assume, forget, expire), so assumed pods count here exactly as they do on nodes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from typing import TypeVar

from scheduler.api import LabelSelector, Pod
from scheduler.framework.types import NodeInfo

Label = tuple[str, str]


@dataclass(slots=True)
class _Namespace:
    pods: dict[str, Pod] = field(default_factory=dict)  # uid -> pod
    by_label: dict[Label, dict[str, Pod]] = field(default_factory=dict)  # (key, value) -> uid -> pod
    by_key: dict[str, dict[str, Pod]] = field(default_factory=dict)  # key -> uid -> pod
    # (key, value) -> node name -> non-terminating pods carrying that label there
    live_counts: dict[Label, dict[str, int]] = field(default_factory=dict)


def _bump(counts: dict[str, int], node_name: str, delta: int) -> None:
    total = counts.get(node_name, 0) + delta
    if total > 0:
        counts[node_name] = total
    else:
        counts.pop(node_name, None)


class PodIndex:
    """Pods placed on nodes (bound or assumed), by namespace and label; one entry per uid."""

    __slots__ = ("_namespaces", "_uids")

    def __init__(self) -> None:
        self._namespaces: dict[str, _Namespace] = {}
        self._uids: dict[str, Pod] = {}

    @classmethod
    def of(cls, node_infos: Iterable[NodeInfo]) -> PodIndex:
        """An index over the pods of ``node_infos`` (for node listers that keep none)."""
        index = cls()
        for info in node_infos:
            for pod in info.pods.values():
                index.add(pod)
        return index

    # ------------------------------------------------------------------ upkeep

    def add(self, pod: Pod) -> None:
        """Index ``pod`` on ``pod.node_name``; a pod already indexed (same uid) is replaced."""
        if pod.uid in self._uids:
            self.remove(pod)
        self._uids[pod.uid] = pod
        ns = self._namespaces.get(pod.namespace)
        if ns is None:
            ns = self._namespaces[pod.namespace] = _Namespace()
        ns.pods[pod.uid] = pod
        live = pod.deletion_timestamp is None
        for key, value in pod.labels.items():
            ns.by_label.setdefault((key, value), {})[pod.uid] = pod
            ns.by_key.setdefault(key, {})[pod.uid] = pod
            if live:
                _bump(ns.live_counts.setdefault((key, value), {}), pod.node_name, 1)

    def remove(self, pod: Pod) -> None:
        """Drop the pod with ``pod``'s uid, using the copy indexed (its labels, its node)."""
        indexed = self._uids.pop(pod.uid, None)
        if indexed is None:
            return
        ns = self._namespaces[indexed.namespace]
        del ns.pods[indexed.uid]
        live = indexed.deletion_timestamp is None
        for key, value in indexed.labels.items():
            _discard(ns.by_label, (key, value), indexed.uid)
            _discard(ns.by_key, key, indexed.uid)
            if live:
                counts = ns.live_counts[(key, value)]
                _bump(counts, indexed.node_name, -1)
                if not counts:
                    del ns.live_counts[(key, value)]
        if not ns.pods:
            del self._namespaces[indexed.namespace]

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self._uids)

    def namespaces(self) -> Collection[str]:
        """Namespaces having at least one placed pod."""
        return self._namespaces.keys()

    def matching(self, namespaces: Iterable[str] | None, selector: LabelSelector | None) -> Iterator[Pod]:
        """Pods in ``namespaces`` (``None``: every namespace) whose labels match ``selector``.

        A missing selector (``None``) matches nothing, as for affinity terms and spread constraints.
        """
        if selector is None:
            return
        names = self._namespaces.keys() if namespaces is None else namespaces
        for name in names:
            ns = self._namespaces.get(name)
            if ns is None:
                continue
            for pod in _candidates(ns, selector):
                if selector.matches(pod.labels):
                    yield pod

    def uids_with_label(self, namespace: str, key: str, value: str) -> Set[str]:
        """The uids of the pods of ``namespace`` labelled ``key=value`` (read only): what
        ``matching`` yields for ``matchLabels: {key: value}``, without testing a label."""
        ns = self._namespaces.get(namespace)
        group = ns.by_label.get((key, value)) if ns is not None else None
        return group.keys() if group is not None else frozenset()

    def count_by_node(self, namespace: str, selector: LabelSelector | None) -> Mapping[str, int]:
        """Non-terminating pods of ``namespace`` matching ``selector``, per node name (read only)."""
        ns = self._namespaces.get(namespace)
        if ns is None or selector is None:
            return {}
        single = _single_label(selector)
        if single is not None:
            return ns.live_counts.get(single, {})
        counts: dict[str, int] = {}
        for pod in _candidates(ns, selector):
            if pod.deletion_timestamp is None and selector.matches(pod.labels):
                counts[pod.node_name] = counts.get(pod.node_name, 0) + 1
        return counts


Group = TypeVar("Group")


def _discard(groups: dict[Group, dict[str, Pod]], group: Group, uid: str) -> None:
    members = groups[group]
    del members[uid]
    if not members:
        del groups[group]


def _single_label(selector: LabelSelector) -> Label | None:
    """``(key, value)`` when the selector is exactly ``key In (value)``."""
    if len(selector.requirements) != 1:
        return None
    req = selector.requirements[0]
    if req.operator != "In" or len(req.values) != 1:
        return None
    return req.key, next(iter(req.values))


def _candidates(ns: _Namespace, selector: LabelSelector) -> Iterable[Pod]:
    """The smallest superset of the matching pods the index can name without testing labels."""
    best: Iterable[Pod] = ns.pods.values()
    best_size = len(ns.pods)
    for req in selector.requirements:
        if req.operator == "In":
            groups = [ns.by_label[(req.key, v)] for v in req.values if (req.key, v) in ns.by_label]
            size = sum(len(g) for g in groups)
            if size < best_size:
                best_size = size
                best = [pod for g in groups for pod in g.values()]
        elif req.operator == "Exists":
            group = ns.by_key.get(req.key, {})
            if len(group) < best_size:
                best_size = len(group)
                best = group.values()
        if best_size == 0:
            break
    return best
