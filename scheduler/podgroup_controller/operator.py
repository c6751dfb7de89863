"""The kopf operator: which events reconcile which PodGroup, and how kopf logs in.

kopf watches PodGroups and the pods carrying the group label (``on.event`` handlers: nothing
is stored on the objects, no finalizers, no progress annotations) and hands each event to the
``Reconciler``. The pods' watch asks the API server for labelled pods only, so the controller
neither receives nor keeps the cluster's other pods. Events alone would leave a status stale
after one is missed (a failed write, a restart of the API server's watch cache), so every
group not yet final is also reconciled every ``resync_seconds``, as controller-runtime's
periodic resync does. It runs standalone (one replica; no peering objects needed).

kopf logs in with an aiohttp session made here (``KopfLogin``) rather than from a
``kopf.ConnectionInfo``, which has no place for a kubeconfig's ``tls-server-name`` or the
environment's proxies and would write key data to temporary files: the session's TLS is the
kubeconfig's (tls-server-name pinned in the context, keys from memory, an exec plugin's client
certificate and its rotations), its proxy is chosen by pyscheduler's client rules (aiohttp has
no SOCKS5: such a proxy is refused at start), and it carries the credentials' current
Authorization. kopf logs in again after a 401, and the credential refused is then fetched anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import urllib.parse
import warnings
from collections.abc import Collection, Mapping
from typing import Any

import aiohttp
import kopf

from scheduler.client.kubeconfig.clientconfig import ClientConfig
from scheduler.client.transport import ProxyError, proxy_for
from scheduler.plugins.coscheduling.podgroup import GROUP, POD_GROUP_LABEL, VERSION
from scheduler.podgroup_controller.reconciler import Reconciler

log = logging.getLogger(__name__)

# how often every group not yet final is reconciled without an event
RESYNC_SECONDS = 300.0


class KopfLogin:
    """What kopf logs in with: a new aiohttp session for each login (kopf closes the old one).
    Raises ProxyError when the proxy is one aiohttp cannot use."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        parts = urllib.parse.urlsplit(config.server)
        port = parts.port or (443 if config.https else 80)
        proxy = proxy_for(parts.scheme, parts.hostname or "", port, config.proxy_url)
        if proxy is not None and proxy.socks:
            raise ProxyError(
                f"the PodGroup controller's API client (kopf's aiohttp) cannot use the {proxy.describe()} "
                "(http:// and https:// proxies only)"
            )
        self._proxy = proxy.url if proxy is not None else None
        self._proxy_user = (proxy.username, proxy.password) if proxy and proxy.username is not None else None
        self._sent: str | None = None  # the Authorization of the last login
        self._session: aiohttp.ClientSession | None = None
        self._closing: asyncio.Task[None] | None = None
        config.credentials.on_certificate_change(self._certificate_changed)

    async def login(self) -> kopf.AiohttpSession:
        credentials = self._config.credentials
        if self._sent is not None:  # kopf logs in again after a 401: that credential was refused
            credentials.invalidate(self._sent)
        self._sent = authorization = await credentials.authorization()
        headers = {"Authorization": authorization} if authorization else {}
        context = self._config.ssl_context(pin_server_name=True)
        with warnings.catch_warnings():
            # the proxy's credentials: a session-wide proxy_auth is the one way aiohttp sends them
            # both with plain requests and with a CONNECT (deprecated for aiohttp 4)
            warnings.simplefilter("ignore", DeprecationWarning)
            proxy_auth = aiohttp.BasicAuth(*self._proxy_user) if self._proxy_user else None
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=context if context is not None else True),
                headers=headers,
                proxy=self._proxy,
                proxy_auth=proxy_auth,
                trust_env=False,  # no ~/.netrc, no environment read per request
            )
        return kopf.AiohttpSession(
            server=self._config.server,
            aiohttp_session=self._session,
            default_namespace=self._config.namespace or None,
        )

    def _certificate_changed(self) -> None:
        """A rotated client certificate: the session's connections go with the old one. kopf
        finds the session closed, logs in again and gets a new one."""
        session = self._session
        if session is not None and not session.closed:
            self._closing = asyncio.get_running_loop().create_task(session.close())


def configure(settings: kopf.OperatorSettings) -> None:
    settings.posting.enabled = False  # status says it all; no Event per handled change
    settings.watching.server_timeout = 300
    # server-side filtering: only the group's members come over the wire (the handler's own
    # ``labels`` filter would still receive every pod of the cluster and drop them here)
    settings.watching.label_selectors["", "v1", "pods"] = POD_GROUP_LABEL


def registry(reconciler: Reconciler, config: ClientConfig) -> kopf.OperatorRegistry:
    handlers = kopf.OperatorRegistry()
    kopf_login = KopfLogin(config)

    @kopf.on.login(registry=handlers)
    async def login(**_: Any) -> kopf.AiohttpSession:
        return await kopf_login.login()

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
