"""Can the cluster's free resources hold a PodGroup's minResources at all?

A coarse check before any member is tried (as scheduler-plugins' PreFilter makes): the free
amounts of all nodes are added up, counting what the group's own placed pods use as free, and
compared with minResources plus one pod slot per minMember. Passing it does not mean the group
fits (affinity, taints or fragmentation may still stop it); failing it means it cannot.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.api import Resource
from scheduler.api.resources import CPU, PODS
from scheduler.framework import NodeInfo
from scheduler.plugins.coscheduling.podgroup import PodGroup, group_key


def missing_resources(group: PodGroup, nodes: Iterable[NodeInfo]) -> dict[str, int]:
    """What minResources (with ``pods: minMember``) lacks in the cluster; empty when it fits."""
    wanted = (group.min_resources or Resource()).copy()
    wanted.allowed_pod_number = group.min_member
    gap = {name: wanted.get(name) for name in wanted.names() if wanted.get(name) > 0}
    for info in nodes:
        if not gap:
            break
        free = _free(info, group.key)
        for name in list(gap):
            gap[name] -= max(0, free.get(name))
            if gap[name] <= 0:
                del gap[name]
    return gap


def _free(info: NodeInfo, key: str) -> Resource:
    """The node's allocatable minus what pods other than the group's request."""
    free = info.node.allocatable.copy()
    free.add(info.requested, -1)
    others = len(info.pods)
    for pod in info.pods.values():
        if group_key(pod) == key:
            free.add(pod.requests)
            others -= 1
    free.allowed_pod_number = info.node.allocatable.allowed_pod_number - others
    return free


def describe_gap(gap: dict[str, int]) -> str:
    """``cpu=1500m, pods=2``: the amounts in the units a ResourceList uses."""
    return ", ".join(f"{name}={_quantity(name, amount)}" for name, amount in sorted(gap.items()))


def _quantity(name: str, amount: int) -> str:
    if name == CPU:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    return str(amount) if name == PODS or amount % 1024 else _binary(amount)


def _binary(amount: int) -> str:
    for suffix in ("Ki", "Mi", "Gi", "Ti"):
        amount //= 1024
        if amount % 1024:
            return f"{amount}{suffix}"
    return f"{amount // 1024}Pi"
