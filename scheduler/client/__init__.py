"""Talking to the API server: auth, raw JSON requests, throttling, informers, pod writes.

Everything here speaks plain JSON (orjson) over our own HTTP/1.1 pool (``transport``), with the
credentials of a kubeconfig or the service account read as client-go does (``kubeconfig``); the
generated OpenAPI models are never built (docs/architecture.md, Principles: "Keep only what
scheduling reads").
"""

from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.client.informer import EventHandler, Informer, InformerGroup, Store
from scheduler.client.kubeconfig.clientconfig import ClientConfig
from scheduler.client.kubeconfig.errors import KubeconfigError
from scheduler.client.pods import delete_pod, patch_pod_condition
from scheduler.client.ratelimit import RateLimiter
from scheduler.client.rest import ApiError, KubeClient, TransportError, raise_for_status

__all__ = [
    "ApiError",
    "ClientConfig",
    "ClientConfigError",
    "EventHandler",
    "Informer",
    "InformerGroup",
    "KubeClient",
    "KubeconfigError",
    "RateLimiter",
    "Store",
    "TransportError",
    "delete_pod",
    "load_client_config",
    "patch_pod_condition",
    "raise_for_status",
]
