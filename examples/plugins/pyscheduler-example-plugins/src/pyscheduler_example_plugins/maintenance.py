"""MaintenanceWindow: hold pods before binding while a maintenance window is open.

The window is one ConfigMap (``configMap``, "namespace/name"): while its ``data.state`` is
``open`` every pod of the profile (outside ``exemptNamespaces``) waits at Permit after its node
was chosen, with a ``Normal MaintenanceWindowOpen`` event saying so; once the state is anything
else, or the ConfigMap is gone, the waiting pods are allowed and bound. ``data.reason``, when
present, is quoted in the event. A waiting pod keeps its node's resources reserved, as every
Permit wait does.

    kubectl -n kube-system create configmap maintenance-window --from-literal=state=open \\
        --from-literal=reason="kernel upgrades"
    kubectl -n kube-system patch configmap maintenance-window -p '{"data":{"state":"closed"}}'

The plugin reads the ConfigMap through ``handle.lister("v1/configmaps")`` (declared in
``watches``, so the scheduler lists and watches ConfigMaps and needs ``list``/``watch`` on them)
and checks every ``checkIntervalSeconds`` in the background whether it may let its pods go. A
pod not let go within ``timeoutSeconds`` is rejected with upstream's timeout message and goes
back to the queue; a change of the window's ConfigMap brings it back to be scheduled again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    Pod,
    QueueingHint,
    Status,
)

log = logging.getLogger(__name__)

CONFIG_MAPS = "v1/configmaps"
# A Permit wait is cut to 15 minutes by the framework (as upstream's); say so at start instead.
MAX_TIMEOUT_SECONDS = 15 * 60


@dataclass
class MaintenanceWindowArgs:
    """``pluginConfig`` args of MaintenanceWindow."""

    # the ConfigMap that opens and closes the window, "namespace/name"
    config_map: str = "kube-system/maintenance-window"
    # how long a pod may wait at Permit before it is rejected (and retried later)
    timeout_seconds: float = 600.0
    # how often the background check looks whether the window has closed
    check_interval_seconds: float = 5.0
    # pods of these namespaces are never held
    exempt_namespaces: list[str] = field(default_factory=lambda: ["kube-system"])

    def validate(self) -> list[str]:
        errors = []
        namespace, _, name = self.config_map.partition("/")
        if not namespace or not name or "/" in name:
            errors.append(f"configMap: Invalid value: {self.config_map!r}: must be namespace/name")
        if not 0 < self.timeout_seconds <= MAX_TIMEOUT_SECONDS:
            errors.append(
                f"timeoutSeconds: Invalid value: {self.timeout_seconds:g}: must be more than 0 "
                f"and at most {MAX_TIMEOUT_SECONDS} (the longest Permit wait)"
            )
        if self.check_interval_seconds <= 0:
            errors.append(
                f"checkIntervalSeconds: Invalid value: {self.check_interval_seconds:g}: must be more than 0"
            )
        return errors


def window_reason(config_map: Mapping[str, Any] | None) -> str | None:
    """Why the window is open ("" when no reason is given), or None when it is closed."""
    data = (config_map or {}).get("data") or {}
    if str(data.get("state", "")).strip().lower() != "open":
        return None
    return str(data.get("reason") or "")


class MaintenanceWindow:
    """Permit plugin with background work (see the module docstring)."""

    name: ClassVar[str] = "MaintenanceWindow"
    args_type: ClassVar[type] = MaintenanceWindowArgs
    watches: ClassVar[tuple[str, ...]] = (CONFIG_MAPS,)

    def __init__(self, args: MaintenanceWindowArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    def reason(self) -> str | None:
        """Why the window is open now, or None when it is closed."""
        return window_reason(self.handle.lister(CONFIG_MAPS).get(self.args.config_map))

    # -- Permit: in the scheduling cycle, so synchronous and quick (one dict lookup)

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if pod.namespace in self.args.exempt_namespaces:
            return None, 0.0
        reason = self.reason()
        if reason is None:
            return None, 0.0
        why = f" ({reason})" if reason else ""
        self.handle.record_event(
            pod,
            "Normal",
            "MaintenanceWindowOpen",
            "Waiting",
            f"waiting to bind to {node_name} until maintenance window {self.args.config_map} closes{why}",
        )
        waiting = Status(Code.WAIT, (f"maintenance window {self.args.config_map} is open",))
        return waiting, self.args.timeout_seconds

    # -- background: let the held pods go once the window closes

    async def run_in_background(self) -> None:
        while True:
            await self.handle.clock.sleep(self.args.check_interval_seconds)
            if self.reason() is None:
                self.release()

    def release(self) -> int:
        """Allow every pod this plugin holds; returns how many."""
        held = [waiting for waiting in self.handle.waiting_pods if self.name in waiting.pending_plugins]
        for waiting in held:
            waiting.allow(self.name)
        if held:
            log.info("maintenance window %s closed: %d pod(s) may bind", self.args.config_map, len(held))
        return len(held)

    # -- queueing: a pod rejected on timeout comes back when the window's ConfigMap changes

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(CONFIG_MAPS, ActionType.ALL), self._window_changed)]

    def _window_changed(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        meta = (new or old or {}).get("metadata") or {}
        if f"{meta.get('namespace')}/{meta.get('name')}" != self.args.config_map:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if window_reason(new) is None else QueueingHint.SKIP
