import pytest

from simcluster.errors import ApiError
from simcluster.selectors import make_filter

POD = {
    "metadata": {
        "name": "web-1",
        "namespace": "default",
        "labels": {"app": "web", "tier": "front", "n": "5"},
    },
    "spec": {"nodeName": "", "schedulerName": "pyscheduler"},
    "status": {"phase": "Pending"},
}


@pytest.mark.parametrize(
    ("labels", "fields", "expected"),
    [
        ("app=web", None, True),
        ("app==web", None, True),
        ("app=db", None, False),
        ("app!=db", None, True),
        ("missing!=x", None, True),
        ("tier in (front, back)", None, True),
        ("tier in (back)", None, False),
        ("tier notin (back)", None, True),
        ("tier notin (front)", None, False),
        ("app", None, True),
        ("!app", None, False),
        ("!missing", None, True),
        ("app=web,tier in (front,back),!missing", None, True),
        ("n>4", None, True),
        ("n<4", None, False),
        (None, "metadata.name=web-1", True),
        (None, "metadata.name!=web-1", False),
        (None, "spec.nodeName=", True),
        (None, "spec.nodeName!=", False),
        (None, "spec.schedulerName=pyscheduler,status.phase=Pending", True),
        (None, "status.phase!=Pending", False),
        (None, "metadata.namespace=kube-system", False),
        ("app=web", "spec.schedulerName=default-scheduler", False),
    ],
)
def test_selectors_match_like_the_apiserver(labels: str | None, fields: str | None, expected: bool) -> None:
    predicate = make_filter(labels, fields, None)
    assert predicate is not None
    assert predicate(POD) is expected


def test_an_empty_selector_matches_everything_without_a_predicate() -> None:
    assert make_filter("", None, None) is None


def test_a_field_selector_without_an_operator_is_a_bad_request() -> None:
    with pytest.raises(ApiError) as err:
        make_filter(None, "spec.nodeName", None)
    assert err.value.code == 400
