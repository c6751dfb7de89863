"""The API calls that carry a preemption out, off the scheduling loop (upstream's async preemption)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from scheduler.api import Pod
from scheduler.client.pods import STRATEGIC_MERGE, delete_pod, patch_pod_condition, pod_path
from scheduler.client.rest import ApiError, raise_for_status
from scheduler.framework import Handle, WaitingPods

log = logging.getLogger(__name__)

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def disruption_condition(preemptor: Pod) -> dict[str, Any]:
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
    }


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted because a scheduler preempted it (so its room is already promised)."""
    if not pod.is_terminating:
        return False
    condition = pod.condition(DISRUPTION_TARGET)
    return (
        condition is not None
        and condition.get("status") == "True"
        and condition.get("reason") == PREEMPTION_BY_SCHEDULER
    )


class Executor:
    """Evicts victims and clears displaced nominations as background tasks.

    The scheduling loop never waits for these calls. As upstream, a successful preemption does
    not activate the preemptor: it is retried when the victims' deletion reaches the cache (an
    assigned-pod delete event), so its next cycle sees the room it made. Activating it when the
    calls return instead let it run before the deletions arrived, find no room, and preempt a
    second node. Only a failed eviction, which sends no such event, activates it at once.
    """

    def __init__(self, handle: Handle, plugin_name: str, waiting_pods: Callable[[], WaitingPods]):
        self._handle = handle
        self._plugin_name = plugin_name
        self._waiting_pods = waiting_pods
        self._tasks: set[asyncio.Task[None]] = set()
        # preemptor uid -> its victims, while the API calls are under way (see holds_back)
        self._preempting: dict[str, Sequence[Pod]] = {}

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def wait(self) -> None:
        """Until every started preemption has finished its calls (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def holds_back(self, uid: str) -> bool:
        """Is this preemptor's preemption still under way? Until its calls return, unless the
        informer already shows every victim gone or terminating: a delete event that arrives
        before the calls return must be able to release the preemptor (as upstream's check of
        its last victim), since no later event would."""
        victims = self._preempting.get(uid)
        if victims is None:
            return False
        try:
            pods = self._handle.lister("pods")
        except KeyError:  # pods not listed (unit tests): held until the calls return
            return True
        return any(
            (seen := pods.get(victim.key)) is not None and seen.uid == victim.uid and not seen.is_terminating
            for victim in victims
        )

    def start(self, preemptor: Pod, node_name: str, victims: Sequence[Pod], displaced: Sequence[Pod]) -> None:
        """Evict ``victims`` (none of them terminating already) and clear ``displaced``'s nominations."""
        self._preempting[preemptor.uid] = tuple(victims)
        task = asyncio.get_running_loop().create_task(self._run(preemptor, node_name, victims, displaced))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(
        self, preemptor: Pod, node_name: str, victims: Sequence[Pod], displaced: Sequence[Pod]
    ) -> None:
        # Lower-priority pods nominated here may no longer fit: let them look elsewhere now.
        for pod in displaced:
            try:
                await self._clear_nomination(pod)
            except Exception as exc:
                log.warning("could not clear the nominated node of %s: %s", pod.key, exc)
        failed = True
        try:
            results = await asyncio.gather(
                *(self.preempt(preemptor, node_name, v) for v in victims), return_exceptions=True
            )
            failed = False
            for victim, result in zip(victims, results, strict=True):
                if isinstance(result, BaseException):
                    failed = True
                    log.warning("could not preempt %s for %s: %s", victim.key, preemptor.key, result)
        finally:
            self._preempting.pop(preemptor.uid, None)
            if failed:  # no delete event will come for a victim left in place: retry now
                self._handle.activate_pods([preemptor])

    async def preempt(self, preemptor: Pod, node_name: str, victim: Pod) -> None:
        """Reject a victim waiting at Permit, or mark it DisruptionTarget and delete it."""
        message = f"Preempted by pod {preemptor.uid} on node {node_name}"
        waiting = self._waiting_pods().get(victim.uid)
        if waiting is not None:
            waiting.reject(self._plugin_name, "preempted")
            message += " (in kube-scheduler memory)."
        else:
            client = self._handle.client
            try:
                await patch_pod_condition(client, victim, disruption_condition(preemptor))
            except ApiError as exc:
                if exc.is_not_found:
                    return  # already gone
                raise
            if not await delete_pod(client, victim):
                return
            log.info("preempted %s on %s for %s", victim.key, node_name, preemptor.key)
        self._handle.record_event(victim, "Normal", "Preempted", "Preempting", message)

    async def _clear_nomination(self, pod: Pod) -> None:
        if not pod.nominated_node_name:
            return
        body = {"status": {"nominatedNodeName": None}}
        path = pod_path(pod) + "/status"
        response = await self._handle.client.request("PATCH", path, body, content_type=STRATEGIC_MERGE)
        if response.status != 404:
            raise_for_status(response)
