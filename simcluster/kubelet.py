"""A simulated kubelet: bound pods start Running and Ready, terminating pods go away.

Nothing runs; the kubelet only writes the status a real one would report, after a short
delay, so schedulers and controllers see the usual Pending → Running progression. There is
one kubelet per Node object: a pod bound to a node that does not exist stays Pending (until
such a node is created), as no kubelet would ever pick it up. Terminating pods are finished
on any node, as PodGC force-deletes the pods of missing nodes.
"""

from __future__ import annotations

import asyncio
import logging

from simcluster.api import Api, now
from simcluster.errors import ApiError
from simcluster.resources import BY_STORE_NAME
from simcluster.store import Event

log = logging.getLogger(__name__)
PODS = BY_STORE_NAME["pods"]


class SimKubelet:
    """Reacts to pod events for every node the store knows about."""

    def __init__(self, api: Api, delay: float = 0.05) -> None:
        self.api = api
        self.delay = delay
        self._pending: set[tuple[str, str, bool]] = set()  # (namespace, name, deleting?)
        self._ips = 0
        api.graceful_pod_deletion = True
        api.store.listeners.append(self._on_event)

    def close(self) -> None:
        self.api.graceful_pod_deletion = False
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    def _on_event(self, resource: str, event: Event) -> None:
        if resource == "nodes" and event.type == "ADDED":
            self._node_added(event.obj["metadata"]["name"])
            return
        if resource != "pods" or event.type == "DELETED":
            return
        pod = event.obj
        node = pod["spec"].get("nodeName")
        if not node:
            return
        meta = pod["metadata"]
        key = (meta["namespace"], meta["name"])
        deleting = bool(meta.get("deletionTimestamp"))
        if (*key, deleting) in self._pending:
            return
        if deleting:
            action = self._finish_deletion
        elif (pod.get("status") or {}).get("phase") == "Pending":
            action = self._start
        else:
            return
        self._pending.add((*key, deleting))
        asyncio.get_running_loop().call_later(self.delay, action, key, meta["uid"])

    def _node_added(self, node: str) -> None:
        """A new node's kubelet starts the pods already bound to it."""
        for entry in self.api.store.entries("pods"):
            pod = entry.obj
            if pod["spec"].get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Pending":
                key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
                if (*key, False) not in self._pending:
                    self._pending.add((*key, False))
                    asyncio.get_running_loop().call_later(
                        self.delay, self._start, key, pod["metadata"]["uid"]
                    )

    def _current(self, key: tuple[str, str], uid: str) -> dict | None:
        entry = self.api.store.entry("pods", *key)
        if entry is None or entry.obj["metadata"]["uid"] != uid:
            return None
        return entry.obj

    def _start(self, key: tuple[str, str], uid: str) -> None:
        self._pending.discard((*key, False))
        pod = self._current(key, uid)
        if (
            pod is None
            or pod["metadata"].get("deletionTimestamp")
            or pod.get("status", {}).get("phase") != "Pending"
        ):
            return
        node = self.api.store.entry("nodes", None, pod["spec"]["nodeName"])
        if node is None:
            return  # no such node, so no kubelet: the pod stays Pending
        host_ip = next(
            (
                a["address"]
                for a in (node.obj["status"].get("addresses") or [])
                if a.get("type") == "InternalIP"
            ),
            "10.0.0.1",
        )
        self._ips += 1
        n = self._ips
        pod_ip = f"10.{128 + (n >> 16) % 128}.{(n >> 8) & 255}.{n & 255}"
        stamp = now()
        old_conditions = [
            c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") == "PodScheduled"
        ]
        conditions = [
            {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
        ]
        status = {
            **pod.get("status", {}),
            "phase": "Running",
            "conditions": conditions + old_conditions,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": stamp,
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "containerID": f"containerd://{uid.replace('-', '')}{i}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": stamp}},
                }
                for i, c in enumerate(pod["spec"].get("containers") or [])
            ],
        }
        try:
            self.api.update(PODS, key[0], key[1], {**pod, "status": status}, "status")
        except ApiError as err:  # the pod changed under us; the next event brings it back
            log.debug("kubelet could not start %s/%s: %s", *key, err.message)

    def _finish_deletion(self, key: tuple[str, str], uid: str) -> None:
        self._pending.discard((*key, True))
        if self._current(key, uid) is None:
            return
        try:
            self.api.delete(PODS, key[0], key[1], {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
        except ApiError as err:
            log.debug("kubelet could not delete %s/%s: %s", *key, err.message)
