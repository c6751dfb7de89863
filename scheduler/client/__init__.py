"""Talking to the API server: auth, raw JSON requests, throttling, informers, events, pod writes.

Everything here speaks plain JSON (orjson) over kubernetes_asyncio's authenticated session;
the generated OpenAPI models are never built (DESIGN.md principle 2).
"""

from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.client.events import NORMAL, WARNING, EventRecorder
from scheduler.client.informer import EventHandler, Informer, InformerGroup, Store
from scheduler.client.pods import delete_pod, patch_pod_condition
from scheduler.client.ratelimit import RateLimiter
from scheduler.client.rest import ApiError, KubeClient, TransportError, raise_for_status

__all__ = [
    "NORMAL",
    "WARNING",
    "ApiError",
    "ClientConfigError",
    "EventHandler",
    "EventRecorder",
    "Informer",
    "InformerGroup",
    "KubeClient",
    "RateLimiter",
    "Store",
    "TransportError",
    "delete_pod",
    "load_client_config",
    "patch_pod_condition",
    "raise_for_status",
]
