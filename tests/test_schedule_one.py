"""The scheduling loop in process: cache + queue + default plugins, binder in memory."""

from __future__ import annotations

import asyncio

from scheduler.api import Node, Pod
from scheduler.build import DiscardStatus, build_scheduler
from scheduler.config import default_config
from scheduler.framework import Code, Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import available_plugins
from scheduler.testing import FakeClient, make_pod


class MemoryBinder:
    name = "DefaultBinder"
    bound: dict[str, str] = {}

    def __init__(self, args, handle):
        pass

    async def bind(self, state, pod, node_name):
        MemoryBinder.bound[pod.name] = node_name
        return None


class Events:
    def __init__(self):
        self.recorded = []

    def record(self, obj, event_type, reason, action, note):
        self.recorded.append((obj.name, reason, note))


def requesting(name: str, cpu: str) -> Pod:
    return make_pod(name, uid=f"uid-{name}", requests={"cpu": cpu}, images=["x"])


async def test_failed_attempts_never_use_up_the_binding_slots():
    config = default_config()
    registry = in_tree_registry()
    registry["DefaultBinder"] = MemoryBinder
    available_plugins(config, registry)
    pods = {f"big-{i}": requesting(f"big-{i}", "8") for i in range(5)}
    events = Events()
    parts = build_scheduler(
        config,
        registry,
        FakeClient(),
        events=events,
        status=DiscardStatus(),
        current_pod=lambda pod: pods.get(pod.name),
        max_inflight_bindings=2,  # fewer slots than failing pods
    )
    parts.cache.add_node(
        Node.from_dict({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2", "pods": "10"}}})
    )
    queue, scheduler = parts.queue, parts.scheduler
    for pod in pods.values():
        queue.add(pod)
    loop = asyncio.create_task(scheduler.run())
    try:
        for _ in range(100):
            if sum(reason == "FailedScheduling" for _, reason, _ in events.recorded) >= 5:
                break
            await asyncio.sleep(0.01)
        small = requesting("small", "1")
        pods["small"] = small
        queue.add(small)
        for _ in range(100):
            if "small" in MemoryBinder.bound:
                break
            await asyncio.sleep(0.01)
        assert MemoryBinder.bound.get("small") == "n1"
        failed = [note for name, reason, note in events.recorded if reason == "FailedScheduling"]
        assert failed[0].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    finally:
        loop.cancel()
        queue.close()


class Recorder:
    """Stands in for the API writes of a scheduling cycle: events and status patches."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.patches: list[tuple[str, dict | None, str | None]] = []

    def record(self, obj, event_type, reason, action, note):
        self.events.append((obj.name, reason, note))

    def submit(self, pod, condition, nominated):
        self.patches.append((pod.name, condition, nominated))

    async def write_now(self, pod, condition, nominated):
        self.patches.append((pod.name, condition, nominated))


def one_node_scheduler(pods: dict[str, Pod], registry_overrides=None, disable=()):
    """The default profile (with ``disable`` turned off) on one 2-cpu node, binder in memory."""
    config = default_config()
    profile = config.profiles[0]
    registry = in_tree_registry()
    registry["DefaultBinder"] = MemoryBinder
    registry.update(registry_overrides or {})
    available_plugins(config, registry)
    multi = profile.plugins.multi_point
    multi.enabled = [ref for ref in multi.enabled if ref.name not in disable]
    for name in registry_overrides or {}:
        if name not in {ref.name for ref in multi.enabled}:
            multi.enabled.append(type(multi.enabled[0])(name))
    recorder = Recorder()
    parts = build_scheduler(
        config,
        registry,
        FakeClient(),
        events=recorder,
        status=recorder,
        current_pod=lambda pod: pods.get(pod.name),
    )
    parts.cache.add_node(
        Node.from_dict({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2", "pods": "10"}}})
    )
    return parts.scheduler, parts.queue, recorder


async def attempt(scheduler, queue, pod: Pod) -> None:
    queue.add(pod)
    info = await asyncio.wait_for(queue.pop(), 1)
    await scheduler.attempt(info)
    await scheduler.wait_for_bindings(1)


def pod_with(name: str, cpu: str, **status) -> Pod:
    raw = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 3},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": status,
    }
    return Pod.from_dict(raw)


async def test_without_postfilter_plugins_a_failed_pod_loses_its_nomination():
    # upstream's schedulingAlgorithm returns clearNominatedNode when no PostFilter plugin runs
    pod = pod_with("big", "8", nominatedNodeName="n1")
    scheduler, queue, recorder = one_node_scheduler(
        {"big": pod}, disable={"DefaultPreemption", "DynamicResources"}
    )
    await attempt(scheduler, queue, pod)
    (name, condition, nominated), *_ = recorder.patches
    assert name == "big" and nominated == ""
    assert condition["reason"] == "Unschedulable"


async def test_the_podscheduled_condition_observes_the_pods_generation():
    pod = pod_with("big", "8")
    scheduler, queue, recorder = one_node_scheduler({"big": pod})
    await attempt(scheduler, queue, pod)
    condition = recorder.patches[0][1]
    assert condition["observedGeneration"] == 3  # PodObservedGenerationTracking is GA


async def test_a_pod_recreated_under_the_same_name_is_not_reported_for_the_old_one():
    # upstream's handleSchedulingFailure: a different UID in the informer means a new pod
    old = pod_with("web", "8")
    pods = {"web": Pod.from_dict({**_raw(old), "metadata": {**_raw(old)["metadata"], "uid": "uid-new"}})}
    scheduler, queue, recorder = one_node_scheduler(pods)
    await attempt(scheduler, queue, old)
    assert recorder.events == [] and recorder.patches == []
    assert not queue.has(old.uid)


def _raw(pod: Pod) -> dict:
    return {
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "generation": pod.generation,
        },
        "spec": {
            "schedulerName": pod.scheduler_name,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "8"}}}],
        },
    }


class WaitThenAllow:
    """A Permit plugin that holds every pod, allowed by the test."""

    name = "WaitThenAllow"
    instance = None

    def __init__(self, args, handle):
        WaitThenAllow.instance = self

    def permit(self, state, pod, node_name):
        return Status(Code.WAIT, ("held",)), 30.0


async def test_a_pod_held_at_permit_is_nominated_to_its_node_while_it_waits():
    # NominatedNodeNameForExpectation (beta, on): a binding that waits tells others where it goes
    pod = pod_with("held", "1")
    scheduler, queue, recorder = one_node_scheduler({"held": pod}, {"WaitThenAllow": WaitThenAllow})
    queue.add(pod)
    await scheduler.attempt(await asyncio.wait_for(queue.pop(), 1))
    fwk = scheduler.frameworks["pyscheduler"]
    for _ in range(100):
        if recorder.patches:
            break
        await asyncio.sleep(0.01)
    assert recorder.patches == [("held", None, "n1")]
    fwk.waiting_pods.get(pod.uid).allow("WaitThenAllow")
    await scheduler.wait_for_bindings(1)
    assert MemoryBinder.bound["held"] == "n1"


async def test_a_pod_bound_at_once_is_not_nominated_first():
    pod = pod_with("quick", "1")
    scheduler, queue, recorder = one_node_scheduler({"quick": pod})
    await attempt(scheduler, queue, pod)
    assert MemoryBinder.bound["quick"] == "n1"
    assert recorder.patches == []
