"""The services a profile's plugins may call (framework.Handle), backed by the running scheduler."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from scheduler.api import Pod
from scheduler.framework import ApiClient, NodeLister, ObjectLister


class FrameworkHandle:
    """One per profile. ``snapshot`` is the cache's current view (see scheduler.cache)."""

    def __init__(
        self,
        scheduler_name: str,
        client: ApiClient,
        snapshot: Callable[[], NodeLister],
        record_event: Callable[[Pod, str, str, str, str], None],
        nominated_pods: Callable[[str], Sequence[Pod]] = lambda _node: (),
        listers: dict[str, ObjectLister] | None = None,
        *,
        metrics: Any = None,
        activate: Callable[[Iterable[Pod]], None] = lambda _pods: None,
    ) -> None:
        self._scheduler_name = scheduler_name
        self._client = client
        self._snapshot = snapshot
        self._record_event = record_event
        self.nominated_pods = nominated_pods
        self._activate = activate
        # Kept by reference: the app fills it once the informers exist (they need the queue,
        # which needs the profiles).
        self.listers = listers if listers is not None else {}
        # SchedulerMetrics (or None): plugins report through the small methods below.
        self.metrics = metrics
        # The profile's Framework, set when it is built: PostFilter plugins such as
        # DefaultPreemption re-run the filters (upstream's Handle embeds the PluginsRunner).
        self.framework: Any = None

    @property
    def snapshot(self) -> NodeLister:
        return self._snapshot()

    @property
    def client(self) -> ApiClient:
        return self._client

    @property
    def scheduler_name(self) -> str:
        return self._scheduler_name

    def record_event(self, obj: Pod, event_type: str, reason: str, action: str, message: str) -> None:
        self._record_event(obj, event_type, reason, action, message)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self.nominated_pods(node_name)

    def activate_pods(self, pods: Iterable[Pod]) -> None:
        self._activate(pods)

    def lister(self, resource: str) -> ObjectLister:
        try:
            return self.listers[resource]
        except KeyError:
            raise KeyError(f"{resource} are not watched by this scheduler") from None

    def attach_framework(self, framework: Any) -> None:
        self.framework = framework

    def observe_preemption(self, victims: int | None) -> None:
        """One preemption attempt (``victims``: the chosen candidate's count, None without one)."""
        if self.metrics is not None:
            self.metrics.observe_preemption(victims)
