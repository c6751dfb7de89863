"""The scheduling loop in process: cache + queue + default plugins, binder in memory."""

from __future__ import annotations

import asyncio

from scheduler.api import Node, Pod
from scheduler.app import available_plugins
from scheduler.cache import Cache
from scheduler.config import default_config
from scheduler.plugins.registry import in_tree_registry
from scheduler.queue import ProfilesPolicy, SchedulingQueue
from scheduler.runtime import Framework
from scheduler.runtime.handle import FrameworkHandle
from scheduler.schedule_one import Scheduler


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


def make_pod(name: str, cpu: str) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {
                "schedulerName": "pyscheduler",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
            },
        }
    )


async def test_failed_attempts_never_use_up_the_binding_slots():
    config = default_config()
    registry = in_tree_registry()
    registry["DefaultBinder"] = MemoryBinder
    available_plugins(config, registry)
    cache = Cache()
    cache.add_node(
        Node.from_dict({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2", "pods": "10"}}})
    )
    handle = FrameworkHandle("pyscheduler", None, cache.snapshot, lambda *a: None)  # type: ignore[arg-type]
    fwk = Framework(config.profiles[0], registry, handle)
    queue = SchedulingQueue(sort_key=fwk.sort_key, policy=ProfilesPolicy({"pyscheduler": fwk}))
    pods = {f"big-{i}": make_pod(f"big-{i}", "8") for i in range(5)}
    events = Events()

    async def no_patch(*args):
        return None

    scheduler = Scheduler(
        cache=cache,
        queue=queue,
        frameworks={"pyscheduler": fwk},
        events=events,
        patch_status=no_patch,
        current_pod=lambda pod: pods.get(pod.name),
        max_inflight_bindings=2,  # fewer slots than failing pods
    )
    for pod in pods.values():
        queue.add(pod)
    loop = asyncio.create_task(scheduler.run())
    try:
        for _ in range(100):
            if sum(reason == "FailedScheduling" for _, reason, _ in events.recorded) >= 5:
                break
            await asyncio.sleep(0.01)
        small = make_pod("small", "1")
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
