from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import Node, Pod
from scheduler.api.objects import MalformedObject
from scheduler.api.taints import Toleration


def node_json(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "uid": "u-n1"},
        "spec": {},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}, **status},
    }


def pod_json(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u-p"},
        "spec": {"containers": [{"name": "c", "image": "app"}], **spec},
    }


@pytest.mark.parametrize(
    ("case", "status", "declared"),
    [
        ("a node without declaredFeatures declares nothing", {}, frozenset()),
        ("a null declaredFeatures declares nothing", {"declaredFeatures": None}, frozenset()),
        (
            "a node keeps every declared feature",
            {"declaredFeatures": ["GuaranteedQoSPodCPUResize", "RestartAllContainersOnContainerExits"]},
            frozenset({"GuaranteedQoSPodCPUResize", "RestartAllContainersOnContainerExits"}),
        ),
    ],
)
def test_node_reads_status_declared_features(case: str, status: dict[str, Any], declared: frozenset) -> None:
    assert Node.from_dict(node_json(**status)).declared_features == declared


@pytest.mark.parametrize(
    "bad", ["RestartAllContainersOnContainerExits", ["ok", 3], {"a": True}], ids=["string", "number", "map"]
)
def test_node_with_malformed_declared_features_is_reported_not_misread(bad: Any) -> None:
    with pytest.raises(MalformedObject, match=r"status\.declaredFeatures(\[1\])?: must be a (list|string)"):
        Node.from_dict(node_json(declaredFeatures=bad))


def test_pod_keeps_the_spec_facts_node_features_are_inferred_from() -> None:
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
    pod = Pod.from_dict(
        pod_json(
            hostNetwork=True,
            hostUsers=False,
            initContainers=[{"name": "i", "image": "init", "restartPolicyRules": [rule]}],
        )
    )
    assert (pod.host_network, pod.host_users, pod.restart_rule_actions) == (
        True,
        False,
        frozenset({"RestartAllContainers"}),
    )


def test_pod_defaults_leave_host_users_unset() -> None:
    pod = Pod.from_dict(pod_json())
    assert (pod.host_network, pod.host_users, pod.restart_rule_actions) == (False, None, frozenset())


def test_pod_with_a_non_boolean_host_users_is_malformed() -> None:
    with pytest.raises(MalformedObject, match=r"spec\.hostUsers: must be a boolean"):
        Pod.from_dict(pod_json(hostUsers="false"))


def test_a_pod_placed_on_a_node_is_an_independent_copy():
    original = Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"}},
            "spec": {"containers": []},
        }
    )
    placed = original.on_node("n1")
    assert placed.node_name == "n1" and original.node_name == ""
    assert placed is not original
    assert (placed.uid, placed.key, placed.labels, placed.requests) == (
        original.uid,
        original.key,
        original.labels,
        original.requests,
    )


def test_pods_with_the_same_tolerations_share_them_and_other_tolerations_stay_apart() -> None:
    default = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    first = Toleration.parse(dict(default, tolerationSeconds=300))
    again = Toleration.parse(dict(default))
    assert first is again
    assert first == Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute")
    other = Toleration.parse({"key": "gpu", "value": "yes", "effect": "NoSchedule"})
    assert other == Toleration("gpu", "Equal", "yes", "NoSchedule")
    assert other is not first
