"""The pod status patch call (PodScheduled condition, nominated node) and the scheduler's way in.

The scheduler hands a change of a pod's status to :class:`PodStatusUpdates` and goes on: the
dispatcher writes it, merged with any change of the same pod still waiting (the newer condition
wins, a field the newer change leaves alone keeps the older change's value), retried until it
lands, the pod is gone, or the server refuses it for good. Each patch is computed against the
pod as the informer last saw it, so nothing already true is sent again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api import Pod
from scheduler.apidispatcher.dispatcher import APICall, APIDispatcher
from scheduler.client.pods import STRATEGIC_MERGE, condition_patch, pod_path
from scheduler.client.rest import ApiError, raise_for_status
from scheduler.framework.interface import ApiClient

log = logging.getLogger(__name__)

POD_STATUS_PATCH = "pod_status_patch"  # upstream's call type name (the metrics' call_type)
# A more relevant call replaces a less relevant one waiting for the same object. Upstream ranks
# pod_binding (2) above pod_status_patch (1); bindings are sent by the DefaultBinder directly,
# as upstream's with SchedulerAsyncAPICalls at its v1.36 default (off).
RELEVANCES: Mapping[str, int] = {POD_STATUS_PATCH: 1}


class PodStatusPatchCall:
    """``condition``: None leaves the conditions alone; ``nominated``: None leaves it, "" clears
    it. ``current(pod)``: the pod as the informer has it now (None once it is gone)."""

    __slots__ = ("condition", "current", "nominated", "pod")

    call_type = POD_STATUS_PATCH

    def __init__(
        self,
        pod: Pod,
        condition: Mapping[str, Any] | None,
        nominated: str | None,
        current: Callable[[Pod], Pod | None],
    ) -> None:
        self.pod = pod
        self.condition = condition
        self.nominated = nominated
        self.current = current

    @property
    def key(self) -> str:
        return self.pod.uid

    def merge(self, older: APICall) -> None:
        if isinstance(older, PodStatusPatchCall):
            if self.condition is None:
                self.condition = older.condition
            if self.nominated is None:
                self.nominated = older.nominated

    def is_noop(self) -> bool:
        return condition_patch(self.pod, self.condition, self.nominated) is None

    async def execute(self, client: ApiClient) -> bool:
        pod = self.current(self.pod)
        if pod is None or pod.uid != self.pod.uid:
            log.info("status of pod %s not written: the pod is gone", self.pod.key)
            return False
        try:
            await patch_status(client, pod, self.condition, self.nominated)
        except ApiError as exc:
            if exc.is_not_found:
                log.info("status of pod %s not written: the pod is gone", self.pod.key)
                return False
            if exc.is_retriable or exc.is_conflict:
                raise
            log.warning("status of pod %s refused, not retrying: %s", self.pod.key, exc)
            return False
        return True


async def patch_status(
    client: ApiClient, pod: Pod, condition: Mapping[str, Any] | None, nominated: str | None
) -> None:
    """One PATCH of ``pods/<name>/status`` (none when nothing would change); raises ``ApiError``."""
    patch = condition_patch(pod, condition, nominated)
    if patch is not None:
        path = pod_path(pod) + "/status"
        raise_for_status(await client.request("PATCH", path, patch, content_type=STRATEGIC_MERGE))


class PodStatusUpdates:
    """What the scheduler writes to pods' status: ``submit`` through the dispatcher, or
    ``write_now`` once, awaited (the binding cycle's nomination, best effort as upstream's)."""

    __slots__ = ("_client", "_current", "_dispatcher")

    def __init__(
        self, dispatcher: APIDispatcher, client: ApiClient, current: Callable[[Pod], Pod | None]
    ) -> None:
        self._dispatcher = dispatcher
        self._client = client
        self._current = current

    def submit(self, pod: Pod, condition: Mapping[str, Any] | None, nominated: str | None) -> None:
        """Write this change of ``pod``'s status soon; never blocks."""
        self._dispatcher.add(PodStatusPatchCall(pod, condition, nominated, self._current))

    async def write_now(self, pod: Pod, condition: Mapping[str, Any] | None, nominated: str | None) -> None:
        await patch_status(self._client, pod, condition, nominated)
