"""The pods waiting for a shadow decision: one entry per pod, bounded, oldest first."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable

from scheduler.api import Pod


class Backlog:
    """A newer version of a waiting pod replaces the older one in its place (a pod updated ten
    times while it waits is decided once, as it is last); beyond ``limit`` pods the oldest is
    dropped (counted in ``dropped``, and ``on_drop`` called), so a flood of pods costs bounded
    memory and never waits."""

    def __init__(self, limit: int, on_drop: Callable[[], None] = lambda: None) -> None:
        self._pods: OrderedDict[str, Pod] = OrderedDict()  # by uid
        self._limit = limit
        self._on_drop = on_drop
        self._wakeup = asyncio.Event()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._pods)

    def put(self, pod: Pod) -> None:
        self._pods[pod.uid] = pod
        if len(self._pods) > self._limit:
            self._pods.popitem(last=False)
            self.dropped += 1
            self._on_drop()
        self._wakeup.set()

    def discard(self, uid: str) -> bool:
        """Take the pod out; True when it was waiting."""
        return self._pods.pop(uid, None) is not None

    async def wait(self) -> None:
        """Until a pod waits."""
        while not self._pods:
            self._wakeup.clear()
            await self._wakeup.wait()

    def pop(self) -> Pod:
        """The pod waiting longest (``wait()`` first)."""
        return self._pods.popitem(last=False)[1]

    def pop_oldest(self, count: int) -> list[Pod]:
        """Up to ``count`` pods, those waiting longest first."""
        return [self.pop() for _ in range(min(count, len(self._pods)))]
