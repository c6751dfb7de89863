"""Pods held at Permit until every waiting plugin allows them (or one rejects / times out)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from scheduler.api import Pod
from scheduler.config.durations import format_duration
from scheduler.framework import Code, Status
from scheduler.framework.clock import REAL_CLOCK, Clock


class WaitingPod:
    """A pod some Permit plugins asked to wait for; plugins call ``allow`` / ``reject``."""

    __slots__ = ("_pending", "_result", "_timers", "node_name", "pod", "timeouts")

    def __init__(
        self, pod: Pod, node_name: str, timeouts: dict[str, float], clock: Clock = REAL_CLOCK
    ) -> None:
        self.pod = pod
        self.node_name = node_name
        self.timeouts = dict(timeouts)
        self._pending = set(timeouts)
        self._result: asyncio.Future[Status | None] = asyncio.get_running_loop().create_future()
        self._timers = [
            clock.call_later(timeout, self.reject, plugin, self.timeout_message(plugin))
            for plugin, timeout in timeouts.items()
        ]

    def timeout_message(self, plugin: str) -> str:
        """Upstream's rejection when ``plugin`` does not allow the pod in time."""
        waited = format_duration(self.timeouts[plugin])
        return f"rejected due to timeout after waiting {waited} at plugin {plugin}"

    @property
    def pending_plugins(self) -> frozenset[str]:
        return frozenset(self._pending)

    def allow(self, plugin: str) -> None:
        self._pending.discard(plugin)
        if not self._pending:
            self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _finish(self, status: Status | None) -> None:
        if not self._result.done():
            self._result.set_result(status)
        for timer in self._timers:
            timer.cancel()

    async def wait(self) -> Status | None:
        return await self._result


class WaitingPodMap:
    """The profile's waiting pods by uid (``framework.WaitingPods``)."""

    __slots__ = ("_pods",)

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def add(self, waiting: WaitingPod) -> None:
        self._pods[waiting.pod.uid] = waiting

    def pop(self, uid: str) -> WaitingPod | None:
        return self._pods.pop(uid, None)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
