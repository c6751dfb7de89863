"""Which pod explain may evaluate, and with which profile: the same rules for the command and
for ``/debug/explain``."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api import Pod
from scheduler.runtime import Framework


class ExplainRefused(Exception):
    """The pod cannot be explained; ``status`` is the HTTP status ``/debug/explain`` answers
    (400: a bad request, 404: no such pod, 409: not a pending pod of ours)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def pending_pod(
    pod: Pod | None, key: str, frameworks: Mapping[str, Framework], profile: str = ""
) -> tuple[Pod, Framework]:
    """``pod`` (the informer's copy of ``key``) and the profile that would schedule it."""
    if profile and profile not in frameworks:
        raise ExplainRefused(f"no profile named {profile!r} (profiles: {', '.join(frameworks)})", 400)
    if pod is None:
        raise ExplainRefused(f"pod {key} not found (or it has finished)", 404)
    if pod.node_name:
        raise ExplainRefused(f"pod {key} is not pending: it is bound to {pod.node_name}", 409)
    fwk = frameworks.get(profile or pod.scheduler_name)
    if fwk is None:
        raise ExplainRefused(
            f"pod {key} is for scheduler {pod.scheduler_name!r}, not one of pyscheduler's profiles "
            f"({', '.join(frameworks)}); pass --profile to evaluate it with one of them",
            409,
        )
    return pod, fwk
