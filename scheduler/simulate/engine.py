"""The simulation: a snapshot in the local endpoint, the real scheduler against it, the outcome.

`Simulation` loads the snapshot's objects into a `SimCluster` (no kubelet, no workload
controllers; the PV controller and provisioner run, so claims bind as in a cluster, and the
resource-claim controller makes pods' ResourceClaims from their templates), starts the
scheduler it is given (`pyscheduler run`'s `SchedulerApp`, passed in by the command: the engine
sits below the app) in process over HTTP, as `pyscheduler run` would against a cluster, and creates
the added objects once the scheduler has synced, so it sees them arrive in order. A pod is
decided when it is bound, or has PodScheduled=False and is not waiting on a preemption
(``status.nominatedNodeName``). Capacity mode adds copies of one pod, one at a time, until one
is not bound: exactly what scheduling them one after the other does. The copies never preempt
(``preemptionPolicy: Never``): capacity is what fits beside the pods already there.

The objects `--add` applies as they are (CRDs first) and `--add-nodes`' nodes are in the cluster
before the scheduler starts. The node what-ifs act on the running simulation: a drain cordons
and evicts through the local endpoint's eviction API, with a disruption controller keeping PDB
status; a removal deletes; either way the pods controllers own come back pending and are
placed (`nodes`). `--fit` tries node counts (`fit`) with the same scheduler, undoing each try
and waiting until the scheduler's cache has seen it undone before the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
import random
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from scheduler.api import Pod
from scheduler.api.quantity import QuantityError
from scheduler.api.resources import Resource, pod_resources
from scheduler.config import SchedulerConfiguration
from scheduler.dra.claims import allocation_of
from scheduler.explain import explain_pod
from scheduler.features import DEFAULT_FEATURES, FeatureGates
from scheduler.framework import PluginFactory
from scheduler.runtime import Framework
from scheduler.schedule_one import Scheduler
from scheduler.serving.options import ServingOptions
from scheduler.simulate import nodes as node_whatifs
from scheduler.simulate.daemonsets import daemon_pods
from scheduler.simulate.fit import Fit, resource_guess, smallest
from scheduler.simulate.manifests import Applied
from scheduler.simulate.nodes import Fate, NodeTemplate
from scheduler.simulate.workloads import ManifestError, Workload, suffix
from simcluster import SimCluster
from simcluster.api import now
from simcluster.disruption import DisruptionController
from simcluster.errors import ApiError
from simcluster.eviction import evict
from simcluster.resources import BY_STORE_NAME
from simcluster.selectors import labels_match, parse_label_selector
from simcluster.store import Event

log = logging.getLogger(__name__)
Obj = dict[str, Any]
FINISHED = ("Succeeded", "Failed")


class SimulationError(Exception):
    """The simulation could not run to its end (the scheduler failed, or pods stayed undecided)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """A node's requested and allocatable cpu (millicores) and memory (bytes)."""

    cpu_requested: int
    cpu_allocatable: int
    memory_requested: int
    memory_allocatable: int


@dataclass(frozen=True, slots=True)
class Placement:
    pod: str  # namespace/name
    source: str  # the manifest it came from: "Deployment default/web"
    node: str
    devices: tuple[str, ...] = ()  # what its ResourceClaims were allocated: "driver/pool/device"


@dataclass(frozen=True, slots=True)
class Pending:
    pod: str
    source: str
    reason: str
    message: str
    # the smallest changes that would let it fit, from `scheduler.explain` (empty when none)
    suggestions: tuple[str, ...] = ()


@dataclass(slots=True)
class Capacity:
    """How many more copies of a pod fit, where, and what stopped the next one."""

    pod: str
    fits: int = 0
    per_node: dict[str, int] = field(default_factory=dict)
    stopped_by: str = ""
    limit_reached: bool = False


@dataclass(frozen=True, slots=True)
class Eviction:
    """A pod of a drained or removed node: evicted (and replaced or gone), or blocked by a PDB."""

    pod: str
    node: str
    result: str  # "replaced", "gone", "blocked"; "removed": a daemon or mirror pod of a removed node
    message: str = ""


@dataclass(slots=True)
class Outcome:
    placements: list[Placement] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    # pods pending in the snapshot that one of the profiles bound meanwhile (they take room too)
    also_placed: list[Placement] = field(default_factory=list)
    before: dict[str, Usage] = field(default_factory=dict)
    after: dict[str, Usage] = field(default_factory=dict)
    capacity: Capacity | None = None
    warnings: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # manifests --add does not use: "Kind ns/name"
    applied: list[str] = field(default_factory=list)  # manifests applied as they are
    nodes_added: list[str] = field(default_factory=list)
    nodes_removed: list[str] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    fit: Fit | None = None
    zones: dict[str, str] = field(default_factory=dict)  # node -> zone, before and after


class UsageMeter:
    """Per node, what its assigned, unfinished pods request against its allocatable.

    A pod's requests are computed once per version of it, so measuring again after a run costs
    only what changed. A pod or node whose quantities cannot be read counts as nothing and is
    reported once in ``problems``."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[str, int, int]] = {}  # key -> (resourceVersion, cpu, memory)
        self.problems: list[str] = []
        self._reported: set[str] = set()

    def measure(self, nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, Usage]:
        requested: dict[str, list[int]] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in FINISHED:
                continue
            cpu, memory = self._requests(pod)
            total = requested.setdefault(node, [0, 0])
            total[0] += cpu
            total[1] += memory
        usage = {}
        for node in nodes:
            name = node["metadata"]["name"]
            status = node.get("status") or {}
            try:
                allocatable = Resource.from_list(status.get("allocatable") or status.get("capacity") or {})
            except (QuantityError, TypeError, AttributeError) as exc:
                self._report(f"node {name}: allocatable not readable ({exc}): counted as 0")
                allocatable = Resource()
            cpu, memory = requested.get(name, (0, 0))
            usage[name] = Usage(cpu, allocatable.milli_cpu, memory, allocatable.memory)
        return usage

    def _requests(self, pod: Obj) -> tuple[int, int]:
        key, version = key_of(pod), pod["metadata"].get("resourceVersion", "")
        known = self._pods.get(key)
        if known is not None and known[0] == version:
            return known[1], known[2]
        try:
            requests = pod_resources(pod["spec"], pod.get("status")).requests
            cpu, memory = requests.milli_cpu, requests.memory
        except (QuantityError, TypeError, AttributeError) as exc:
            self._report(f"pod {key}: requests not readable ({exc}): counted as 0")
            cpu = memory = 0
        self._pods[key] = (version, cpu, memory)
        return cpu, memory

    def _report(self, line: str) -> None:
        if line not in self._reported:
            self._reported.add(line)
            self.problems.append(line)


def key_of(pod: Obj) -> str:
    return f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"


def _store_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _version(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


def unschedulable_condition(pod: Obj) -> Obj | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition
    return None


class _Tracker:
    """Wakes a waiter once every tracked pod is decided; fed by the store's listener (no polling).

    A key is tracked right after its pod's creation returns: nothing yields to the scheduler in
    between, so no decision can be missed."""

    def __init__(self, *, final_on_nomination: bool) -> None:
        self.pending: set[str] = set()
        self.final_on_nomination = final_on_nomination
        self.all_decided = asyncio.Event()

    def track(self, pod: Obj) -> None:
        if not self.decided(pod):  # a manifest may bind its pod itself (spec.nodeName)
            self.pending.add(key_of(pod))

    def on_event(self, resource: str, event: Event) -> None:
        if resource != "pods" or event.type == "DELETED":
            return
        key = key_of(event.obj)
        if key in self.pending and self.decided(event.obj):
            self.pending.discard(key)
            if not self.pending:
                self.all_decided.set()

    def decided(self, pod: Obj) -> bool:
        if pod["spec"].get("nodeName"):
            return True
        if unschedulable_condition(pod) is None:
            return False
        return self.final_on_nomination or not (pod.get("status") or {}).get("nominatedNodeName")


class RunningScheduler(Protocol):
    """What the simulation needs of the scheduler it runs (a `SchedulerApp`)."""

    @property
    def scheduler(self) -> Scheduler | None: ...
    @property
    def frameworks(self) -> Mapping[str, Framework]: ...
    @property
    def shutting_down(self) -> asyncio.Event: ...
    async def run(self) -> int: ...
    async def wait_ready(self, timeout: float | None = None) -> bool: ...


class SchedulerFactory(Protocol):
    """Builds the scheduler from `pyscheduler run`'s parts (`SchedulerApp` itself is one)."""

    def __call__(
        self,
        config: SchedulerConfiguration,
        *,
        kubeconfig: str,
        serving: ServingOptions,
        rng: random.Random,
        registry: Mapping[str, PluginFactory] | None,
        watches: Sequence[str],
        features: FeatureGates,
    ) -> RunningScheduler: ...


class Simulation:
    """The local endpoint with a snapshot loaded and the scheduler running against it."""

    def __init__(
        self,
        objects: Mapping[str, Iterable[Any]],
        config: SchedulerConfiguration,
        *,
        app: SchedulerFactory,
        seed: int = 0,
        timeout: float = 60.0,
        registry: Mapping[str, PluginFactory] | None = None,
        watches: Sequence[str] = (),
        features: FeatureGates = DEFAULT_FEATURES,
        applied: Sequence[Applied] = (),
        new_nodes: Sequence[Obj] = (),
        new_slices: Sequence[Obj] = (),
    ) -> None:
        """``app`` builds the scheduler (`SchedulerApp`); ``registry``, ``watches`` and
        ``features`` are its parts, as `pyscheduler run` builds them from ``--plugin`` and
        ``--feature-gates`` (default: in-tree plugins, v1.36's gate defaults). ``applied``
        (manifests applied as they are, in order), ``new_nodes`` (`--add-nodes`) and their
        ``new_slices`` are in the cluster before the scheduler starts, after the state "before"
        was measured."""
        self._make_app = app
        self.config = copy.deepcopy(config)
        self._registry, self._watches, self._features = registry, watches, features
        self.config.leader_election.leader_elect = False
        self.profiles = {p.scheduler_name for p in self.config.profiles}
        self.seed = seed
        self.timeout = timeout
        self.sim = SimCluster(
            nodes=0, kubelet=False, controllers=False, volume_controllers=True, claim_controller=True
        )
        self.outcome = Outcome()
        self._objects = objects
        self._applied, self._new_nodes, self._new_slices = applied, new_nodes, new_slices
        self._disruption: DisruptionController | None = None
        self._tmp = tempfile.TemporaryDirectory()
        self._app: RunningScheduler | None = None
        self._task: asyncio.Task[int] | None = None
        self._uids: dict[tuple[str, str, str], str] = {}
        self._snapshot_pods: set[str] = set()
        self._snapshot_pending: set[str] = set()
        self._meter = UsageMeter()
        self._reported_problems = 0

    async def __aenter__(self) -> Simulation:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        await self.sim.start()
        self.outcome.warnings += self.sim.load(self._objects)
        self.outcome.before = self.usage()
        self._disruption = DisruptionController(self.sim.api)  # PDB status, which eviction reads
        for entry in list(self.sim.store.entries("poddisruptionbudgets")):
            meta = entry.obj["metadata"]  # marked stale: the controller recomputes it from the pods
            stale = {**entry.obj, "status": {"observedGeneration": -1}}
            pdbs = BY_STORE_NAME["poddisruptionbudgets"]
            self.sim.api.update(pdbs, meta["namespace"], meta["name"], stale, "status")
        for applied in self._applied:
            await self._apply(applied)
            self.outcome.applied.append(applied.source)
        for node in self._new_nodes:
            await self._create("--add-nodes", "nodes", node)
            self.outcome.nodes_added.append(node["metadata"]["name"])
        for slice_ in self._new_slices:
            await self._create("--add-nodes", "resourceslices", slice_)
        self._note_zones()
        self._snapshot_pods = {key_of(e.obj) for e in self.sim.store.entries("pods")}
        self._snapshot_pending = {
            key_of(e.obj) for e in self.sim.store.entries("pods") if not e.obj["spec"].get("nodeName")
        }
        kubeconfig = self.sim.write_kubeconfig(Path(self._tmp.name) / "kubeconfig")
        self._app = self._make_app(
            self.config,
            kubeconfig=str(kubeconfig),
            serving=ServingOptions(bind_address="127.0.0.1", port=0, plain_http=True),
            rng=random.Random(self.seed),
            registry=self._registry,
            watches=self._watches,
            features=self._features,
        )
        self._task = asyncio.create_task(self._app.run(), name="simulated scheduler")
        ready = asyncio.create_task(self._app.wait_ready(self.timeout))
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        self._check_running()
        if not ready.done() or not ready.result():
            raise SimulationError(f"the scheduler did not start and sync within {self.timeout:g}s")

    def _check_running(self) -> None:
        task = self._task
        if task is None or not task.done():
            return
        if task.cancelled():
            raise SimulationError("the scheduler was cancelled before the simulation ended")
        error = task.exception()
        if error is not None:
            raise SimulationError(f"the scheduler failed: {error}") from error
        raise SimulationError(f"the scheduler exited (code {task.result()}) before the simulation ended")

    async def stop(self) -> None:
        if self._app is not None and self._task is not None:
            self._app.shutting_down.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._disruption is not None:
            self._disruption.close()
        await self.sim.stop()
        self._tmp.cleanup()

    def usage(self) -> dict[str, Usage]:
        store = self.sim.store
        nodes = (entry.obj for entry in store.entries("nodes"))  # shared objects: only read
        usage = self._meter.measure(nodes, (entry.obj for entry in store.entries("pods")))
        self.outcome.warnings += self._meter.problems[self._reported_problems :]
        self._reported_problems = len(self._meter.problems)
        return usage

    # ---- --add ----------------------------------------------------------------------------

    async def add(self, workloads: list[Workload]) -> Outcome:
        """Create the workloads' objects and wait until each of their pods is decided."""
        await self._place([(w.source, resource, obj) for w in workloads for resource, obj in w.objects])
        return self._refresh()

    def daemon_sets(self, daemonsets: Sequence[tuple[Obj, str]], scheduler_name: str) -> list[Workload]:
        """Each DaemonSet with a pod for every node of the cluster as it is now that it runs on."""
        nodes = [entry.obj for entry in self.sim.store.entries("nodes")]
        return [daemon_pods(obj, nodes, where, scheduler_name) for obj, where in daemonsets]

    async def _place(self, items: Sequence[tuple[str, str, Obj]]) -> None:
        """Create (source, store name, object) in order, wait for the pods' decisions, report them."""
        sources: dict[str, str] = {}
        tracker = _Tracker(final_on_nomination=False)
        self.sim.store.listeners.append(tracker.on_event)
        try:
            for source, resource, obj in items:
                created = await self._create(source, resource, obj)
                if resource != "pods":
                    continue
                sources[key_of(created)] = source
                if created["spec"].get("schedulerName") in self.profiles:  # else never decided
                    tracker.track(created)
            await self._wait(tracker)
        finally:
            self.sim.store.listeners.remove(tracker.on_event)
        suggested: dict[str, tuple[str, ...]] = {}  # a workload's pods are alike: explain one
        for key, source in sources.items():
            pod = self.sim.store.get("pods", *key.split("/", 1))
            if pod is None:
                self.outcome.pending.append(Pending(key, source, "Deleted", "deleted during the simulation"))
            elif pod["spec"].get("nodeName"):
                self.outcome.placements.append(
                    Placement(key, source, pod["spec"]["nodeName"], self._devices(pod))
                )
            else:
                pending = self._pending(pod, source)
                if pending.reason == "Unschedulable":
                    if source not in suggested:
                        suggested[source] = await self._suggestions(pod)
                    pending = dataclasses.replace(pending, suggestions=suggested[source])
                self.outcome.pending.append(pending)

    def _devices(self, pod: Obj) -> tuple[str, ...]:
        """The devices allocated to the pod's claims (its own from templates, or shared ones)."""
        names = [
            c.get("resourceClaimName") for c in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        ]
        names += [c.get("resourceClaimName") for c in pod["spec"].get("resourceClaims") or ()]
        devices: list[str] = []
        for name in dict.fromkeys(n for n in names if n):
            claim = self.sim.store.get("resourceclaims", pod["metadata"]["namespace"], name) or {}
            allocation = (claim.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or ():
                devices.append(f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}")
        return tuple(devices)

    def _refresh(self) -> Outcome:
        """The parts of the outcome read off the cluster as it is now."""
        now = {key_of(e.obj) for e in self.sim.store.entries("pods")}
        evicted = {e.pod for e in self.outcome.evictions if e.result != "blocked"}
        self.outcome.preempted = sorted(self._snapshot_pods - now - evicted)
        self.outcome.also_placed = []
        placed = {p.pod for p in self.outcome.placements}  # --fit reports the ones it placed
        for key in sorted(self._snapshot_pending - placed):
            entry = self.sim.store.entry("pods", *key.split("/", 1))
            if entry is not None and entry.obj["spec"].get("nodeName"):
                self.outcome.also_placed.append(Placement(key, "snapshot", entry.obj["spec"]["nodeName"]))
        self.outcome.after = self.usage()
        self._note_zones()
        return self.outcome

    def _note_zones(self) -> None:
        for entry in self.sim.store.entries("nodes"):
            self.outcome.zones[entry.obj["metadata"]["name"]] = node_whatifs.zone_of(entry.obj)

    async def _apply(self, applied: Applied) -> None:
        """Create the object, or replace the one of that name (as `kubectl apply` would)."""
        obj = copy.deepcopy(applied.obj)
        obj["metadata"] = dict(obj.get("metadata") or {})
        rt = self.sim.api.kinds.by_store_name.get(applied.resource)
        if rt is None:
            hint = " (add its CustomResourceDefinition to --add)" if "." in applied.resource else ""
            raise ManifestError(f"{applied.source}: the simulated cluster does not serve it{hint}")
        if rt.namespaced:
            obj["metadata"].setdefault("namespace", "default")
        meta = obj["metadata"]
        existing = self.sim.store.get(applied.resource, meta.get("namespace") or "", meta.get("name") or "")
        try:
            if existing is None:
                self.sim.api.create(rt, meta.get("namespace") if rt.namespaced else None, obj)
            else:
                obj["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                self.sim.api.update(rt, meta.get("namespace") if rt.namespaced else None, meta["name"], obj)
        except ApiError as exc:
            raise ManifestError(f"{applied.source}: {exc}") from exc
        if applied.resource == "customresourcedefinitions":
            await self._until_served(obj)

    async def _until_served(self, crd: Obj) -> None:
        """A CRD is served once the endpoint established it (a turn of the loop or a few)."""
        spec = crd.get("spec") or {}
        name = f"{(spec.get('names') or {}).get('plural', '')}.{spec.get('group', '')}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while name not in self.sim.api.kinds.by_store_name:
            if loop.time() > deadline:
                raise SimulationError(
                    f"CustomResourceDefinition {name} was not served within {self.timeout:g}s"
                )
            await asyncio.sleep(0.01)

    # ---- node what-ifs -------------------------------------------------------------------

    def nodes_matching(self, selector: str) -> list[str]:
        """The names of the nodes a label selector ("zone=a,!gpu") selects."""
        try:
            requirements = parse_label_selector(selector)
        except ApiError as exc:
            raise ManifestError(f"--drain-selector {selector!r}: {exc.message}") from exc
        return sorted(
            e.obj["metadata"]["name"]
            for e in self.sim.store.entries("nodes")
            if labels_match(requirements, e.obj)
        )

    def node(self, name: str) -> Obj:
        found = self.sim.store.get("nodes", "", name)
        if found is None:
            raise ManifestError(f"node {name!r} is not in the cluster")
        return found

    async def drain(self, names: Sequence[str]) -> Outcome:
        """`kubectl drain` of the nodes: cordoned, each evictable pod evicted through the eviction
        API, its replacement placed. A PodDisruptionBudget may refuse an eviction; as kubectl
        retries it, so does the drain, pass after pass: the replacements placed in a pass are
        taken as Ready (their kubelet would start them), which may let the budget allow the
        next eviction. A pass that evicts nothing ends it: the pods still refused stay."""
        nodes = [self.node(name) for name in names]
        for node in nodes:
            body = copy.deepcopy(node)
            body.setdefault("spec", {})["unschedulable"] = True
            self.sim.api.update(BY_STORE_NAME["nodes"], None, node["metadata"]["name"], body)
            self.outcome.drained.append(node["metadata"]["name"])
        on_nodes = node_whatifs.by_node(self._pods(), names)
        waiting = [
            (pod, name)
            for name in names
            for pod in on_nodes[name]
            if node_whatifs.fate(pod) is not Fate.STAYS
        ]
        while waiting:
            refused: list[tuple[Obj, str, str]] = []
            replacements: list[tuple[str, str, Obj]] = []
            for pod, name in waiting:
                why = self._evict(pod)
                if why:
                    refused.append((pod, name, why))
                    continue
                fate = node_whatifs.fate(pod)
                self.outcome.evictions.append(Eviction(key_of(pod), name, fate.value))
                if fate is Fate.REPLACED:
                    replacements.append((f"evicted from {name}", "pods", node_whatifs.replacement(pod)))
            await self._place(replacements)
            if len(refused) == len(waiting) or not refused:
                for pod, name, why in refused:
                    self.outcome.evictions.append(Eviction(key_of(pod), name, "blocked", why))
                break
            await self._run_placed(body for _, _, body in replacements)
            waiting = [(pod, name) for pod, name, _ in refused]
        return self._refresh()

    async def _run_placed(self, pods: Iterable[Obj]) -> None:
        """The bound ones of ``pods`` Running and Ready, as their kubelet would make them, and the
        disruption budgets recomputed from them. A replacement has its evicted pod's name (so
        the report lines up), which the budget lists as disrupted until that pod is gone: the
        entry is dropped, as a new name would never have been listed."""
        replaced: dict[str, set[str]] = {}
        for pod in pods:
            meta = pod["metadata"]
            current = self.sim.store.get("pods", meta["namespace"], meta["name"])
            if current is None or not current["spec"].get("nodeName"):
                continue
            replaced.setdefault(meta["namespace"], set()).add(meta["name"])
            old = current.get("status") or {}
            conditions = [c for c in old.get("conditions") or () if c.get("type") != "Ready"]
            conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": now()})
            status = {**old, "phase": "Running", "conditions": conditions}
            body = {**current, "status": status}
            self.sim.api.update(BY_STORE_NAME["pods"], meta["namespace"], meta["name"], body, "status")
        pdbs = BY_STORE_NAME["poddisruptionbudgets"]
        for namespace, names in replaced.items():
            for entry in list(self.sim.store.entries("poddisruptionbudgets", namespace)):
                status = entry.obj.get("status") or {}
                disrupted = status.get("disruptedPods") or {}
                if names & disrupted.keys():
                    kept = {pod: at for pod, at in disrupted.items() if pod not in names}
                    body = {**entry.obj, "status": {**status, "disruptedPods": kept}}
                    self.sim.api.update(pdbs, namespace, entry.obj["metadata"]["name"], body, "status")
        assert self._disruption is not None
        disruption = self._disruption
        await self._poll(lambda: disruption.settled, "the disruption budgets were not recomputed")

    async def remove_nodes(self, names: Sequence[str]) -> Outcome:
        """The nodes deleted: their pods go with them, and what controllers own comes back pending."""
        replacements: list[tuple[str, str, Obj]] = []
        on_nodes = node_whatifs.by_node(self._pods(), names)
        for node in [self.node(name) for name in names]:
            name = node["metadata"]["name"]
            for pod in on_nodes[name]:
                fate = node_whatifs.fate(pod)
                await self._delete(pod)
                result = "removed" if fate is Fate.STAYS else fate.value  # a daemon pod goes with its node
                self.outcome.evictions.append(Eviction(key_of(pod), name, result))
                if fate is Fate.REPLACED:
                    replacements.append((f"was on removed {name}", "pods", node_whatifs.replacement(pod)))
            self.sim.api.delete(BY_STORE_NAME["nodes"], None, name, {})
            self.outcome.nodes_removed.append(name)
        await self._place(replacements)
        return self._refresh()

    # ---- --fit ---------------------------------------------------------------------------

    async def fit(self, template: NodeTemplate, limit: int | None = None) -> Fit:
        """The fewest nodes like ``template`` that place every pending pod (see `fit`).

        Each count is a real run: the nodes (with the template's devices) are created, then
        fresh copies of the pending pods (which never preempt), and once all are decided the
        copies, the nodes and their slices are deleted again, and the copies' claims are
        deallocated; the count found is then run once more and kept, so the report shows it."""
        waiting = [
            pod
            for pod in self._pods()
            if not pod["spec"].get("nodeName")
            and pod["spec"].get("schedulerName") in self.profiles
            and (pod.get("status") or {}).get("phase") not in FINISHED
        ]
        result = Fit(template.name, len(waiting))
        result.bound = min(len(waiting), limit) if limit else len(waiting)
        if not waiting:
            result.nodes = 0
            self.outcome.fit = result
            return result
        sources = {p.pod: p.source for p in self.outcome.pending}
        copies = []
        for pod in waiting:
            await self._delete(pod)
            body = node_whatifs.replacement(pod)
            body["spec"]["preemptionPolicy"] = "Never"
            copies.append((sources.get(key_of(pod), "pending in the snapshot"), "pods", body))
        taken = {e.obj["metadata"]["name"] for e in self.sim.store.entries("nodes")}
        names = node_whatifs.new_node_names(template.name, result.bound, taken, "fit")

        base = self._counts()
        allocated = self._allocated_claims()

        async def trial(count: int) -> int:
            left = await self._try(template, names[:count], copies, base)
            await self._undo(template, names[:count], copies, base, allocated)
            return left

        await self._until_cache_agrees(base)
        await self._until_claims_agree(allocated)
        result.nodes = await smallest(trial, result.bound, result.tried, self._guess(template, waiting))
        kept = names[: result.nodes or 0]
        moved = {key_of(body) for _, _, body in copies}
        self.outcome.pending = [p for p in self.outcome.pending if p.pod not in moved]
        await self._add_nodes(template, kept)
        self.outcome.nodes_added += kept
        await self._until_cache_agrees((base[0] + len(kept), base[1]))
        await self._place(copies)
        if result.nodes is None:
            left = next((p for p in self.outcome.pending if p.pod in moved), None)
            result.still_pending = f"{left.pod}: {left.message}" if left else ""
        self.outcome.fit = result
        self._refresh()
        return result

    def _guess(self, template: NodeTemplate, pods: Sequence[Obj]) -> int:
        """Where --fit's search starts: how many template nodes the pods' requests fill."""
        status = template.node.get("status") or {}
        try:
            offered = Resource.from_list(status.get("allocatable") or status.get("capacity"))
            wanted = [pod_resources(p["spec"], p.get("status")).requests for p in pods]
        except (QuantityError, TypeError, AttributeError):
            return 1  # the search still finds the count, from 1
        names = ("cpu", "memory", "ephemeral-storage", *offered.scalar)
        requests = [{name: r.get(name) for name in names} | {"pods": 1} for r in wanted]
        return resource_guess(requests, {name: offered.get(name) for name in (*names, "pods")})

    async def _try(
        self,
        template: NodeTemplate,
        names: Sequence[str],
        copies: Sequence[tuple[str, str, Obj]],
        base: tuple[int, int],
    ) -> int:
        """Add the nodes and the copies; how many copies are left pending."""
        await self._add_nodes(template, names)
        await self._until_cache_agrees((base[0] + len(names), base[1]))
        await self._until_listers_agree("resourceslices")
        tracker = _Tracker(final_on_nomination=True)
        self.sim.store.listeners.append(tracker.on_event)
        try:
            for source, resource, body in copies:
                tracker.track(await self._create(source, resource, body))
            await self._wait(tracker)
        finally:
            self.sim.store.listeners.remove(tracker.on_event)
        keys = [key_of(body) for _, _, body in copies]
        return sum(
            1
            for key in keys
            if not (self.sim.store.get("pods", *key.split("/", 1)) or {}).get("spec", {}).get("nodeName")
        )

    async def _add_nodes(self, template: NodeTemplate, names: Sequence[str]) -> None:
        for name in names:
            await self._create("--fit", "nodes", template.node_named(name))
            for slice_ in template.slices_for(name):
                await self._create("--fit", "resourceslices", slice_)

    async def _undo(
        self,
        template: NodeTemplate,
        names: Sequence[str],
        copies: Sequence[tuple[str, str, Obj]],
        base: tuple[int, int],
        allocated: int,
    ) -> None:
        for _, _, body in copies:
            await self._delete(body)
        for name in names:
            for slice_ in template.slices_for(name):
                self.sim.api.delete(BY_STORE_NAME["resourceslices"], None, slice_["metadata"]["name"], {})
            self.sim.api.delete(BY_STORE_NAME["nodes"], None, name, {})
        await self._until_cache_agrees(base)
        await self._until_claims_agree(allocated)

    def _allocated_claims(self) -> int:
        return sum(1 for e in self.sim.store.entries("resourceclaims") if allocation_of(e.obj) is not None)

    async def _until_claims_agree(self, allocated: int) -> None:
        """Until the claims the last run allocated are deallocated again (the claim controller
        does it once their pods are gone) and the scheduler has seen it, so that no run
        starts with devices the one before held."""
        await self._poll(
            lambda: self._allocated_claims() == allocated, "the copies' claims were not released"
        )
        await self._until_listers_agree("resourceslices", "resourceclaims")

    async def _until_listers_agree(self, *resources: str) -> None:
        """Until the scheduler's listers of ``resources`` hold what the cluster holds (each
        object at its resourceVersion); kinds the scheduler does not watch are skipped."""
        assert self._app is not None
        fwk = next(iter(self._app.frameworks.values()))
        listers = []
        for resource in resources:
            try:
                listers.append((resource, fwk.handle.lister(resource)))
            except KeyError:
                continue

        def agree() -> bool:
            for resource, lister in listers:
                cluster = {_store_key(e.obj): _version(e.obj) for e in self.sim.store.entries(resource)}
                seen = {_store_key(o): _version(o) for o in lister.list()}
                if cluster != seen:
                    return False
            return True

        await self._poll(agree, "the scheduler's informers did not catch up")

    def _counts(self) -> tuple[int, int]:
        """The cluster's nodes and bound, unfinished pods."""
        nodes = sum(1 for _ in self.sim.store.entries("nodes"))
        bound = sum(
            1
            for pod in self._pods()
            if pod["spec"].get("nodeName") and (pod.get("status") or {}).get("phase") not in FINISHED
        )
        return nodes, bound

    async def _until_cache_agrees(self, counts: tuple[int, int]) -> None:
        """Until the scheduler's cache holds as many nodes and bound pods as ``counts`` (what the
        cluster holds), so the next run starts from what the last one left (polled: the
        informers' streams are apart)."""
        assert self._app is not None and self._app.scheduler is not None
        cache = self._app.scheduler.cache
        await self._poll(
            lambda: (
                cache.node_count() == counts[0]
                and cache.pod_count() == counts[1]
                and cache.assumed_count() == 0
            ),
            "the scheduler's cache did not catch up",
        )

    async def _poll(self, condition: Callable[[], bool], what: str) -> None:
        """Until ``condition`` holds; raises if the scheduler stops or the timeout passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while not condition():
            self._check_running()
            if loop.time() > deadline:
                raise SimulationError(f"{what} within {self.timeout:g}s")
            await asyncio.sleep(0.005)

    def _pods(self) -> list[Obj]:
        return [entry.obj for entry in self.sim.store.entries("pods")]

    def _evict(self, pod: Obj) -> str:
        """Evict the pod; "" when it went, else why the eviction API refused."""
        meta = pod["metadata"]
        body = {"metadata": {"name": meta["name"]}, "deleteOptions": {"gracePeriodSeconds": 0}}
        try:
            status = evict(self.sim.api, meta["namespace"], meta["name"], body, [])
        except ApiError as exc:
            causes = (exc.details or {}).get("causes") or ()
            return "; ".join(c.get("message", "") for c in causes) or exc.message
        return "" if status.get("status") == "Success" else str(status.get("message", ""))

    def _pending(self, pod: Obj, source: str) -> Pending:
        name = pod["spec"].get("schedulerName")
        if name not in self.profiles:
            message = f"schedulerName {name!r} is none of the profiles ({', '.join(sorted(self.profiles))})"
            return Pending(key_of(pod), source, "NotOurs", message)
        condition = unschedulable_condition(pod) or {}
        return Pending(key_of(pod), source, condition.get("reason", ""), condition.get("message", ""))

    async def _suggestions(self, pod: Obj) -> tuple[str, ...]:
        """What `pyscheduler explain` would suggest for the pending pod, on the state it ended in."""
        assert self._app is not None and self._app.scheduler is not None
        fwk = self._app.frameworks[pod["spec"]["schedulerName"]]
        explanation = await explain_pod(self._app.scheduler, fwk, Pod.from_dict(pod), preemption=False)
        return tuple(explanation.suggestions)

    async def _create(self, source: str, resource: str, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj["metadata"]
        for ref in meta.get("ownerReferences") or ():
            if not ref.get("uid"):
                ref["uid"] = self._uids.get((ref["kind"], meta.get("namespace", ""), ref["name"]), "")
        try:
            created = await self.sim.create(resource, obj)
        except ApiError as exc:
            what = f"{obj.get('kind', resource)} {meta.get('namespace', '')}/{meta.get('name')}".replace(
                " /", " "
            )
            label = source if what == source else f"{source}: {what}"
            raise ManifestError(f"{label}: {exc}") from exc
        cmeta = created["metadata"]
        self._uids[(created["kind"], cmeta.get("namespace", ""), cmeta["name"])] = cmeta["uid"]
        return created

    async def _wait(self, tracker: _Tracker) -> None:
        """Until every tracked pod is decided; raises if the scheduler stops or time runs out."""
        assert self._task is not None
        if not tracker.pending:
            return
        waiter = asyncio.create_task(tracker.all_decided.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, self._task}, timeout=self.timeout, return_when="FIRST_COMPLETED"
            )
        finally:
            waiter.cancel()
        if self._task in done:
            self._check_running()
        if waiter not in done:
            undecided = ", ".join(sorted(tracker.pending)[:10])
            raise SimulationError(
                f"{len(tracker.pending)} pod(s) still undecided after {self.timeout:g}s: {undecided}"
            )

    # ---- --capacity -----------------------------------------------------------------------

    async def capacity(self, pod: Obj, limit: int) -> Capacity:
        """Add copies of ``pod`` one at a time until one is not bound (or ``limit`` fit)."""
        workload = Workload(f"Pod {pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}")
        result = Capacity(workload.source.split(" ", 1)[1])
        base = pod["metadata"]["name"]
        if pod["spec"].get("schedulerName") not in self.profiles:
            result.stopped_by = self._pending(pod, workload.source).message
            self.outcome.capacity = result
            return result
        for index in range(limit):
            copy_ = copy.deepcopy(pod)
            copy_["metadata"]["name"] = f"{base}-{index + 1}-{suffix(f'{base}/{index}')}"
            copy_["spec"]["preemptionPolicy"] = "Never"  # what fits beside the pods already there
            tracker = _Tracker(final_on_nomination=True)
            self.sim.store.listeners.append(tracker.on_event)
            try:
                created = await self._create(workload.source, "pods", copy_)
                tracker.track(created)
                await self._wait(tracker)
            finally:
                self.sim.store.listeners.remove(tracker.on_event)
            placed = self.sim.store.get("pods", created["metadata"]["namespace"], created["metadata"]["name"])
            node = (placed or {}).get("spec", {}).get("nodeName")
            if not node:
                condition = unschedulable_condition(placed or {}) or {}
                result.stopped_by = condition.get("message", "")
                await self._delete(created)
                break
            result.fits += 1
            result.per_node[node] = result.per_node.get(node, 0) + 1
        else:
            result.limit_reached = True
        self.outcome.capacity = result
        self.outcome.after = self.usage()
        return result

    async def _delete(self, pod: Obj) -> None:
        """The copy that did not fit leaves, so the after-state holds only the copies that fit."""
        meta = pod["metadata"]
        with contextlib.suppress(ApiError):
            self.sim.api.delete(
                BY_STORE_NAME["pods"], meta["namespace"], meta["name"], {"gracePeriodSeconds": 0}
            )
