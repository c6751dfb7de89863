from __future__ import annotations

from scheduler.api import Pod
from scheduler.api.volumes import VolumeClaim, persistent_claim_names, volume_claims
from scheduler.testing.storage import volume_pod, volume_pod_dict


def test_claims_of_a_pod_in_volume_order_with_ephemeral_claims_named_after_pod_and_volume() -> None:
    extra = [
        {"name": "cache", "emptyDir": {}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "unnamed", "persistentVolumeClaim": {}},
    ]
    pod = Pod.from_dict(volume_pod_dict("web", "data-claim", extra_volumes=extra))
    assert volume_claims(pod) == [
        VolumeClaim("data-claim", ephemeral=False),
        VolumeClaim("web-scratch", ephemeral=True),
        VolumeClaim("", ephemeral=False),
    ]
    assert persistent_claim_names(pod) == ["data-claim", ""]


def test_a_pod_without_claim_backed_volumes_has_no_claims() -> None:
    pod = volume_pod("p", extra_volumes=[{"name": "config", "configMap": {"name": "c"}}])
    assert volume_claims(pod) == []
    assert persistent_claim_names(pod) == []
