"""A QueuePolicy over the configured profiles, chosen by each pod's ``schedulerName``.

All profiles share one queue (upstream requires them to share the QueueSort plugin too), so
PreEnqueue and queueing hints are looked up per pod. Registrations are read once: plugins declare
their events at construction and never change them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from scheduler.api import Pod
from scheduler.framework import ClusterEventWithHint, Status
from scheduler.queue.gangs import Gang


class Profile(Protocol):
    """The part of a profile's framework runtime the queue uses."""

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]: ...

    def events_to_register(self) -> Mapping[str, Sequence[ClusterEventWithHint]]: ...

    def gang_of(self, pod: Pod) -> tuple[str, str] | None:
        """(gang plugin, gang key) when the profile schedules ``pod`` all or nothing."""


class ProfilesPolicy:
    __slots__ = ("_hints", "_profiles")

    def __init__(self, profiles: Mapping[str, Profile]) -> None:
        self._profiles = dict(profiles)
        self._hints = {name: dict(profile.events_to_register()) for name, profile in profiles.items()}

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        profile = self._profiles.get(pod.scheduler_name)
        return profile.pre_enqueue(pod) if profile is not None else ("", None)

    def hints(self, pod: Pod) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        return self._hints.get(pod.scheduler_name, {})

    def gang_of(self, pod: Pod) -> Gang | None:
        profile = self._profiles.get(pod.scheduler_name)
        found = profile.gang_of(pod) if profile is not None else None
        if found is None:
            return None
        plugin, key = found
        return Gang(plugin, f"{plugin}:{key}")
