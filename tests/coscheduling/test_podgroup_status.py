"""The PodGroup controller's phase rule (scheduler-plugins v0.35's), one reconcile at a time."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.podgroup_controller.status import next_status

NOW = "2026-01-01T00:00:00Z"


def group(min_member: int, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": min_member}, "status": status}


def pod(name: str, phase: str = "Pending", owner: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = [{"name": owner}]
    return {"metadata": meta, "status": {"phase": phase}}


def test_a_new_group_is_pending_first_whatever_its_pods() -> None:
    assert next_status(group(1), [pod("a")], NOW) == {"phase": "Pending"}


def test_pending_becomes_scheduling_with_minmember_pods_naming_the_first_pods_owners() -> None:
    pods = [pod("b", owner="job-b"), pod("a", owner="job-a")]
    assert next_status(group(2, phase="Pending"), pods[:1], NOW) is None
    assert next_status(group(2, phase="Pending"), pods, NOW) == {
        "phase": "Scheduling",
        "occupiedBy": "ml/job-a",
        "scheduleStartTime": NOW,
    }


def test_a_first_pod_without_owners_leaves_occupied_by_unset() -> None:
    assert next_status(group(1, phase="Pending"), [pod("a")], NOW) == {
        "phase": "Scheduling",
        "scheduleStartTime": NOW,
    }


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        (["Pending", "Running"], "Scheduling"),
        (["Running", "Succeeded"], "Running"),
        (["Running", "Failed"], "Failed"),
        (["Succeeded", "Succeeded"], "Finished"),
        (["Running"], "Pending"),  # pods deleted below minMember
    ],
)
def test_a_scheduling_group_follows_its_pods(phases: list[str], expected: str) -> None:
    pods = [pod(f"p{i}", phase) for i, phase in enumerate(phases)]
    status = next_status(group(2, phase="Scheduling", scheduleStartTime=NOW), pods, "later")
    assert status is not None
    assert status["phase"] == expected
    assert status["scheduleStartTime"] == NOW  # kept from when it entered Scheduling
    assert (status["running"], status["succeeded"], status["failed"]) == (
        phases.count("Running"),
        phases.count("Succeeded"),
        phases.count("Failed"),
    )


@pytest.mark.parametrize("final", ["Finished", "Failed"])
def test_final_phases_are_never_left(final: str) -> None:
    assert next_status(group(1, phase=final), [pod("a", "Running")], NOW) is None


def test_an_unchanged_status_is_not_written_again() -> None:
    current = group(1, phase="Running", running=1, succeeded=0, failed=0)
    assert next_status(current, [pod("a", "Running")], NOW) is None
