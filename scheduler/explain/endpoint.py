"""``/debug/explain?namespace=&name=[&profile=]``: explain against the running scheduler's cache.

Served on the scheduler's port behind the same authentication and authorization as /metrics (the
server's middleware guards every path). The answer is ``Explanation.to_dict`` as JSON, or
``{"error": ...}`` with 400, 404 or 409.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web

from scheduler.api import Pod
from scheduler.explain.evaluate import explain_pod
from scheduler.explain.lookup import ExplainRefused, pending_pod
from scheduler.schedule_one import Scheduler


def explain_handler(
    scheduler: Scheduler, current_pod: Callable[[str], Pod | None]
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``current_pod`` is the pod informer's copy by "namespace/name"."""

    async def handle(request: web.Request) -> web.Response:
        namespace = request.query.get("namespace") or "default"
        name = request.query.get("name", "")
        if not name:
            return _json({"error": "the name query parameter is required"}, 400)
        key = f"{namespace}/{name}"
        try:
            pod, fwk = pending_pod(
                current_pod(key), key, scheduler.frameworks, request.query.get("profile", "")
            )
        except ExplainRefused as refused:
            return _json({"error": str(refused)}, refused.status)
        explanation = await explain_pod(scheduler, fwk, pod)
        return _json(explanation.to_dict(), 200)

    return handle


def _json(body: object, status: int) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")
