"""The shape the local endpoint's controllers share: store events mark objects dirty, and one
turn of the event loop later each marked object is reconciled once (many events about one object
in a burst cost one reconcile), in a stable order."""

from __future__ import annotations

import asyncio
import logging

from simcluster.api import Api
from simcluster.errors import ApiError
from simcluster.store import Event

log = logging.getLogger(__name__)


class Reconciler:
    """Subclasses say which objects an event concerns (``_on_event`` calling ``_mark``) and how
    to reconcile one (``_reconcile``); an API error there is logged and the others go on."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._dirty: set[tuple[str, str, str]] = set()  # (resource, namespace, name)
        self._scheduled = False
        api.store.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    def _on_event(self, resource: str, event: Event) -> None:
        raise NotImplementedError

    def _reconcile(self, resource: str, namespace: str, name: str) -> None:
        raise NotImplementedError

    @property
    def settled(self) -> bool:
        """Nothing is marked: every event so far has been reconciled."""
        return not self._scheduled

    def _mark(self, resource: str, namespace: str, name: str) -> None:
        self._dirty.add((resource, namespace, name))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        for resource, namespace, name in sorted(dirty):
            try:
                self._reconcile(resource, namespace, name)
            except ApiError as err:
                log.warning("reconcile %s %s/%s: %s", resource, namespace, name, err.message)
