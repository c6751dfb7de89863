"""Scheduler extenders: the HTTP services of ``extenders:`` in the KubeSchedulerConfiguration.

As upstream, extenders are shared by every profile and called in the configured order, the
ignorable ones last: after the Filter plugins (each one gets the nodes the previous ones left;
its failed nodes get its messages as Unschedulable or UnschedulableAndUnresolvable statuses),
next to the Score plugins (``score * weight * MaxNodeScore/10`` added to the totals; a failure
only loses that extender's scores), in DefaultPreemption (the candidates and their victims, see
``preemptVerb``) and before the Bind plugins (an interested extender with ``bindVerb`` binds).
An extender with ``managedResources`` only sees pods that request or limit one of them. A
failing ``ignorable`` extender is skipped (one log line per failure); any other fails the
attempt with its error, as upstream words it.

How the calls fit the synchronous scheduling cycle
--------------------------------------------------
Upstream calls extenders synchronously inside its cycle; its goroutines keep the process alive
meanwhile. Here everything shares one event loop, so blocking it for an HTTP call (a worker
thread with a bounded wait) would stall the informers, the bindings, ``/healthz`` and the Lease
renewal for up to ``httpTimeout`` per call — a slow extender could cost the leadership — and would
deadlock with an extender served in the same process. So the cycle *awaits* the calls, between
its synchronous parts, and keeps its guarantee another way: while it decides, it holds the cache
(``Cache.held``), so the informers' and the bindings' changes that arrive during an extender call
are applied, in order, only once the pod is decided. The cycle thus works on one consistent
picture, exactly as upstream's works on the snapshot it took at its start, and cycles stay
sequential (the next pod is popped only when this one is assumed), so two decisions still never
overbook a node. Without extenders nothing suspends and the cycle runs as before. What is not
held is what upstream does not snapshot either: the queue, nominations and the listers.

``ApiObjects`` keeps the API JSON the extenders are sent (upstream sends whole objects; the
scheduler's views keep only what scheduling reads).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from scheduler.config import Extender as ExtenderConfig
from scheduler.config import NodeResourcesFitArgs, SchedulerConfiguration
from scheduler.extender.client import (
    DEFAULT_EXTENDER_TIMEOUT,
    MAX_EXTENDER_PRIORITY,
    ExtenderConfigError,
    ExtenderError,
    FilterResult,
    HTTPExtender,
    close_all,
    tls_context,
)
from scheduler.extender.objects import ApiObjects

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "MAX_EXTENDER_PRIORITY",
    "ApiObjects",
    "ExtenderConfigError",
    "ExtenderError",
    "FilterResult",
    "HTTPExtender",
    "build_extenders",
    "close_all",
    "tls_context",
]

_FIT = "NodeResourcesFit"


def build_extenders(config: SchedulerConfiguration) -> tuple[list[HTTPExtender], ApiObjects | None]:
    """The configured extenders, non-ignorable first (upstream's buildExtenders), and what the
    informers must keep for them (None without extenders). Resources managed by an extender with
    ``ignoredByScheduler`` become every profile's NodeResourcesFit ``ignoredResources``, and an
    unset ``httpTimeout`` becomes 5s, in ``config`` itself, as upstream. Raises
    ExtenderConfigError (bad TLS material, no NodeResourcesFit args)."""
    configs: Sequence[ExtenderConfig] = config.extenders
    if not configs:
        return [], None
    objects = ApiObjects.for_extenders(list(configs))
    for c in configs:
        # upstream writes its default into the configuration, so /configz shows it
        c.http_timeout = c.http_timeout or DEFAULT_EXTENDER_TIMEOUT
    extenders = [HTTPExtender(c, objects) for c in configs]
    extenders.sort(key=lambda e: e.is_ignorable())  # stable: the configured order otherwise
    ignored = [r.name for c in configs for r in c.managed_resources if r.ignored_by_scheduler]
    if ignored:
        for profile in config.profiles:
            args = profile.plugin_config.get(_FIT)
            if not isinstance(args, NodeResourcesFitArgs):
                raise ExtenderConfigError("can't find NodeResourcesFitArgs in plugin config")
            profile.plugin_config[_FIT] = dataclasses.replace(args, ignored_resources=list(ignored))
    return extenders, objects
