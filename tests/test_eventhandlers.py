"""Informer events → cache and queue, with recording fakes."""

from __future__ import annotations

from scheduler.api import MalformedObject, Node, Pod
from scheduler.eventhandlers import NODE_DELETE, DeviceTaintRuleEvents, MalformedPods, NodeEvents, PodEvents
from scheduler.framework import ActionType, ClusterEvent
from scheduler.framework.interface import RESOURCE_SLICE
from scheduler.testing import make_pod


class Recorder:
    def __init__(self, assumed: set[str] = frozenset()):
        self.calls: list[tuple] = []
        self.assumed = set(assumed)

    def is_assumed(self, uid: str) -> bool:
        return uid in self.assumed

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, *args))


def pod(name: str, node: str = "", scheduler: str = "pyscheduler", phase: str = "Pending") -> Pod:
    return make_pod(name, uid=f"uid-{name}", node_name=node, scheduler_name=scheduler, phase=phase)


def test_a_new_unassigned_pod_of_ours_is_queued_and_others_are_not():
    cache, queue = Recorder(), Recorder()
    handler = PodEvents(cache, queue, ["pyscheduler"])
    handler.on_add(pod("ours"))
    handler.on_add(pod("theirs", scheduler="default-scheduler"))
    assert [c[0] for c in queue.calls] == ["add"]
    assert cache.calls == []


def test_an_assigned_pod_of_any_scheduler_counts_in_the_cache():
    cache, queue = Recorder(), Recorder()
    handler = PodEvents(cache, queue, ["pyscheduler"])
    handler.on_add(pod("theirs", node="n1", scheduler="default-scheduler"))
    assert [c[0] for c in cache.calls] == ["add_pod"]
    assert [c[0] for c in queue.calls] == ["on_cluster_event"]


def test_binding_moves_a_pod_from_the_queue_to_the_cache():
    cache, queue = Recorder(), Recorder()
    handler = PodEvents(cache, queue, ["pyscheduler"])
    handler.on_update(pod("p"), pod("p", node="n1"))
    assert [c[0] for c in queue.calls] == ["delete", "on_cluster_event"]
    assert [c[0] for c in cache.calls] == ["add_pod"]


def test_an_update_of_a_pod_being_bound_does_not_queue_it_again():
    cache, queue = Recorder(assumed={"uid-p"}), Recorder()
    handler = PodEvents(cache, queue, ["pyscheduler"])
    handler.on_update(pod("p"), pod("p"))
    assert queue.calls == []


def test_deleting_a_pod_held_at_permit_rejects_it():
    rejected = []
    handler = PodEvents(Recorder(), Recorder(), ["pyscheduler"], rejected.append)
    handler.on_delete(pod("p"))
    assert rejected == ["uid-p"]


def test_an_assigned_pod_turning_terminal_leaves_the_cache():
    cache, queue = Recorder(), Recorder()
    handler = PodEvents(cache, queue, ["pyscheduler"])
    handler.on_update(pod("p", node="n1"), pod("p", node="n1", phase="Succeeded"))
    assert [c[0] for c in cache.calls] == ["remove_pod"]


def test_node_deletion_is_a_cluster_event():
    cache, queue = Recorder(), Recorder()
    node = Node(name="n1")
    NodeEvents(cache, queue).on_delete(node)
    assert cache.calls == [("remove_node", node)]
    assert queue.calls == [("on_cluster_event", NODE_DELETE, node, None)]


def test_a_node_declaring_a_new_feature_is_a_node_update_event():
    cache, queue = Recorder(), Recorder()
    old = Node(name="n1")
    new = Node(name="n1", declared_features=frozenset({"RestartAllContainersOnContainerExits"}))
    NodeEvents(cache, queue).on_update(old, new)
    assert [c[0] for c in queue.calls] == ["on_cluster_event"]


def malformed_pod(name: str, **spec) -> dict:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 2},
        "spec": {"schedulerName": "pyscheduler", "containers": "x", **spec},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }


def test_a_malformed_pending_pod_of_ours_is_told_why_and_leaves_the_queue():
    queue, events, status = Recorder(), Recorder(), Recorder()
    handler = MalformedPods(["pyscheduler"], queue, events, status)
    error = MalformedObject("Pod", "default/p", "spec.containers: must be a list")
    handler.malformed("default/p", malformed_pod("p"), error)
    pod = handler.get("default/p")
    assert (pod.uid, pod.generation, pod.conditions) == ("uid-p", 2, ({"type": "Ready", "status": "False"},))
    assert [c[0] for c in queue.calls] == ["delete"]
    message = "malformed pod: spec.containers: must be a list"
    assert events.calls == [("record", pod, "Warning", "FailedScheduling", "Scheduling", message)]
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "observedGeneration": 2,
    }
    assert status.calls == [("submit", pod, condition, None)]
    handler.gone("default/p")
    assert handler.get("default/p") is None


def test_other_malformed_pods_are_left_to_the_log():
    queue, events, status = Recorder(), Recorder(), Recorder()
    handler = MalformedPods(["pyscheduler"], queue, events, status)
    error = MalformedObject("Pod", "?", "broken")
    for obj in (
        malformed_pod("theirs", schedulerName="default-scheduler"),
        malformed_pod("bound", nodeName="node-1"),
        {**malformed_pod("no-uid"), "metadata": {"name": "no-uid"}},
        {**malformed_pod("odd-namespace"), "metadata": {"name": "n", "uid": "u", "namespace": ["x"]}},
        {**malformed_pod("odd-scheduler"), "spec": {"schedulerName": ["pyscheduler"]}},
        None,
        "a pod",
    ):
        handler.malformed("k", obj, error)
    assert (queue.calls, events.calls, status.calls, handler.get("k")) == ([], [], [], None)


def test_every_change_of_a_device_taint_rule_is_a_resource_slice_update():
    queue = Recorder()
    events = DeviceTaintRuleEvents(queue, RESOURCE_SLICE)
    rule = {"metadata": {"name": "r"}, "spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}
    events.on_add(rule)
    events.on_update(rule, rule)
    events.on_delete(rule)  # the taint goes: the devices may fit again
    update = ClusterEvent(RESOURCE_SLICE, ActionType.UPDATE_OTHER, "ResourceSliceUpdate")
    assert queue.calls == [
        ("on_cluster_event", update, None, rule),
        ("on_cluster_event", update, rule, rule),
        ("on_cluster_event", update, rule, None),
    ]
