"""The kopf operator: which events reconcile which PodGroup, and how kopf logs in.

kopf watches PodGroups and the pods carrying the group label (``on.event`` handlers: nothing
is stored on the objects, no finalizers, no progress annotations) and hands each event to the
``Reconciler``. The pods' watch asks the API server for labelled pods only, so the controller
neither receives nor keeps the cluster's other pods. Events alone would leave a status stale
after one is missed (a failed write, a restart of the API server's watch cache), so every
group not yet final is also reconciled every ``resync_seconds``, as controller-runtime's
periodic resync does. It runs standalone (one replica; no peering objects needed) and logs in
with the credentials pyscheduler's kubeconfig loader found.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any

import kopf

from scheduler.client.kubeconfig import ClientConfig
from scheduler.plugins.coscheduling.podgroup import GROUP, POD_GROUP_LABEL, VERSION
from scheduler.podgroup_controller.reconciler import Reconciler

log = logging.getLogger(__name__)

# how often every group not yet final is reconciled without an event
RESYNC_SECONDS = 300.0


async def connection_info(config: ClientConfig) -> kopf.ConnectionInfo:
    """What kopf needs to reach the API server as ``config`` does."""
    scheme = token = None
    authorization = await config.credentials.authorization()
    if authorization:
        scheme, _, token = authorization.partition(" ")
    return kopf.ConnectionInfo(
        server=config.server,
        ca_path=config.certificate_authority,
        ca_data=config.certificate_authority_data,
        insecure=config.insecure_skip_tls_verify,
        scheme=scheme,
        token=token,
        certificate_path=config.client_certificate,
        certificate_data=config.client_certificate_data,
        private_key_path=config.client_key,
        private_key_data=config.client_key_data,
        proxy_url=config.proxy_url,
    )


def configure(settings: kopf.OperatorSettings) -> None:
    settings.posting.enabled = False  # status says it all; no Event per handled change
    settings.watching.server_timeout = 300
    # server-side filtering: only the group's members come over the wire (the handler's own
    # ``labels`` filter would still receive every pod of the cluster and drop them here)
    settings.watching.label_selectors["", "v1", "pods"] = POD_GROUP_LABEL


def registry(reconciler: Reconciler, config: ClientConfig) -> kopf.OperatorRegistry:
    handlers = kopf.OperatorRegistry()

    @kopf.on.login(registry=handlers)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await connection_info(config)

    @kopf.on.startup(registry=handlers)
    def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure(settings)

    @kopf.on.event(GROUP, VERSION, "podgroups", registry=handlers)
    async def podgroup_changed(*, name: str, namespace: str | None, **_: Any) -> None:
        if namespace:  # a deletion too: the reconcile finds it gone and forgets the group
            await reconciler.reconcile(namespace, name)

    @kopf.on.event("", "v1", "pods", labels={POD_GROUP_LABEL: kopf.PRESENT}, registry=handlers)
    async def member_changed(*, labels: Mapping[str, str], namespace: str | None, **_: Any) -> None:
        if namespace:
            await reconciler.reconcile(namespace, labels[POD_GROUP_LABEL])

    return handlers


async def run(
    config: ClientConfig,
    reconciler: Reconciler,
    *,
    namespaces: Collection[str] = (),
    liveness_endpoint: str | None = None,
    stop_flag: threading.Event | None = None,
    ready_flag: threading.Event | None = None,
    resync_seconds: float = RESYNC_SECONDS,
) -> None:
    """Run until ``stop_flag`` is set (or the process is signalled); every namespace unless
    ``namespaces`` names some."""
    resync = asyncio.create_task(_resync_forever(reconciler, namespaces, resync_seconds))
    try:
        await kopf.operator(
            registry=registry(reconciler, config),
            standalone=True,
            clusterwide=not namespaces,
            namespaces=list(namespaces),
            liveness_endpoint=liveness_endpoint,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    finally:
        resync.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await resync


async def _resync_forever(reconciler: Reconciler, namespaces: Collection[str], every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await reconciler.resync(namespaces)
        except Exception:  # a bug in one round must not end the resyncs for good
            log.exception("PodGroup resync failed; retrying in %.0f s", every)
