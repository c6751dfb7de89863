"""Shapes: a wrong type anywhere is reported with its field path, the way upstream writes paths."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import MalformedObject, Node, Pod
from scheduler.api.kinds import decoder_for, display_key


def pod_json(**spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "app", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u-p"},
        "spec": {"containers": [container], **spec},
    }


def reason(decode: Any, obj: Any) -> str:
    with pytest.raises(MalformedObject) as err:
        decode(obj)
    return err.value.reason


@pytest.mark.parametrize(
    ("quantity", "problem"),
    [
        ("abc", 'invalid quantity "abc"'),
        ("1.5.5", 'invalid quantity "1.5.5"'),
        ("-1", 'invalid quantity "-1": must not be negative'),
        ("1e1000", 'invalid quantity "1e1000": out of range'),
        (1e30, "invalid quantity 1e+30: out of range"),
        (True, "invalid quantity boolean true"),
        ({"value": 1}, "invalid quantity object"),
    ],
)
def test_an_invalid_quantity_is_reported_at_its_path(quantity: Any, problem: str) -> None:
    obj = pod_json()
    obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = quantity
    assert reason(Pod.from_dict, obj) == f"spec.containers[0].resources.requests[cpu]: {problem}"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": [None]}, "spec.containers[0]: must not be null"),
        ({"containers": "app"}, 'spec.containers: must be a list, got string "app"'),
        ({"priority": 2**31}, "spec.priority: must be a 32-bit integer, got number 2147483648"),
        ({"priority": 1.0}, "spec.priority: must be an integer, got number 1.0"),
        ({"nodeSelector": {"zone": 1}}, "spec.nodeSelector[zone]: must be a string, got number 1"),
        ({"schedulingGates": [{}]}, "spec.schedulingGates[0].name: required value"),
        (
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}},
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: "
            "must be an object, got list",
        ),
    ],
)
def test_a_wrong_type_is_reported_at_its_path(spec: dict[str, Any], expected: str) -> None:
    assert reason(Pod.from_dict, pod_json(**spec)) == expected


def test_null_fields_count_as_absent_and_unknown_fields_are_ignored() -> None:
    obj = pod_json(affinity=None, tolerations=None, futureField={"x": [None]})
    obj["status"] = None
    assert Pod.from_dict(obj).tolerations == ()


@pytest.mark.parametrize(
    ("obj", "shown", "expected"),
    [
        (None, "<no metadata>", "must be an object, got null"),
        ({"metadata": {"namespace": "ns"}, "spec": {}}, "ns/<no name>", "metadata.name: required value"),
        ({"metadata": {"name": "p", "uid": ""}, "spec": {}}, "p", "metadata.uid: required value"),
    ],
)
def test_an_object_is_named_however_broken(obj: Any, shown: str, expected: str) -> None:
    with pytest.raises(MalformedObject) as err:
        Pod.from_dict(obj)
    assert (err.value.key, err.value.reason) == (shown, expected)
    assert display_key(obj) == shown


def test_a_node_without_status_decodes_with_nothing_allocatable() -> None:
    node = Node.from_dict({"metadata": {"name": "n"}})
    assert (node.allocatable.milli_cpu, node.allocatable.allowed_pod_number) == (0, 0)


@pytest.mark.parametrize(
    ("resource", "obj", "expected"),
    [
        (
            "persistentvolumeclaims",
            {"metadata": {"name": "c"}, "spec": "standard"},
            "spec: must be an object",
        ),
        ("services", {"metadata": {"name": "s"}, "spec": {"selector": "app=web"}}, "spec.selector: must be"),
        (
            "poddisruptionbudgets",
            {"metadata": {"name": "b"}, "status": {"disruptionsAllowed": "1"}},
            "status.",
        ),
        (
            "csinodes",
            {"metadata": {"name": "n"}, "spec": {"drivers": [{"allocatable": {"count": "9"}}]}},
            "spec.",
        ),
    ],
)
def test_the_kinds_plugins_read_are_checked_and_kept_as_dicts(resource: str, obj: Any, expected: str) -> None:
    decode = decoder_for(resource)
    assert reason(decode, obj).startswith(expected)
    good = {"metadata": {"name": "x"}, "spec": {}}
    assert decode(good) is good
