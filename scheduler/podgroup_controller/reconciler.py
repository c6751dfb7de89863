"""Reconcile one PodGroup: read it and its pods, write the status ``status.next_status`` gives.

Reconciles of one group are serialised (a pod event and the group's own event may arrive
together); different groups run concurrently. Each status write is itself an event of the
group, which brings the next step of the phase rule, as in scheduler-plugins' controller.
``resync`` reconciles every group not yet final, for what events missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import Any

from scheduler.client.pods import rfc3339_now
from scheduler.client.rest import ApiError, KubeClient, raise_for_status
from scheduler.plugins.coscheduling.podgroup import GROUP, POD_GROUP_LABEL, VERSION
from scheduler.podgroup_controller.status import FINAL, next_status

log = logging.getLogger(__name__)


def group_path(namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/podgroups/{name}"


class Reconciler:
    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._locks: dict[str, asyncio.Lock] = {}  # one per group, until it is found gone

    async def reconcile(self, namespace: str, name: str) -> None:
        """Bring the group's status up to date; API trouble is logged (the next event retries)."""
        key = f"{namespace}/{name}"
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            try:
                exists = await self._reconcile(namespace, name)
            except ApiError as exc:  # an HTTP error or no answer at all
                log.warning("PodGroup %s: status not updated: %s", key, exc)
                return
        if not exists and self._locks.get(key) is lock:
            del self._locks[key]

    async def resync(self, namespaces: Collection[str] = ()) -> None:
        """Reconcile every PodGroup not Finished or Failed (of ``namespaces``; none: all)."""
        paths = [f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/podgroups" for ns in namespaces]
        for path in paths or [f"/apis/{GROUP}/{VERSION}/podgroups"]:
            try:
                listed = raise_for_status(await self.client.request("GET", path))
            except ApiError as exc:
                log.warning("PodGroups not resynced (%s): %s", path, exc)
                continue
            for group in listed.get("items") or []:
                meta = group.get("metadata") or {}
                if (group.get("status") or {}).get("phase") not in FINAL:
                    await self.reconcile(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    async def _reconcile(self, namespace: str, name: str) -> bool:
        """False when the group does not exist."""
        path = group_path(namespace, name)
        response = await self.client.request("GET", path)
        if response.status == 404:
            return False
        group: dict[str, Any] = raise_for_status(response)
        pods = raise_for_status(
            await self.client.request(
                "GET",
                f"/api/v1/namespaces/{namespace}/pods",
                params={"labelSelector": f"{POD_GROUP_LABEL}={name}"},
            )
        )
        status = next_status(group, pods.get("items") or [], rfc3339_now())
        if status is None:
            return True
        raise_for_status(
            await self.client.request(
                "PATCH",
                f"{path}/status",
                {"status": status},
                content_type="application/merge-patch+json",
            )
        )
        log.info("PodGroup %s/%s: phase %s", namespace, name, status.get("phase"))
        return True
