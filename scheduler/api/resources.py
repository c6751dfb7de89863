"""Resource vectors and pod requests computed the way kube-scheduler computes them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from scheduler.api.quantity import int_value, milli_value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

# Requests assumed for scoring when a container does not state them (upstream's
# DefaultMilliCPURequest / DefaultMemoryRequest), so that request-less pods still spread.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def is_scalar_resource(name: str) -> bool:
    """Extended resources, hugepages and attachable volumes: everything but the four built-ins."""
    return name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


@dataclass(slots=True)
class Resource:
    """An amount of every resource: CPU in millicores, the rest in whole units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, str | int | float] | None) -> Resource:
        """Build from a ResourceList such as ``{"cpu": "500m", "memory": "1Gi"}``."""
        result = cls()
        for name, quantity in (resources or {}).items():
            result.set(name, milli_value(quantity) if name == CPU else int_value(quantity))
        return result

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.allowed_pod_number = value
        else:
            self.scalar[name] = value

    def names(self) -> Iterable[str]:
        yield from (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
        yield from self.scalar

    def add(self, other: Resource, sign: int = 1) -> None:
        """In place: ``self += sign * other``."""
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * value

    def set_max(self, other: Resource) -> None:
        """In place: each resource becomes the larger of the two."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for name, value in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), value)

    def copy(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )


# A ResourceList with its quantities parsed (CPU in millicores). A key present with 0 is an
# explicit zero request, which the non-zero defaults must leave alone.
Amounts = dict[str, int]

_NON_ZERO_DEFAULTS: Amounts = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
RESIZE_PENDING = "PodResizePending"
RESIZE_INFEASIBLE = "Infeasible"


def _amounts(resources: Mapping[str, str | int | float] | None) -> Amounts:
    return {name: milli_value(q) if name == CPU else int_value(q) for name, q in (resources or {}).items()}


def _add_into(target: Amounts, other: Amounts) -> None:
    for name, value in other.items():
        target[name] = target.get(name, 0) + value


def _max_into(target: Amounts, other: Amounts) -> None:
    for name, value in other.items():
        if name not in target or value > target[name]:
            target[name] = value


def _to_resource(amounts: Amounts) -> Resource:
    result = Resource()
    for name, value in amounts.items():
        result.set(name, value)
    return result


def _is_pod_level_resource(name: str) -> bool:
    """What ``spec.resources`` may set (PodLevelResources, on by default since v1.34)."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def _effective(spec: Mapping, status: Mapping, infeasible: bool) -> Amounts:
    """Requests of a resized container (or pod) with its status: the largest of what the spec
    asks, what the kubelet actuated and what it allocated, so a resize counts as soon as it
    grows and only once done when it shrinks; an infeasible resize's spec does not count."""
    actuated = (status.get("resources") or {}).get("requests") or {}
    allocated = status.get("allocatedResources") or {}
    if not infeasible and actuated == spec and allocated == spec:
        return _amounts(spec)  # no resize under way: the usual case for a running pod
    result: Amounts = {} if infeasible else _amounts(spec)
    _max_into(result, _amounts(actuated))
    _max_into(result, _amounts(allocated))
    return result


def _container_statuses(status: Mapping) -> dict[str, Mapping]:
    """Container statuses that report resources (the kubelet's view of a resize), by name."""
    return {
        cs["name"]: cs
        for key in ("containerStatuses", "initContainerStatuses")
        for cs in status.get(key) or ()
        if cs.get("resources") is not None and "name" in cs
    }


def _resize_infeasible(status: Mapping) -> bool:
    resize = next((c for c in status.get("conditions") or () if c.get("type") == RESIZE_PENDING), None)
    return resize is not None and resize.get("reason") == RESIZE_INFEASIBLE


def _container_requests(container: Mapping, status: Mapping | None, infeasible: bool) -> Amounts:
    """A container's requests (limits stand in for missing ones, as API defaulting does), raised
    by its ``status`` while a resize is under way."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return _amounts(merged) if status is None else _effective(merged, status, infeasible)


def _pod_level_requests(spec: Mapping, status: Mapping, infeasible: bool) -> Amounts:
    """What ``spec.resources.requests`` sets of cpu, memory and hugepages (nothing: unset)."""
    asked = (spec.get("resources") or {}).get("requests") or {}
    names = [name for name in asked if _is_pod_level_resource(name)]
    if not names:
        return {}
    amounts = _amounts(asked) if status.get("resources") is None else _effective(asked, status, infeasible)
    return {name: amounts.get(name, 0) for name in names}


@dataclass(slots=True)
class _ParsedPod:
    """A pod's requests parsed once, to be combined with or without the non-zero defaults.

    The status counts where upstream's v1.36 defaults make it count: InPlacePodVerticalScaling
    (GA) for regular containers and sidecars, InPlacePodLevelResourcesVerticalScaling (beta, on)
    for pod-level requests.
    """

    containers: list[Amounts]
    init_containers: list[tuple[bool, Amounts]]  # (restartable, requests)
    pod_level: Amounts
    overhead: Amounts

    @classmethod
    def of(cls, spec: Mapping, status: Mapping | None) -> _ParsedPod:
        status = status or {}
        reported = _container_statuses(status)
        infeasible = _resize_infeasible(status)
        init_containers = []
        for container in spec.get("initContainers") or ():
            restartable = container.get("restartPolicy") == "Always"
            own_status = reported.get(container.get("name", "")) if restartable else None
            init_containers.append((restartable, _container_requests(container, own_status, infeasible)))
        return cls(
            containers=[
                _container_requests(c, reported.get(c.get("name", "")), infeasible)
                for c in spec.get("containers") or ()
            ],
            init_containers=init_containers,
            pod_level=_pod_level_requests(spec, status, infeasible),
            overhead=_amounts(spec.get("overhead")),
        )

    def combine(self, defaults: Amounts) -> Amounts:
        """Regular containers run together and add up; init containers run one after the other,
        except restartable ones (sidecars) which keep running once started. The pod needs the
        larger of the two phases, then pod-level requests replace what they name, then the
        overhead adds on. ``defaults`` fill in what a container does not name at all."""
        total: Amounts = {}
        for requests in self.containers:
            _add_into(total, {**defaults, **requests} if defaults else requests)
        sidecars: Amounts = {}
        init_peak: Amounts = {}
        for restartable, requests in self.init_containers:
            requests = {**defaults, **requests}
            if restartable:
                _add_into(total, requests)
                _add_into(sidecars, requests)
                _max_into(init_peak, sidecars)
            else:
                _add_into(requests, sidecars)
                _max_into(init_peak, requests)
        _max_into(total, init_peak)
        total.update(self.pod_level)
        _add_into(total, self.overhead)
        return total


@dataclass(slots=True, frozen=True)
class PodResources:
    """A pod's requests the three ways kube-scheduler reads them."""

    # what NodeResourcesFit checks and a node's requested total adds up
    requests: Resource
    # what a node's non-zero total adds up (its cpu and memory): a resource no container states
    # counts upstream's default, unless pod-level requests are set and something states it
    non_zero: Resource
    # what the resource scorers compare for the pod being scheduled: every container without a
    # cpu or memory request counts the default
    scoring: Resource


def pod_resources(spec: Mapping, status: Mapping | None = None) -> PodResources:
    """Effective requests of a pod, following its status while a resize is under way."""
    parsed = _ParsedPod.of(spec, status)
    requests = parsed.combine({})
    scoring = _to_resource(parsed.combine(_NON_ZERO_DEFAULTS))
    if not parsed.pod_level:
        return PodResources(_to_resource(requests), scoring, scoring)
    # With pod-level requests a default only fills a resource nothing in the pod states.
    missing = {name: value for name, value in _NON_ZERO_DEFAULTS.items() if name not in requests}
    non_zero = parsed.combine(missing) if missing else requests
    return PodResources(_to_resource(requests), _to_resource(non_zero), scoring)
