"""DynamicResources, as far as pods without resource claims need it.

Dynamic resource allocation (ResourceClaims, DeviceClasses, ResourceSlices) is not implemented
by pyscheduler yet. What is implemented is what the default profile shows for every other pod:
PreFilter skips pods without claims, and PostFilter reports upstream's sentence
``no new claims to deallocate`` in the FailedScheduling message. A pod that does use claims is
rejected as unresolvable with a message saying so, rather than being placed on a node whose
devices were never allocated to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from scheduler.api import Pod
from scheduler.framework import (
    ClusterEventWithHint,
    CycleState,
    Diagnosis,
    NodeLister,
    PostFilterResult,
    PreFilterResult,
    SignFragment,
    Status,
)
from scheduler.plugins import names

NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
NOT_SIGNABLE = "pods with dra resource claims are not signable"
CLAIMS_NOT_SUPPORTED = "pod uses resource claims, which pyscheduler does not allocate (DRA is not supported)"


class DynamicResources:
    name: ClassVar[str] = names.DYNAMIC_RESOURCES

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeLister
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.resource_claims:
            return None, Status.skip()
        return None, Status.unresolvable(CLAIMS_NOT_SUPPORTED)

    def filter(self, state: CycleState, pod: Pod, node_info: Any) -> Status | None:
        # Only reached for pods with claims, which PreFilter already rejected.
        return Status.unresolvable(CLAIMS_NOT_SUPPORTED) if pod.resource_claims else None

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        # No claims are ever allocated here, so there is never one to free for this pod.
        return None, Status.unschedulable(NO_CLAIMS_TO_DEALLOCATE)

    def sign_pod(self, pod: Pod) -> tuple[Sequence[SignFragment], Status | None]:
        """A pod with resource claims is not signed (as upstream, which cannot yet tell which
        claims only depend on the node); any other pod needs nothing of this plugin."""
        if pod.resource_claims:
            return (), Status.unschedulable(NOT_SIGNABLE)
        return (), None

    def events_to_register(self) -> Iterable[ClusterEventWithHint]:
        # Pods it rejects wait for DRA support, not for a cluster event.
        return ()
