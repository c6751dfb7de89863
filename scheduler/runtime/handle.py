"""The services a profile's plugins may call (``framework.Handle``), backed by the running scheduler."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from scheduler.api import Pod
from scheduler.framework import ApiClient, NodeLister, ObjectLister
from scheduler.framework.clock import REAL_CLOCK, Clock
from scheduler.framework.interface import (
    Extender,
    PluginMetrics,
    PluginsRunner,
    PodGroups,
    PodGroupState,
    WaitingPods,
)

if TYPE_CHECKING:
    from scheduler.runtime.framework import Framework


class NoPodGroups:
    """The pod groups of a handle built without any (GenericWorkload off): no pod is in one."""

    def get(self, namespace: str, name: str) -> PodGroupState | None:
        return None


class FrameworkHandle:
    """One per profile. ``snapshot`` is the cache's current view (see scheduler.cache); the
    profile's Framework is attached once built (``attach``), for ``plugins_runner`` and
    ``waiting_pods``. ``listers`` is shared and filled once the informers exist."""

    def __init__(
        self,
        scheduler_name: str,
        client: ApiClient,
        snapshot: Callable[[], NodeLister],
        record_event: Callable[[Pod, str, str, str, str], None],
        nominated_pods: Callable[[str], Sequence[Pod]] = lambda _node: (),
        listers: Mapping[str, ObjectLister] | None = None,
        *,
        metrics: PluginMetrics | None = None,
        activate: Callable[[Iterable[Pod]], None] = lambda _pods: None,
        clock: Clock = REAL_CLOCK,
        extenders: Sequence[Extender] = (),
        pod_groups: PodGroups | None = None,
    ) -> None:
        self._scheduler_name = scheduler_name
        self._client = client
        self._snapshot = snapshot
        self._record_event = record_event
        self._nominated_pods = nominated_pods
        self._activate = activate
        self._listers = listers if listers is not None else {}
        self._metrics = metrics
        self._clock = clock
        self._extenders = tuple(extenders)
        self._pod_groups = pod_groups if pod_groups is not None else NoPodGroups()
        self._framework: Framework | None = None

    def attach(self, framework: Framework) -> None:
        self._framework = framework

    @property
    def snapshot(self) -> NodeLister:
        return self._snapshot()

    @property
    def client(self) -> ApiClient:
        return self._client

    @property
    def scheduler_name(self) -> str:
        return self._scheduler_name

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def metrics(self) -> PluginMetrics | None:
        return self._metrics

    @property
    def plugins_runner(self) -> PluginsRunner:
        return self._attached()

    @property
    def waiting_pods(self) -> WaitingPods:
        return self._attached().waiting_pods

    @property
    def extenders(self) -> Sequence[Extender]:
        return self._extenders

    @property
    def pod_groups(self) -> PodGroups:
        return self._pod_groups

    def record_event(self, obj: Pod, event_type: str, reason: str, action: str, message: str) -> None:
        self._record_event(obj, event_type, reason, action, message)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self._nominated_pods(node_name)

    def activate_pods(self, pods: Iterable[Pod]) -> None:
        self._activate(pods)

    def lister(self, resource: str) -> ObjectLister:
        try:
            return self._listers[resource]
        except KeyError:
            raise KeyError(f"{resource} are not watched by this scheduler") from None

    def _attached(self) -> Framework:
        if self._framework is None:
            raise RuntimeError(f"profile {self._scheduler_name!r} is still being built")
        return self._framework
