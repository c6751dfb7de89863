"""``build_scheduler``: the cache, the queue, one Framework per profile and the Scheduler, wired.

The app, the benchmarks, the tools and the tests all build the scheduler this one way; what
differs between them is only what they pass in (a real API client or a scripted one, an event
recorder or a list, real or fake time).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.api import Node, Pod
from scheduler.cache import Cache
from scheduler.cache.pod_groups import PodGroupMembers
from scheduler.client.informer import EventHandler
from scheduler.config import SchedulerConfiguration
from scheduler.eventhandlers import NodeEvents, PodEvents
from scheduler.extender import ApiObjects, ExtenderConfigError, HTTPExtender, build_extenders
from scheduler.features import (
    DEFAULT_FEATURES,
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    FeatureGates,
)
from scheduler.framework import ApiClient, ObjectLister, PluginFactory
from scheduler.framework.clock import REAL_CLOCK, Clock
from scheduler.queue import ProfilesPolicy, SchedulingQueue
from scheduler.runtime import Framework, FrameworkError
from scheduler.runtime.handle import FrameworkHandle
from scheduler.schedule_one import EventSink, Scheduler, StatusSink
from scheduler.schedule_one_podgroup import PodGroupCycle

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics


class DiscardEvents:
    """Events go nowhere (offline checks, benchmarks)."""

    def record(self, obj: object, event_type: str, reason: str, action: str, note: str) -> None:
        pass


class DiscardStatus:
    """Pod status writes go nowhere (offline checks, benchmarks)."""

    def submit(self, pod: Pod, condition: dict[str, Any] | None, nominated: str | None) -> None:
        pass

    async def write_now(self, pod: Pod, condition: dict[str, Any] | None, nominated: str | None) -> None:
        pass


@dataclass(slots=True)
class SchedulerParts:
    cache: Cache
    queue: SchedulingQueue
    frameworks: dict[str, Framework]
    scheduler: Scheduler
    # the Pod and Node informers' handlers (pod group members kept first with GenericWorkload)
    pod_events: EventHandler[Pod]
    node_events: EventHandler[Node]
    extenders: list[HTTPExtender]  # closed at shutdown
    # what the pod and node informers keep for the extenders (None without extenders)
    api_objects: ApiObjects | None = None
    # pod group membership, kept from the pod informer (None unless GenericWorkload is on)
    pod_groups: PodGroupMembers | None = None


def build_scheduler(
    config: SchedulerConfiguration,
    registry: Mapping[str, PluginFactory],
    client: ApiClient,
    *,
    events: EventSink,
    status: StatusSink,
    current_pod: Callable[[Pod], Pod | None],
    listers: Mapping[str, ObjectLister] | None = None,
    metrics: SchedulerMetrics | None = None,
    clock: Clock = REAL_CLOCK,
    rng: random.Random | None = None,
    max_inflight_bindings: int = 256,
    features: FeatureGates = DEFAULT_FEATURES,
    max_in_unschedulable: float = 300.0,
) -> SchedulerParts:
    """Every profile of ``config`` built from ``registry`` (FrameworkError names what is wrong).

    ``events.record`` receives every event; ``listers`` (shared, may be filled later) backs
    ``handle.lister``; ``current_pod`` is the informer's copy of a pod; ``max_in_unschedulable``
    is how long a pod waits in the unschedulable pool at most (upstream's
    podMaxInUnschedulablePodsDuration, five minutes).
    """
    try:
        extenders, api_objects = build_extenders(config)
    except ExtenderConfigError as exc:
        raise FrameworkError(f"couldn't build extenders: {exc}") from exc
    cache = Cache(metrics=metrics, clock=clock.now)
    queue: SchedulingQueue | None = None
    listers = {} if listers is None else listers
    members = PodGroupMembers(cache) if features.enabled(GENERIC_WORKLOAD) else None

    def the_queue() -> SchedulingQueue:
        assert queue is not None, "the queue is built right after the profiles"
        return queue

    frameworks: dict[str, Framework] = {}
    for index, profile in enumerate(config.profiles):
        handle = FrameworkHandle(
            profile.scheduler_name,
            client,
            cache.snapshot,
            events.record,
            lambda node: the_queue().nominated_pods_for_node(node),
            listers,
            metrics=metrics,
            activate=lambda pods: the_queue().activate(pods),
            clock=clock,
            extenders=extenders,
            pod_groups=members,
        )
        try:
            framework = Framework(
                profile,
                registry,
                handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                clock=clock,
                metrics=metrics,
                features=features,
            )
        except FrameworkError as exc:
            raise FrameworkError(f"profiles[{index}] ({profile.scheduler_name}): {exc}") from exc
        handle.attach(framework)
        frameworks[profile.scheduler_name] = framework
    first = frameworks[config.profiles[0].scheduler_name]
    queue = SchedulingQueue(
        sort_key=first.sort_key,
        policy=ProfilesPolicy(frameworks),
        initial_backoff=config.pod_initial_backoff_seconds,
        max_backoff=config.pod_max_backoff_seconds,
        max_in_unschedulable=max_in_unschedulable,
        clock=clock.now,
        metrics=metrics,
    )
    scheduler = Scheduler(
        cache=cache,
        queue=queue,
        frameworks=frameworks,
        events=events,
        status=status,
        current_pod=current_pod,
        metrics=metrics,
        max_inflight_bindings=max_inflight_bindings,
        rng=rng,
        extenders=extenders,
    )
    if members is not None:
        scheduler.pod_groups = PodGroupCycle(
            scheduler,
            members,
            listers,
            client,
            topology_aware=features.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING),
            metrics=metrics.pod_groups() if metrics is not None else None,
            rng=rng,
        )
    names = [profile.scheduler_name for profile in config.profiles]
    pod_events: EventHandler[Pod] = PodEvents(cache, queue, names, scheduler.reject_waiting)
    if members is not None:  # members are known before the pod is queued
        pod_events = members.handler(pod_events, queue, wake_gangs=features.enabled(GANG_SCHEDULING))
    node_events = NodeEvents(cache, queue)
    return SchedulerParts(
        cache, queue, frameworks, scheduler, pod_events, node_events, extenders, api_objects, members
    )
