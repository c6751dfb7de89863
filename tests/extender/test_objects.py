"""What the informers keep for the extenders (upstream sends whole API objects)."""

from __future__ import annotations

from typing import Any

from scheduler.api import Node, Pod
from scheduler.config import Extender
from scheduler.extender import ApiObjects
from scheduler.testing import node_dict, pod_dict


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_add(self, obj: Any) -> None:
        self.seen.append(f"add {obj.name}")

    def on_update(self, old: Any, new: Any) -> None:
        self.seen.append(f"update {new.name}")

    def on_delete(self, obj: Any) -> None:
        self.seen.append(f"delete {obj.name}")


def test_a_pending_pods_json_is_kept_until_it_is_bound_or_deleted():
    objects = ApiObjects()
    decode, inner = objects.pods.decoder(Pod.from_dict), Recorder()
    handler = objects.pods.handler(inner)
    pending = decode(pod_dict("web", uid="u1"))
    handler.on_add(pending)
    assert objects.pod_json(pending)["spec"]["containers"][0]["name"] == "c0"
    bound = decode(pod_dict("web", uid="u1", node_name="n1"))
    handler.on_update(pending, bound)
    assert objects.pods.get(bound) is None  # no extender needs bound pods whole
    other = decode(pod_dict("db", uid="u2"))
    handler.on_delete(other)
    assert len(objects.pods) == 0
    assert inner.seen == ["add web", "update web", "delete db"]  # the scheduler's handler still told


def test_bound_pods_are_kept_for_an_extender_that_preempts_without_node_cache():
    objects = ApiObjects.for_extenders([Extender(url_prefix="http://x", preempt_verb="preempt")])
    bound = objects.pods.decoder(Pod.from_dict)(pod_dict("web", uid="u1", node_name="n1"))
    assert objects.pod_json(bound)["spec"]["nodeName"] == "n1"
    cache_capable = ApiObjects.for_extenders(
        [Extender(url_prefix="http://x", preempt_verb="p", filter_verb="f", node_cache_capable=True)]
    )
    cache_capable.pods.decoder(Pod.from_dict)(pod_dict("db", uid="u2", node_name="n1"))
    cache_capable.nodes.decoder(Node.from_dict)(node_dict("n1"))
    assert len(cache_capable.pods) == 0 and len(cache_capable.nodes) == 0  # uids and names suffice


def test_a_node_deleted_and_created_again_under_its_name_keeps_the_new_nodes_json():
    objects = ApiObjects(nodes=True)
    decode, handler = objects.nodes.decoder(Node.from_dict), objects.nodes.handler(Recorder())
    first = decode({**node_dict("n1"), "metadata": {"name": "n1", "uid": "old"}})
    second = decode({**node_dict("n1", labels={"new": "yes"}), "metadata": {"name": "n1", "uid": "new"}})
    handler.on_delete(first)  # the informer tells the delete after decoding the new one
    handler.on_add(second)
    assert objects.node_json(second)["metadata"]["uid"] == "new"
    handler.on_delete(second)
    assert objects.nodes.get(second) is None


def test_without_kept_json_a_stand_in_names_the_object():
    objects = ApiObjects()
    pod = Pod.from_dict(pod_dict("web", uid="u1", labels={"app": "web"}))
    assert objects.pod_json(pod)["metadata"] == {
        "name": "web",
        "namespace": "default",
        "uid": "u1",
        "labels": {"app": "web"},
        "annotations": {},
    }
    assert objects.node_json(Node.from_dict(node_dict("n1")))["metadata"]["name"] == "n1"
