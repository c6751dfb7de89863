"""The PersistentVolumeClaims a pod's volumes name, as upstream's storage helpers find them.

A ``persistentVolumeClaim`` volume names its claim; an ``ephemeral`` volume's claim is created for
the pod and is called ``<pod name>-<volume name>`` (component-helpers' ``ephemeral.VolumeClaimName``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from scheduler.api.objects import Pod


class VolumeClaim(NamedTuple):
    name: str  # "" when a persistentVolumeClaim volume names none
    ephemeral: bool  # created for the pod from the volume's template


def volume_claim(pod: Pod, volume: Mapping[str, Any]) -> VolumeClaim | None:
    """The claim behind one of ``pod``'s volumes; None for a volume no claim backs."""
    source = volume.get("persistentVolumeClaim")
    if source is not None:
        return VolumeClaim(str(source.get("claimName") or ""), False)
    if volume.get("ephemeral") is not None:
        return VolumeClaim(f"{pod.name}-{volume.get('name', '')}", True)
    return None


def volume_claims(pod: Pod) -> list[VolumeClaim]:
    """The claim of each claim-backed volume of ``pod``, in the pod's order."""
    return [claim for volume in pod.volumes if (claim := volume_claim(pod, volume)) is not None]


def persistent_claim_names(pod: Pod) -> list[str]:
    """The claims the pod's ``persistentVolumeClaim`` volumes name (ephemeral ones left out)."""
    return [claim.name for claim in volume_claims(pod) if not claim.ephemeral]
