"""The pods waiting for a shadow decision: one entry per pod, bounded, oldest first."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from scheduler.api import Pod


class Backlog:
    """A newer version of a waiting pod replaces the older one in its place (a pod updated ten
    times while it waits is decided once, as it is last); beyond ``limit`` pods the oldest is
    dropped (counted in ``dropped``), so a flood of pods costs bounded memory."""

    def __init__(self, limit: int) -> None:
        self._pods: OrderedDict[str, Pod] = OrderedDict()  # by uid
        self._limit = limit
        self._wakeup = asyncio.Event()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._pods)

    def put(self, pod: Pod) -> None:
        self._pods[pod.uid] = pod
        if len(self._pods) > self._limit:
            self._pods.popitem(last=False)
            self.dropped += 1
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
