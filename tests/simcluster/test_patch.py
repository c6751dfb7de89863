import pytest

from simcluster.errors import ApiError
from simcluster.patch import json_patch, merge_patch, strategic_merge_patch

STATUS = {
    "status": {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
            {"type": "Ready", "status": "False"},
        ],
    }
}


def test_merge_patch_replaces_lists_and_deletes_nulls() -> None:
    out = merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]})
    assert out == {"a": {"c": 2, "d": 3}, "l": [3]}


def test_strategic_patch_merges_pod_conditions_by_type() -> None:
    patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "True", "reason": None}]}}
    out = strategic_merge_patch(STATUS, patch)
    assert out["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "False"},
    ]
    assert STATUS["status"]["conditions"][0]["status"] == "False", "the input must stay untouched"


def test_strategic_patch_appends_new_condition_types_and_honours_delete_directives() -> None:
    patch = {
        "status": {"conditions": [{"type": "Extra", "status": "True"}, {"type": "Ready", "$patch": "delete"}]}
    }
    out = strategic_merge_patch(STATUS, patch)
    assert [c["type"] for c in out["status"]["conditions"]] == ["PodScheduled", "Extra"]


def test_strategic_patch_merges_finalizers_as_a_set_and_can_remove_them() -> None:
    obj = {"metadata": {"finalizers": ["a"]}}
    assert strategic_merge_patch(obj, {"metadata": {"finalizers": ["a", "b"]}})["metadata"]["finalizers"] == [
        "a",
        "b",
    ]
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    assert strategic_merge_patch(obj, patch)["metadata"]["finalizers"] == []


def test_strategic_patch_replaces_lists_without_a_merge_key() -> None:
    obj = {"spec": {"tolerations": [{"key": "a"}]}}
    assert strategic_merge_patch(obj, {"spec": {"tolerations": [{"key": "b"}]}}) == {
        "spec": {"tolerations": [{"key": "b"}]}
    }


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3], "b": {"c": "x"}}),
        ([{"op": "replace", "path": "/b/c", "value": "y"}], {"a": [1, 2], "b": {"c": "y"}}),
        ([{"op": "remove", "path": "/a/0"}], {"a": [2], "b": {"c": "x"}}),
        ([{"op": "move", "from": "/b/c", "path": "/d"}], {"a": [1, 2], "b": {}, "d": "x"}),
        ([{"op": "copy", "from": "/b/c", "path": "/d"}], {"a": [1, 2], "b": {"c": "x"}, "d": "x"}),
        ([{"op": "test", "path": "/b/c", "value": "x"}], {"a": [1, 2], "b": {"c": "x"}}),
    ],
)
def test_json_patch_operations(ops: list, expected: dict) -> None:
    assert json_patch({"a": [1, 2], "b": {"c": "x"}}, ops) == expected


def test_a_failing_json_patch_test_is_rejected_as_invalid() -> None:
    with pytest.raises(ApiError) as err:
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert err.value.code == 422


@pytest.mark.parametrize(
    "op",
    [
        {"op": "add", "path": "/a/3", "value": 9},  # past the end: only len(a) itself appends
        {"op": "replace", "path": "/a/2", "value": 9},
        {"op": "remove", "path": "/a/2"},
        {"op": "remove", "path": "/a/-3"},  # before the start, counted from the end
        {"op": "add", "path": "/a/-4", "value": 9},
    ],
)
def test_an_index_outside_the_list_is_rejected_as_invalid_and_nothing_changes(op: dict) -> None:
    target = {"a": [1, 2]}
    with pytest.raises(ApiError) as err:
        json_patch(target, [{"op": "add", "path": "/b", "value": 1}, op])
    assert (err.value.code, err.value.reason) == (422, "Invalid")
    assert target == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ({"op": "add", "path": "/a/-1", "value": 9}, [1, 2, 9]),  # the end, like "-"
        ({"op": "add", "path": "/a/-3", "value": 9}, [9, 1, 2]),
        ({"op": "remove", "path": "/a/-1"}, [1]),
        ({"op": "replace", "path": "/a/-2", "value": 9}, [9, 2]),
    ],
)
def test_a_negative_index_counts_from_the_end_as_the_api_servers_json_patch_does(
    op: dict, expected: list
) -> None:
    assert json_patch({"a": [1, 2]}, [op]) == {"a": expected}
