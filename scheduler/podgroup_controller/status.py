"""A PodGroup's next status from its pods: the reconcile rule of scheduler-plugins v0.35.

Phases advance one step per reconcile, each status write bringing the next:
"" -> Pending; Pending -> Scheduling once minMember pods exist (occupiedBy and
scheduleStartTime are set then); afterwards Running once minMember pods run or have succeeded,
back to Scheduling below that, Pending when pods were deleted below minMember, Failed when a
pod failed and the finished and running ones reach minMember, Finished when minMember have
succeeded. Finished and Failed are final.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
FINAL = frozenset({FINISHED, FAILED})

Obj = Mapping[str, Any]


def next_status(group: Obj, pods: Sequence[Obj], now: str) -> dict[str, Any] | None:
    """The status to write (every field the controller owns), or None when nothing changes."""
    current = dict(group.get("status") or {})
    phase = current.get("phase") or ""
    if phase in FINAL:
        return None
    min_member = int((group.get("spec") or {}).get("minMember") or 0)
    status = dict(current)
    if not phase:
        status["phase"] = PENDING
    elif phase == PENDING:
        if len(pods) >= min_member:
            status["phase"] = SCHEDULING
            owners = occupied_by(pods)
            if owners:  # a first pod without owners leaves the field as it was
                status["occupiedBy"] = owners
            status.setdefault("scheduleStartTime", now)
    else:
        running, succeeded, failed = counts(pods)
        status.update(running=running, succeeded=succeeded, failed=failed)
        status["phase"] = _phase(len(pods), running, succeeded, failed, min_member)
    return None if status == current else status


def _phase(total: int, running: int, succeeded: int, failed: int, min_member: int) -> str:
    if total < min_member:
        return PENDING
    if succeeded >= min_member:
        return FINISHED
    if failed and failed + running + succeeded >= min_member:
        return FAILED
    return RUNNING if running + succeeded >= min_member else SCHEDULING


def counts(pods: Sequence[Obj]) -> tuple[int, int, int]:
    """(running, succeeded, failed) pods, by status.phase."""
    phases = [(pod.get("status") or {}).get("phase") for pod in pods]
    return phases.count("Running"), phases.count("Succeeded"), phases.count("Failed")


def occupied_by(pods: Sequence[Obj]) -> str:
    """The owners of the group's first pod (by name), "namespace/owner" sorted and joined by
    commas: which workload took the group. "" when that pod has no owner."""
    if not pods:
        return ""
    first = min(pods, key=lambda pod: str((pod.get("metadata") or {}).get("name") or ""))
    meta = first.get("metadata") or {}
    refs = sorted(f"{meta.get('namespace')}/{ref.get('name')}" for ref in meta.get("ownerReferences") or ())
    return ",".join(refs)
