"""Which PVs a pod's claims would use on a node, and the writes that make it so (upstream binder.go).

Read by the VolumeBinding plugin: ``pod_volume_claims`` once per cycle, ``find_pod_volumes`` per
node, ``assume``/``revert`` at Reserve/Unreserve and ``bind`` (async) at PreBind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api import LabelSelector, Node, Pod, SelectorError
from scheduler.api.quantity import QuantityError, int_value
from scheduler.api.volumes import volume_claims
from scheduler.framework import ApiClient, ObjectLister
from scheduler.plugins.volumebinding.assume_cache import AssumeCache
from scheduler.plugins.volumebinding.candidates import CandidateVolumes, VolumeIndex
from scheduler.plugins.volumebinding.storage import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    Obj,
    VolumeRequest,
    bind_volume_to_claim,
    claim_class,
    controlled_by,
    find_matching_volume,
    has_storage_request,
    is_bound_to_claim,
    is_fully_bound,
    key_of,
    meta,
    name_of,
    node_affinity_matches,
    requested_storage,
    resource_version,
    selected_node,
    spec,
    topology_terms_match,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


class ClaimProblem(Exception):
    """A claim the pod cannot be scheduled with until someone fixes it (unresolvable)."""


class BindingModeUnset(Exception):
    """A StorageClass without volumeBindingMode: an internal error for VolumeBinding, as upstream."""


class BindingError(Exception):
    """PreBind could not finish the pod's volume bindings; the pod is retried."""


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[Obj] = field(default_factory=list)
    delayed: list[Obj] = field(default_factory=list)  # unbound, WaitForFirstConsumer
    immediate: list[Obj] = field(default_factory=list)  # unbound, Immediate (PV controller's job)
    # what each delayed claim asks, the smallest first
    requests: list[VolumeRequest] = field(default_factory=list)
    # candidate PVs for the delayed claims, by StorageClass name
    volumes_by_class: dict[str, CandidateVolumes] = field(default_factory=dict)


@dataclass(slots=True)
class PodVolumes:
    """What one node needs: PVs to bind to claims, and claims to provision there."""

    static_bindings: list[tuple[Obj, Obj]] = field(default_factory=list)  # (pv, pvc)
    dynamic_provisions: list[Obj] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.static_bindings and not self.dynamic_provisions


class Listers:
    """The kinds the binder reads, looked up lazily through the handle."""

    __slots__ = ("_lister",)

    def __init__(self, lister: Callable[[str], ObjectLister]) -> None:
        self._lister = lister

    def get(self, resource: str, key: str) -> Any:
        return self._lister(resource).get(key)

    def list(self, resource: str) -> list[Any]:
        return self._lister(resource).list()


def claims_of(pod: Pod, listers: Listers, pvc_cache: AssumeCache) -> list[Obj]:
    """The pod's PVCs; ClaimProblem with upstream's message when one is missing or unusable."""
    claims = []
    for claim_name, ephemeral in volume_claims(pod):
        pvc = pvc_cache.get(f"{pod.namespace}/{claim_name}")
        if pvc is None:
            if ephemeral:
                raise ClaimProblem(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                    f'"{claim_name}"'
                )
            raise ClaimProblem(f'persistentvolumeclaim "{claim_name}" not found')
        if (pvc.get("status") or {}).get("phase") == "Lost":
            raise ClaimProblem(
                f'persistentvolumeclaim "{claim_name}" bound to non-existent persistentvolume '
                f'"{spec(pvc).get("volumeName", "")}"'
            )
        if meta(pvc).get("deletionTimestamp"):
            raise ClaimProblem(f'persistentvolumeclaim "{claim_name}" is being deleted')
        if ephemeral and not (meta(pvc).get("namespace") == pod.namespace and controlled_by(pvc, pod.uid)):
            raise ClaimProblem(
                f"PVC {pod.namespace}/{claim_name} was not created for pod {pod.namespace}/{pod.name} "
                "(pod is not owner)"
            )
        claims.append(pvc)
    return claims


def is_delay_binding(pvc: Obj, listers: Listers) -> bool:
    class_name = claim_class(pvc)
    if not class_name:
        return False
    storage_class = listers.get("storageclasses", class_name)
    if storage_class is None:
        return False
    mode = storage_class.get("volumeBindingMode")
    if mode is None:
        raise BindingModeUnset(f'VolumeBindingMode not set for StorageClass "{class_name}"')
    return mode == WAIT_FOR_FIRST_CONSUMER


def pod_volume_claims(
    claims: list[Obj], listers: Listers, pv_index: VolumeIndex, pv_cache: AssumeCache
) -> PodVolumeClaims:
    result = PodVolumeClaims()
    for pvc in claims:
        if is_fully_bound(pvc):
            result.bound.append(pvc)
        elif is_delay_binding(pvc, listers) and not spec(pvc).get("volumeName"):
            result.delayed.append(pvc)
        else:
            result.immediate.append(pvc)
    for pvc in result.delayed:
        request = VolumeRequest.of(pvc)
        result.requests.append(request)
        cls = request.storage_class
        if cls not in result.volumes_by_class:
            volumes = pv_index.of_class(cls)
            if volumes is not None:
                result.volumes_by_class[cls] = CandidateVolumes(volumes, pv_cache.get)
    result.requests.sort(key=lambda r: r.size)  # smallest claims pick first
    return result


@dataclass(slots=True)
class NodeVerdict:
    volumes: PodVolumes
    reasons: list[str]


class VolumeBinder:
    """Upstream's SchedulerVolumeBinder over the handle's listers and two assume caches."""

    __slots__ = ("bind_timeout", "listers", "poll_interval", "pv_cache", "pv_index", "pvc_cache")

    def __init__(
        self, lister: Callable[[str], ObjectLister], bind_timeout: float, poll_interval: float
    ) -> None:
        self.listers = Listers(lister)
        self.pv_cache = AssumeCache(lambda: lister("persistentvolumes"))
        self.pv_index = VolumeIndex(lambda: lister("persistentvolumes"))
        self.pvc_cache = AssumeCache(lambda: lister("persistentvolumeclaims"))
        self.bind_timeout = bind_timeout
        self.poll_interval = poll_interval

    # ------------------------------------------------------------------ filter

    def find_pod_volumes(self, claims: PodVolumeClaims, node: Node) -> NodeVerdict:
        volumes = PodVolumes()
        bound_ok, bound_found = self._check_bound_claims(claims.bound, node)
        unbound_ok = sufficient = True
        if claims.delayed:
            unbound_ok, sufficient = self._check_delayed_claims(claims, node, volumes)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return NodeVerdict(volumes, reasons)

    def _check_bound_claims(self, bound: list[Obj], node: Node) -> tuple[bool, bool]:
        for pvc in bound:
            pv = self.pv_cache.get(str(spec(pvc).get("volumeName")))
            if pv is None:
                return True, False
            if not node_affinity_matches(pv, node.labels):
                return False, True
        return True, True

    def _check_delayed_claims(
        self, claims: PodVolumeClaims, node: Node, out: PodVolumes
    ) -> tuple[bool, bool]:
        to_match: list[VolumeRequest] = []
        to_provision: list[Obj] = []
        for request in claims.requests:
            chosen_node = selected_node(request.claim)
            if chosen_node is None:
                to_match.append(request)
            elif chosen_node != node.name:
                return False, True  # provisioning already started for another node
            else:
                to_provision.append(request.claim)
        satisfied = True
        chosen: set[str] = set()
        for request in to_match:  # smallest claims pick first
            candidates = claims.volumes_by_class.get(request.storage_class)
            volumes = candidates.for_node(node.labels) if candidates is not None else ()
            pv = find_matching_volume(request, volumes, node.labels, chosen)
            if pv is None:
                satisfied = False
                to_provision.append(request.claim)
            else:
                chosen.add(name_of(pv))
                out.static_bindings.append((pv, request.claim))
        if to_provision:
            return self._check_provisioning(to_provision, node, out)
        return satisfied, True

    def _check_provisioning(self, to_provision: list[Obj], node: Node, out: PodVolumes) -> tuple[bool, bool]:
        for pvc in to_provision:
            class_name = claim_class(pvc)
            storage_class = self.listers.get("storageclasses", class_name) if class_name else None
            if storage_class is None:
                return False, True
            provisioner = storage_class.get("provisioner") or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True
            if not topology_terms_match(storage_class.get("allowedTopologies"), node.labels):
                return False, True
            if not self._has_enough_capacity(provisioner, pvc, class_name, node):
                return True, False
            out.dynamic_provisions.append(pvc)
        return True, True

    def _has_enough_capacity(self, provisioner: str, pvc: Obj, class_name: str, node: Node) -> bool:
        """CSIStorageCapacity, only for CSI drivers that ask for capacity tracking."""
        if not has_storage_request(pvc):
            return True
        driver = self.listers.get("csidrivers", provisioner)
        if driver is None or not spec(driver).get("storageCapacity"):
            return True
        size = requested_storage(pvc)
        for capacity in self.listers.list("csistoragecapacities"):
            if capacity.get("storageClassName") != class_name:
                continue
            limit = capacity_limit(capacity)
            if limit is not None and limit >= size and _node_has_access(capacity, node):
                return True
        return False

    # ------------------------------------------------------------------ reserve

    def assume(self, volumes: PodVolumes, node_name: str) -> bool:
        """Lay the node's choices over the caches; True when nothing is left to bind."""
        # The pod's volumes are replaced by the very objects assumed here: PreBind writes those
        # (with the resourceVersion they were made from, so any change since is a 409) and
        # Unreserve takes back only those, never another pod's later assumption.
        for i, (pv, pvc) in enumerate(volumes.static_bindings):
            assumed_pv = bind_volume_to_claim(pv, pvc)
            if assumed_pv is not None:  # None: the PV already names this very claim
                self.pv_cache.assume(assumed_pv)
                volumes.static_bindings[i] = (assumed_pv, pvc)
        for i, pvc in enumerate(volumes.dynamic_provisions):
            annotated = dict(pvc)
            annotated["metadata"] = {
                **meta(pvc),
                "annotations": {**(meta(pvc).get("annotations") or {}), ANN_SELECTED_NODE: node_name},
            }
            self.pvc_cache.assume(annotated)
            volumes.dynamic_provisions[i] = annotated
        return volumes.empty

    def revert(self, volumes: PodVolumes) -> None:
        for pv, _ in volumes.static_bindings:
            self.pv_cache.restore(key_of(pv), pv)
        for pvc in volumes.dynamic_provisions:
            self.pvc_cache.restore(key_of(pvc), pvc)

    # ------------------------------------------------------------------ pre-bind

    async def bind(self, client: ApiClient, volumes: PodVolumes, node: Node | None, node_name: str) -> None:
        """Write the assumed objects, then wait until the PV controller has bound every claim.

        Failures of the wait read as upstream's (``binding volumes: ...``; its poll's context
        runs out with ``context deadline exceeded``); a failed write gives the API's message.
        """
        written_pvs: list[tuple[Obj, Obj]] = []
        for pv, pvc in volumes.static_bindings:
            if is_bound_to_claim(pv, pvc) and not self.pv_cache.is_assumed(key_of(pv)):
                body = pv  # already bound in the API: nothing to write
            else:
                body = await _put(client, f"/api/v1/persistentvolumes/{name_of(pv)}", pv)
            written_pvs.append((body, pvc))
        written_pvcs: list[Obj] = []
        for pvc in volumes.dynamic_provisions:
            m = meta(pvc)
            path = f"/api/v1/namespaces/{m.get('namespace')}/persistentvolumeclaims/{m.get('name')}"
            written_pvcs.append(await _put(client, path, pvc))
        deadline = time.monotonic() + self.bind_timeout
        try:
            while not self._all_bound(written_pvs, written_pvcs, node, node_name):
                if time.monotonic() >= deadline:
                    raise BindingError("context deadline exceeded")
                await asyncio.sleep(self.poll_interval)
        except BindingError as exc:
            raise BindingError(f"binding volumes: {exc}") from exc

    def _all_bound(
        self, bindings: list[tuple[Obj, Obj]], provisions: list[Obj], node: Node | None, node_name: str
    ) -> bool:
        for written, claim in bindings:
            pv = self.pv_cache.get_api(key_of(written))
            if pv is None:
                raise BindingError(f"failed to check binding: {_not_found('persistentvolumes', written)}")
            pvc = self.pvc_cache.get_api(key_of(claim))
            if pvc is None:
                raise BindingError(f"failed to check binding: {_not_found('persistentvolumeclaims', claim)}")
            if resource_version(written) > resource_version(pv):
                return False  # our write has not reached the informer yet
            _check_affinity(pv, node, node_name)
            ref = spec(pv).get("claimRef")
            if not ref or not ref.get("uid"):
                raise BindingError(f'ClaimRef got reset for pv "{name_of(pv)}"')
            if not is_fully_bound(pvc):
                return False
        for written in provisions:
            pvc = self.pvc_cache.get_api(key_of(written))
            if pvc is None:
                raise BindingError(
                    f"failed to check provisioning pvc: {_not_found('persistentvolumeclaims', written)}"
                )
            if resource_version(written) > resource_version(pvc):
                return False
            if meta(pvc).get("annotations") is None:
                raise BindingError(f'selectedNode annotation reset for PVC "{name_of(pvc)}"')
            if selected_node(pvc) != node_name:
                raise BindingError(f'provisioning failed for PVC "{name_of(pvc)}"')
            volume_name = spec(pvc).get("volumeName")
            if volume_name:
                pv = self.pv_cache.get_api(str(volume_name))
                if pv is None:
                    return False
                _check_affinity(pv, node, node_name)
            if not is_fully_bound(pvc):
                return False
        return True


def _not_found(resource: str, obj: Obj) -> str:
    """The API's not-found sentence for an object missing from a cache (keyed ``ns/name``)."""
    return f'{resource} "{key_of(obj)}" not found'


def _check_affinity(pv: Obj, node: Node | None, node_name: str) -> None:
    if node is not None and not node_affinity_matches(pv, node.labels):
        mismatch = f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}"'
        raise BindingError(f"{mismatch}: no matching NodeSelectorTerms")


async def _put(client: ApiClient, path: str, body: Obj) -> Obj:
    response = await client.request("PUT", path, body)
    if not 200 <= response.status < 300:
        # the API's own sentence, as client-go's error reads (e.g. "Operation cannot be fulfilled ...")
        message = response.body.get("message") if isinstance(response.body, Mapping) else None
        raise BindingError(message or f"PUT {path}: {response.status} {response.body}")
    answered = response.body if isinstance(response.body, Mapping) else None
    return answered if answered and answered.get("metadata") else body


def capacity_limit(capacity: Obj) -> int | None:
    value = capacity.get("maximumVolumeSize")
    if value is None:
        value = capacity.get("capacity")
    if value is None:
        return None
    try:
        return int_value(value)
    except QuantityError:
        return None


def _node_has_access(capacity: Obj, node: Node) -> bool:
    topology = capacity.get("nodeTopology")
    if topology is None:
        return False
    try:
        selector = LabelSelector.parse(topology)
    except SelectorError:
        return False
    return selector is not None and selector.matches(node.labels)
