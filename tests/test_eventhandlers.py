"""Informer events → cache and queue, with recording fakes."""

from __future__ import annotations

from scheduler.api import Node, Pod
from scheduler.eventhandlers import NODE_DELETE, NodeEvents, PodEvents


class Recorder:
    def __init__(self, assumed: set[str] = frozenset()):
        self.calls: list[tuple] = []
        self.assumed = set(assumed)

    def is_assumed(self, uid: str) -> bool:
        return uid in self.assumed

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, *args))


def pod(name: str, node: str = "", scheduler: str = "pyscheduler", **status) -> Pod:
    return Pod(
        uid=f"uid-{name}", namespace="default", name=name, node_name=node, scheduler_name=scheduler, **status
    )


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
