from __future__ import annotations

from scheduler.framework import ApiResponse, Code, CycleState
from scheduler.plugins.defaultbinder import BindingError, DefaultBinder
from scheduler.testing.builders import FakeClient, FakeHandle, make_pod


async def test_bind_posts_a_binding_to_the_pods_binding_subresource() -> None:
    handle = FakeHandle(
        client=FakeClient(responses=[ApiResponse(201, {"kind": "Status", "status": "Success"})])
    )
    pod = make_pod("web-0", namespace="shop", uid="u-123")
    assert await DefaultBinder(None, handle).bind(CycleState(), pod, "node-7") is None
    (request,) = handle.client.requests
    assert (request.method, request.path) == ("POST", "/api/v1/namespaces/shop/pods/web-0/binding")
    assert request.body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-123"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"},
    }


async def test_a_200_answer_is_also_success() -> None:
    handle = FakeHandle(client=FakeClient(responses=[ApiResponse(200, {})]))
    assert await DefaultBinder(None, handle).bind(CycleState(), make_pod(), "n") is None


async def test_a_conflict_becomes_an_error_status_with_the_apis_message() -> None:
    message = (
        'Operation cannot be fulfilled on pods/binding "web-0": pod web-0 is already assigned to node "n1"'
    )
    body = {"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409, "message": message}
    handle = FakeHandle(client=FakeClient(responses=[ApiResponse(409, body)]))
    status = await DefaultBinder(None, handle).bind(CycleState(), make_pod("web-0"), "n2")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == message
    assert isinstance(status.error, BindingError)
    assert (status.error.status, status.error.reason) == (409, "Conflict")


async def test_an_answer_without_a_status_body_still_explains_itself() -> None:
    handle = FakeHandle(client=FakeClient(responses=[ApiResponse(503, "upstream connect error")]))
    status = await DefaultBinder(None, handle).bind(CycleState(), make_pod(), "n")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "binding failed with HTTP 503"


async def test_a_transport_failure_becomes_an_error_status() -> None:
    handle = FakeHandle(client=FakeClient(responses=[ConnectionResetError("peer reset")]))
    status = await DefaultBinder(None, handle).bind(CycleState(), make_pod(), "n")
    assert status is not None and status.code == Code.ERROR
    assert "peer reset" in status.message()


def pod_answer(uid: str, node: str) -> ApiResponse:
    return ApiResponse(200, {"metadata": {"name": "web-0", "uid": uid}, "spec": {"nodeName": node}})


CONFLICT = ApiResponse(
    409, {"kind": "Status", "reason": "Conflict", "code": 409, "message": "already assigned"}
)


async def test_a_binding_whose_answer_was_lost_but_which_landed_is_a_success() -> None:
    """The pod keeps its node: giving it back would let another pod take it too (overcommit)."""
    handle = FakeHandle(
        client=FakeClient(responses=[ConnectionResetError("peer reset"), pod_answer("u1", "n")])
    )
    pod = make_pod("web-0", uid="u1")
    assert await DefaultBinder(None, handle).bind(CycleState(), pod, "n") is None
    assert [r.method for r in handle.client.requests] == ["POST", "GET"]


async def test_a_conflict_is_a_success_only_for_this_pod_on_this_node() -> None:
    pod = make_pod("web-0", uid="u1")
    outcomes = []
    for answer in (
        pod_answer("u1", "n"),
        pod_answer("u1", "other"),
        pod_answer("u0", "n"),
        ApiResponse(404, {}),
    ):
        handle = FakeHandle(client=FakeClient(responses=[CONFLICT, answer]))
        outcomes.append(await DefaultBinder(None, handle).bind(CycleState(), pod, "n") is None)
    assert outcomes == [True, False, False, False]
