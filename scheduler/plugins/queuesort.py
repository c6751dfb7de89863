"""PrioritySort: the active queue pops higher priority first, then the pod queued earliest."""

from __future__ import annotations

from typing import Any, ClassVar

from scheduler.framework import Handle, QueuedPodInfo
from scheduler.plugins import names


class PrioritySort:
    name: ClassVar[str] = names.PRIORITY_SORT

    __slots__ = ()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """Takes no args; the signature is the one every plugin factory has."""

    def sort_key(self, pod_info: QueuedPodInfo) -> tuple[int, float]:
        return (-pod_info.pod.priority, pod_info.timestamp)
