"""A pod whose generated claims got recorded makes the event DynamicResources waits for."""

from __future__ import annotations

from scheduler.api import Pod
from scheduler.framework import ActionType
from scheduler.queue.events import pod_update_events
from scheduler.testing.builders import pod_dict


def test_recording_a_generated_claim_is_an_update_pod_generated_resource_claim_event() -> None:
    raw = pod_dict("p")
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    before = Pod.from_dict(raw)
    after = Pod.from_dict(
        {**raw, "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]}}
    )
    assert after.resource_claim_statuses == ({"name": "gpu", "resourceClaimName": "p-gpu-x"},)
    assert [e.action for e in pod_update_events(before, after)] == [
        ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    ]
    assert [e.action for e in pod_update_events(before, before)] == [ActionType.UPDATE_OTHER]
