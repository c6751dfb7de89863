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


def _container_requests(container: Mapping, non_zero: bool) -> Resource:
    """A container's requests; limits stand in for missing requests, as API defaulting does."""
    spec = container.get("resources") or {}
    merged = dict(spec.get("limits") or {})
    merged.update(spec.get("requests") or {})
    result = Resource.from_list(merged)
    if non_zero:
        if CPU not in merged:
            result.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in merged:
            result.memory = DEFAULT_MEMORY_REQUEST
    return result


def pod_requests(spec: Mapping, non_zero: bool = False) -> Resource:
    """Effective requests of a pod spec.

    Regular containers run together and their requests add up; init containers run one after
    the other, except restartable ones (sidecars) which keep running once started. The pod needs
    the larger of the two phases, plus its overhead. Pod-level requests (``spec.resources``)
    replace the container sum for the resources they name. With ``non_zero``, containers that do
    not state a CPU or memory request count upstream's defaults (used for scoring only).
    """
    requests = Resource()
    for container in spec.get("containers") or ():
        requests.add(_container_requests(container, non_zero))

    sidecars = Resource()
    init_peak = Resource()
    for container in spec.get("initContainers") or ():
        container_requests = _container_requests(container, non_zero)
        if container.get("restartPolicy") == "Always":
            sidecars.add(container_requests)
            init_peak.set_max(sidecars)
        else:
            container_requests.add(sidecars)
            init_peak.set_max(container_requests)
    requests.add(sidecars)
    requests.set_max(init_peak)

    pod_level = (spec.get("resources") or {}).get("requests") or {}
    for name, quantity in pod_level.items():
        if name in (CPU, MEMORY):
            requests.set(name, milli_value(quantity) if name == CPU else int_value(quantity))

    overhead = spec.get("overhead")
    if overhead:
        requests.add(Resource.from_list(overhead))
    return requests
