"""Reading PersistentVolumes, PersistentVolumeClaims and StorageClasses (plain API dicts).

Shared by the volume plugins, so they agree on what "matching", "bound" and "fits the node" mean
(upstream: component-helpers/storage/volume). The local endpoint keeps its own copy on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from scheduler.api import LabelSelector, NodeSelector, SelectorError
from scheduler.api.quantity import QuantityError, int_value

Obj = Mapping[str, Any]
R = TypeVar("R")

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


def meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name", ""))


def key_of(obj: Obj) -> str:
    """The lister key: ``namespace/name`` or ``name``."""
    m = meta(obj)
    return f"{m['namespace']}/{m.get('name', '')}" if m.get("namespace") else str(m.get("name", ""))


def resource_version(obj: Obj) -> int:
    """resourceVersion as a number for ordering (opaque on paper, an etcd revision in practice)."""
    try:
        return int(meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def claim_class(pvc: Obj) -> str:
    """The claim's StorageClass name; the beta annotation still wins, as upstream keeps it."""
    annotated = (meta(pvc).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    if annotated is not None:
        return str(annotated)
    return str(spec(pvc).get("storageClassName") or "")


def volume_class(pv: Obj) -> str:
    annotated = (meta(pv).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    if annotated is not None:
        return str(annotated)
    return str(spec(pv).get("storageClassName") or "")


def requested_storage(pvc: Obj) -> int:
    requests = (spec(pvc).get("resources") or {}).get("requests") or {}
    try:
        return int_value(requests.get("storage", 0))
    except QuantityError:
        return 0


def has_storage_request(pvc: Obj) -> bool:
    return "storage" in ((spec(pvc).get("resources") or {}).get("requests") or {})


def volume_capacity(pv: Obj) -> int:
    try:
        return int_value((spec(pv).get("capacity") or {}).get("storage", 0))
    except QuantityError:
        return 0


def access_modes(obj: Obj) -> tuple[str, ...]:
    return tuple(spec(obj).get("accessModes") or ())


def is_fully_bound(pvc: Obj) -> bool:
    """Bound as the PV controller finishes it: a volume name and the bind-completed annotation."""
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in (meta(pvc).get("annotations") or {})


def controlled_by(obj: Obj, owner_uid: str) -> bool:
    """metav1.IsControlledBy: the first owner reference marked controller has this uid."""
    refs = meta(obj).get("ownerReferences") or ()
    controller = next((ref for ref in refs if ref.get("controller")), None)
    return controller is not None and controller.get("uid") == owner_uid


def selected_node(pvc: Obj) -> str | None:
    return (meta(pvc).get("annotations") or {}).get(ANN_SELECTED_NODE)


def is_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    pvc_meta = meta(pvc)
    if ref.get("name") != pvc_meta.get("name") or ref.get("namespace") != pvc_meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == pvc_meta.get("uid")


def node_affinity_matches(pv: Obj, node_labels: Mapping[str, str]) -> bool:
    """The PV's required node affinity against a node's labels (no affinity: every node).

    As upstream's CheckNodeAffinity, only the labels are seen: a ``metadata.name`` field term
    never matches a name (``In``), as the node it builds has none.
    """
    required = (spec(pv).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    selector = _PARSED.get(required)
    return selector is not None and selector.matches(node_labels, "")


class IdentityMemo(Generic[R]):
    """What a function computed from one API object (read-only, as every informer object),
    keyed by that very object: Filter asks it of the same PV on every node. The objects are
    held, so a recycled ``id`` never answers for another; at ``size`` entries it starts over."""

    __slots__ = ("_compute", "_entries", "_size")

    def __init__(self, compute: Callable[[Any], R], size: int = 16384) -> None:
        self._compute = compute
        self._entries: dict[int, tuple[Any, R]] = {}
        self._size = size

    def get(self, obj: Any) -> R:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        result = self._compute(obj)
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[id(obj)] = (obj, result)
        return result


def _parse_node_selector(required: Any) -> NodeSelector | None:
    """None for a selector that does not parse: it matches no node."""
    try:
        return NodeSelector.parse(required)
    except SelectorError:
        return None


_PARSED: IdentityMemo[NodeSelector | None] = IdentityMemo(_parse_node_selector)


def topology_terms_match(terms: Iterable[Obj] | None, node_labels: Mapping[str, str]) -> bool:
    """A StorageClass's allowedTopologies: no terms allow every node; terms are ORed."""
    terms = list(terms or ())
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if all(node_labels.get(e.get("key")) in (e.get("values") or ()) for e in expressions):
            return True
    return False


def bind_volume_to_claim(pv: Obj, pvc: Obj) -> dict[str, Any] | None:
    """A copy of ``pv`` bound to ``pvc`` as the binder writes it; None when nothing changes.

    As upstream's GetBindVolumeToClaim: the claimRef is rewritten unless it already names the
    claim with its uid, and a volume not yet bound to the claim gets bound-by-controller.
    """
    pvc_meta = meta(pvc)
    ref = spec(pv).get("claimRef") or {}
    new_spec = dict(spec(pv))
    new_meta = dict(meta(pv))
    dirty = False
    if (
        ref.get("name") != pvc_meta.get("name")
        or ref.get("namespace") != pvc_meta.get("namespace")
        or (ref.get("uid") or "") != (pvc_meta.get("uid") or "")
    ):
        new_spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": pvc_meta.get("namespace"),
            "name": pvc_meta.get("name"),
            "uid": pvc_meta.get("uid"),
            "resourceVersion": pvc_meta.get("resourceVersion"),
        }
        dirty = True
    annotations = new_meta.get("annotations") or {}
    if not is_bound_to_claim(pv, pvc) and ANN_BOUND_BY_CONTROLLER not in annotations:
        new_meta["annotations"] = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    if not dirty:
        return None
    return {**pv, "metadata": new_meta, "spec": new_spec}


@dataclass(frozen=True, slots=True)
class VolumeRequest:
    """What a claim asks of a volume, read once per cycle: Filter matches it on every node."""

    claim: Obj
    size: int
    storage_class: str
    modes: frozenset[str]
    volume_mode: str
    attributes_class: str
    selector: LabelSelector | None
    valid: bool  # False: its selector does not parse, and no volume matches it

    @classmethod
    def of(cls, pvc: Obj) -> VolumeRequest:
        claim_spec = spec(pvc)
        try:
            selector, valid = LabelSelector.parse(claim_spec.get("selector")), True
        except SelectorError:
            selector, valid = None, False
        return cls(
            pvc,
            requested_storage(pvc),
            claim_class(pvc),
            frozenset(access_modes(pvc)),
            claim_spec.get("volumeMode") or "Filesystem",
            claim_spec.get("volumeAttributesClassName") or "",
            selector,
            valid,
        )


def find_matching_volume(
    request: VolumeRequest,
    volumes: Iterable[Obj],
    node_labels: Mapping[str, str],
    excluded: frozenset[str] | set[str] = frozenset(),
) -> Obj | None:
    """The smallest volume that satisfies the claim on this node; a volume pre-bound to the
    claim wins at once (or nothing, if that one does not fit the node)."""
    if not request.valid:
        return None
    pvc, wanted, selector = request.claim, request.size, request.selector
    best: Obj | None = None
    best_size = 0
    for pv in volumes:
        if name_of(pv) in excluded:
            continue
        pv_spec = spec(pv)
        bound_here = is_bound_to_claim(pv, pvc)
        if pv_spec.get("claimRef") and not bound_here:
            continue
        size = volume_capacity(pv)
        if size < wanted or (pv_spec.get("volumeMode") or "Filesystem") != request.volume_mode:
            continue
        # VolumeAttributesClass is GA: an unset class only matches an unset class, and a
        # mismatch rules out even a volume pre-bound to this very claim.
        if (pv_spec.get("volumeAttributesClassName") or "") != request.attributes_class:
            continue
        if meta(pv).get("deletionTimestamp"):
            continue
        fits_node = node_affinity_matches(pv, node_labels)
        if bound_here:
            return pv if fits_node else None
        if (pv.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
            continue
        if volume_class(pv) != request.storage_class or not fits_node:
            continue
        if not request.modes <= set(access_modes(pv)):
            continue
        if best is None or size < best_size:
            best, best_size = pv, size
    return best
