"""DynamicResources: what the default profile shows for pods without resource claims."""

from __future__ import annotations

from scheduler.api import Pod
from scheduler.framework import Code, CycleState, Diagnosis
from scheduler.plugins.dynamicresources import CLAIMS_NOT_SUPPORTED, NO_CLAIMS_TO_DEALLOCATE, DynamicResources
from scheduler.testing.builders import make_pod, pod_dict


def test_a_pod_without_claims_skips_the_plugin():
    _, status = DynamicResources(None, None).pre_filter(CycleState(), make_pod("p"), None)
    assert status.is_skip


def test_a_pod_with_claims_is_refused_as_unresolvable_with_the_reason():
    raw = pod_dict("p")
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    pod = Pod.from_dict(raw)
    _, status = DynamicResources(None, None).pre_filter(CycleState(), pod, None)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (CLAIMS_NOT_SUPPORTED,)


def test_post_filter_reports_upstreams_sentence():
    result, status = DynamicResources(None, None).post_filter(CycleState(), make_pod("p"), Diagnosis())
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "no new claims to deallocate" == NO_CLAIMS_TO_DEALLOCATE
