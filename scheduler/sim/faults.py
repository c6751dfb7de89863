"""Run-time fault injection: error rates, latency, dropped watches, forced 410s, binding conflicts.

The request path asks the injector before doing any work, so an injected error leaves the
store untouched exactly like a request rejected by a real server's front door.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.sim.errors import ApiError, injected

if TYPE_CHECKING:
    from scheduler.sim.store import Store

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind")


@dataclass(slots=True)
class ErrorRule:
    verb: str | None  # None: every verb
    resource: str | None  # None: every resource
    rate: float
    code: int = 500
    retry_after: int | None = None

    def applies(self, verb: str, resource: str) -> bool:
        return (self.verb in (None, "*", verb)) and (self.resource in (None, "*", resource))


@dataclass(slots=True)
class LatencyRule:
    seconds: float
    verb: str | None = None
    resource: str | None = None

    def applies(self, verb: str, resource: str) -> bool:
        return (self.verb in (None, "*", verb)) and (self.resource in (None, "*", resource))


@dataclass(slots=True)
class FaultInjector:
    """Switchable faults; `clear()` restores a healthy server."""

    store: Store
    errors: list[ErrorRule] = field(default_factory=list)
    latencies: list[LatencyRule] = field(default_factory=list)
    gone_next_watch: list[str | None] = field(default_factory=list)
    binding_conflicts: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def set_error(
        self,
        verb: str | None,
        resource: str | None,
        rate: float,
        code: int = 500,
        retry_after: int | None = None,
    ) -> None:
        """Fail `rate` (0..1) of matching requests with `code` (429 answers carry Retry-After)."""
        if code == 429 and retry_after is None:
            retry_after = 1
        self.errors = [e for e in self.errors if (e.verb, e.resource) != (verb, resource)]
        if rate > 0:
            self.errors.append(ErrorRule(verb, resource, rate, code, retry_after))

    def set_latency(self, seconds: float, verb: str | None = None, resource: str | None = None) -> None:
        self.latencies = [lat for lat in self.latencies if (lat.verb, lat.resource) != (verb, resource)]
        if seconds > 0:
            self.latencies.append(LatencyRule(seconds, verb, resource))

    def drop_watches(self, resource: str | None = None) -> int:
        """End open watch streams (as a restarting apiserver would); returns how many."""
        dropped = self.store.watchers(resource)
        for watcher in dropped:
            watcher.close()
        return len(dropped)

    def force_gone_next_watch(self, resource: str | None = None) -> None:
        self.gone_next_watch.append(resource)

    def compact(self) -> None:
        self.store.compact()

    def conflict_next_bindings(self, n: int) -> None:
        self.binding_conflicts = n

    def clear(self) -> None:
        self.errors.clear()
        self.latencies.clear()
        self.gone_next_watch.clear()
        self.binding_conflicts = 0

    # ---- consulted by the request path ---------------------------------------------------

    def latency(self, verb: str, resource: str) -> float:
        return sum(lat.seconds for lat in self.latencies if lat.applies(verb, resource))

    def check(self, verb: str, resource: str) -> None:
        for rule in self.errors:
            if rule.applies(verb, resource) and self.rng.random() < rule.rate:
                raise injected(rule.code, rule.retry_after)

    def take_gone(self, resource: str) -> bool:
        for i, wanted in enumerate(self.gone_next_watch):
            if wanted in (None, resource):
                del self.gone_next_watch[i]
                return True
        return False

    def take_binding_conflict(self) -> bool:
        if self.binding_conflicts > 0:
            self.binding_conflicts -= 1
            return True
        return False

    # ---- admin API (JSON in/out) -----------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "errors": [asdict(e) for e in self.errors],
            "latencies": [asdict(lat) for lat in self.latencies],
            "goneNextWatch": list(self.gone_next_watch),
            "bindingConflicts": self.binding_conflicts,
            "watchers": len(self.store.watchers()),
            "revision": self.store.revision,
        }

    def apply(self, command: dict[str, Any]) -> dict[str, Any]:
        """Execute one admin command, e.g. {"action": "setError", "verb": "create", "rate": 1}."""
        action = command.get("action")
        try:
            if action == "setError":
                self.set_error(
                    command.get("verb"),
                    command.get("resource"),
                    float(command["rate"]),
                    int(command.get("code", 500)),
                    command.get("retryAfter"),
                )
            elif action == "setLatency":
                self.set_latency(float(command["seconds"]), command.get("verb"), command.get("resource"))
            elif action == "dropWatches":
                return {**self.describe(), "dropped": self.drop_watches(command.get("resource"))}
            elif action == "forceGoneNextWatch":
                self.force_gone_next_watch(command.get("resource"))
            elif action == "compact":
                self.compact()
            elif action == "conflictNextBindings":
                self.conflict_next_bindings(int(command["n"]))
            elif action == "clear":
                self.clear()
            else:
                raise ApiError(400, "BadRequest", f"unknown fault action {action!r}")
        except (KeyError, TypeError, ValueError) as err:
            raise ApiError(400, "BadRequest", f"bad fault command {command!r}: {err}") from err
        return self.describe()
