"""Pods nominated to a node (by preemption) and not bound yet.

Filter plugins count nominated pods of equal or higher priority as if they already ran on the
node, so a preemptor's freed room is not taken by someone else while the victims terminate.
"""

from __future__ import annotations

from scheduler.api import Pod


class Nominator:
    __slots__ = ("_by_node", "_node_of")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod: Pod, node_name: str = "") -> None:
        """Nominate ``pod`` to ``node_name`` (default: its ``status.nominatedNodeName``)."""
        self.delete(pod.uid)
        node = node_name or pod.nominated_node_name
        if not node or pod.node_name:
            return
        self._by_node.setdefault(node, {})[pod.uid] = pod
        self._node_of[pod.uid] = node

    def update(self, old: Pod, new: Pod) -> None:
        """Follow the new pod version; keep the scheduler's own nomination unless the API changed it."""
        kept = ""
        if not old.nominated_node_name and not new.nominated_node_name:
            kept = self._node_of.get(old.uid, "")
        self.add(new, kept)

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._by_node[node]
        del pods[uid]
        if not pods:
            del self._by_node[node]

    def nodes(self) -> list[str]:
        """Nodes with at least one nominated pod (few: only preemption nominates)."""
        return list(self._by_node)

    def pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self._by_node.get(node_name, {}).values())
