"""DefaultBinder: bind by POSTing a Binding to the pod's ``binding`` subresource."""

from __future__ import annotations

from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.framework import CycleState, Handle, Status
from scheduler.plugins import names


def binding_body(pod: Pod, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def _api_message(status: int, body: Any) -> str:
    """The message of a ``kind: Status`` answer, or something readable when the body is not one."""
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    if isinstance(body, dict) and body.get("reason"):
        return f"{body['reason']} (HTTP {status})"
    return f"binding failed with HTTP {status}"


class DefaultBinder:
    name: ClassVar[str] = names.DEFAULT_BINDER

    __slots__ = ("_handle",)

    def __init__(self, args: Any, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        try:
            response = await self._handle.client.request("POST", path, binding_body(pod, node_name))
        except Exception as exc:  # a transport failure is an internal error: retried with backoff
            # The answer was lost, not necessarily the binding: if it landed, the pod holds the
            # node already, and giving the node back now would let another pod take it too.
            if await self._bound_to(pod, node_name):
                return None
            return Status.from_error(exc)
        if response.status in (200, 201):
            return None
        if response.status == 409 and await self._bound_to(pod, node_name):
            return None  # an earlier attempt whose answer was lost went through
        return Status.from_error(BindingError(response.status, response.body))

    async def _bound_to(self, pod: Pod, node_name: str) -> bool:
        """Whether the API server has this very pod bound to ``node_name`` (False when unsure)."""
        try:
            response = await self._handle.client.request(
                "GET", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
            )
        except Exception:
            return False
        body = response.body if response.status == 200 else None
        if not isinstance(body, dict):
            return False
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        return bool(meta.get("uid") == pod.uid and spec.get("nodeName") == node_name)


class BindingError(RuntimeError):
    """The API server refused a binding; ``reason`` is the Status reason (e.g. ``Conflict``)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(_api_message(status, body))
        self.status = status
        self.reason = str(body.get("reason", "")) if isinstance(body, dict) else ""
        self.body = body
