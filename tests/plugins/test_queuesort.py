from __future__ import annotations

from scheduler.framework import QueuedPodInfo
from scheduler.plugins.queuesort import PrioritySort
from scheduler.testing.builders import make_pod


def test_higher_priority_sorts_first_then_the_earlier_timestamp() -> None:
    plugin = PrioritySort()
    low_early = QueuedPodInfo(make_pod("a", priority=0), timestamp=1.0)
    high_late = QueuedPodInfo(make_pod("b", priority=100), timestamp=5.0)
    high_early = QueuedPodInfo(make_pod("c", priority=100), timestamp=2.0)
    negative = QueuedPodInfo(make_pod("d", priority=-5), timestamp=0.0)
    ordered = sorted([low_early, high_late, negative, high_early], key=plugin.sort_key)
    assert [qpi.pod.name for qpi in ordered] == ["c", "b", "a", "d"]


def test_a_pod_without_priority_counts_as_zero() -> None:
    plugin = PrioritySort()
    unset = QueuedPodInfo(make_pod("a"), timestamp=1.0)
    zero = QueuedPodInfo(make_pod("b", priority=0), timestamp=1.0)
    assert plugin.sort_key(unset) == plugin.sort_key(zero)
