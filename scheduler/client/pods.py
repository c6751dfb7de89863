"""The writes the scheduler makes to Pods besides binding: status conditions and deletion.

``patch_pod_condition`` follows upstream's updatePod + util.PatchPodStatus: the condition is
merged by ``type`` (lastTransitionTime kept while the status is unchanged), nothing is sent
when nothing changed, and the strategic-merge patch is retried on transient errors (500, 503,
409, connection failures) with client-go's DefaultBackoff (10 ms x5, 4 tries).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler.api import Pod
from scheduler.client.rest import ApiError, TransportError, raise_for_status
from scheduler.framework.interface import ApiClient

STRATEGIC_MERGE = "application/strategic-merge-patch+json"
RETRY_DELAYS = (0.01, 0.05, 0.25)  # between the 4 tries of retry.DefaultBackoff


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_path(pod: Pod) -> str:
    return f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"


def condition_patch(
    pod: Pod,
    condition: Mapping[str, Any] | None,
    nominated_node_name: str | None = None,
    *,
    now: str | None = None,
) -> dict[str, Any] | None:
    """The strategic-merge patch for ``pods/<name>/status``, or None when nothing would change.

    ``condition``: None leaves the conditions alone. ``nominated_node_name``: None leaves it
    alone, "" clears it, a name sets it.
    """
    status: dict[str, Any] = {}
    if condition is not None:
        status.update(_condition_change(pod, condition, now or rfc3339_now()))
    if nominated_node_name is not None and nominated_node_name != pod.nominated_node_name:
        status["nominatedNodeName"] = nominated_node_name or None
    return {"status": status} if status else None


def _condition_change(pod: Pod, condition: Mapping[str, Any], now: str) -> dict[str, Any]:
    """The ``conditions`` part of the patch (empty when the condition is already so)."""
    ctype = condition["type"]
    old = pod.condition(ctype)
    new = dict(condition)
    new["lastTransitionTime"] = now
    if old is not None and old.get("status") == new.get("status"):
        new["lastTransitionTime"] = old.get("lastTransitionTime")
    status: dict[str, Any] = {}
    if old is None or _differs(old, new):
        # Fields the old condition had and the new one lacks must be removed explicitly.
        removed = {k: None for k in old or () if k not in new}
        status["conditions"] = [{**removed, **new}]
        order = [c.get("type") for c in pod.conditions]
        status["$setElementOrder/conditions"] = [{"type": t} for t in (order if old else [*order, ctype])]
    return status


def _differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return any(old.get(k) != new.get(k) for k in {*old, *new})


async def patch_pod_condition(
    client: ApiClient,
    pod: Pod,
    condition: Mapping[str, Any] | None,
    nominated_node_name: str | None = None,
) -> bool:
    """Set ``condition`` (and optionally the nominated node) on the pod's status.

    Returns whether a request was needed. Raises ``ApiError`` once retries are exhausted or
    on a permanent error (404: the pod is gone).
    """
    patch = condition_patch(pod, condition, nominated_node_name)
    if patch is None:
        return False
    path = pod_path(pod) + "/status"
    for attempt in range(len(RETRY_DELAYS) + 1):
        try:
            raise_for_status(await client.request("PATCH", path, patch, content_type=STRATEGIC_MERGE))
            return True
        except ApiError as exc:
            if attempt == len(RETRY_DELAYS) or not _retriable(exc):
                raise
        await asyncio.sleep(RETRY_DELAYS[attempt] * (1.0 + 0.1 * random.random()))
    raise AssertionError("unreachable")


def _retriable(exc: ApiError) -> bool:
    # Upstream's util.Retriable: internal error, service unavailable, conflict, refused.
    return isinstance(exc, TransportError) or exc.status in (500, 503) or exc.is_conflict


async def delete_pod(client: ApiClient, pod: Pod, *, grace_period_seconds: int | None = None) -> bool:
    """Delete a preemption victim, guarded by its uid so a recreated namesake survives.

    Returns False when the pod was already gone (404, or a uid precondition failure, meaning
    the name now belongs to another pod); raises ``ApiError`` for other failures.
    """
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": pod.uid}}
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    resp = await client.request("DELETE", pod_path(pod), options)
    if resp.status == 404 or resp.status == 409:
        return False
    raise_for_status(resp)
    return True
