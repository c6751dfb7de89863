"""Pod status condition patches (upstream's updatePod/PatchPodStatus) and victim deletion."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import Pod
from scheduler.client import ApiError, KubeClient, delete_pod, patch_pod_condition
from scheduler.client.pods import condition_patch

NOW = "2026-01-01T00:00:00Z"
EARLIER = "2025-12-31T00:00:00Z"
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}


def pod_with(conditions: list[dict[str, Any]], nominated: str = "") -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
            "spec": {"containers": []},
            "status": {"conditions": conditions, "nominatedNodeName": nominated},
        }
    )


READY = {"type": "Ready", "status": "False", "lastTransitionTime": EARLIER}


@pytest.mark.parametrize(
    ("existing", "condition", "nominated", "expected"),
    [
        pytest.param(
            [READY],
            UNSCHEDULABLE,
            None,
            {
                "conditions": [UNSCHEDULABLE | {"lastTransitionTime": NOW}],
                "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
            },
            id="a new condition is appended with a fresh transition time",
        ),
        pytest.param(
            [UNSCHEDULABLE | {"lastTransitionTime": EARLIER}],
            UNSCHEDULABLE,
            None,
            None,
            id="an identical condition needs no request",
        ),
        pytest.param(
            [UNSCHEDULABLE | {"lastTransitionTime": EARLIER}],
            UNSCHEDULABLE | {"message": "0/3 nodes"},
            None,
            {
                "conditions": [UNSCHEDULABLE | {"message": "0/3 nodes", "lastTransitionTime": EARLIER}],
                "$setElementOrder/conditions": [{"type": "PodScheduled"}],
            },
            id="same status keeps the transition time while the message changes",
        ),
        pytest.param(
            [UNSCHEDULABLE | {"lastTransitionTime": EARLIER, "lastProbeTime": EARLIER}],
            UNSCHEDULABLE | {"status": "True", "reason": "", "message": ""},
            None,
            {
                "conditions": [
                    UNSCHEDULABLE
                    | {"status": "True", "reason": "", "message": ""}
                    | {"lastTransitionTime": NOW, "lastProbeTime": None}
                ],
                "$setElementOrder/conditions": [{"type": "PodScheduled"}],
            },
            id="a status change moves the transition time and removes fields the new condition lacks",
        ),
        pytest.param(
            [UNSCHEDULABLE | {"lastTransitionTime": EARLIER}],
            UNSCHEDULABLE,
            "node-1",
            {"nominatedNodeName": "node-1"},
            id="only the nominated node changes",
        ),
        pytest.param(
            [UNSCHEDULABLE | {"lastTransitionTime": EARLIER}],
            UNSCHEDULABLE,
            "",
            {"nominatedNodeName": None},
            id="an empty nominated node clears it",
        ),
    ],
)
def test_condition_patch(
    existing: list[dict[str, Any]], condition: dict[str, Any], nominated: str | None, expected: Any
) -> None:
    pod = pod_with(existing, nominated="node-0" if nominated == "" else "")
    patch = condition_patch(pod, condition, nominated, now=NOW)
    assert patch == (None if expected is None else {"status": expected})


async def test_the_condition_lands_on_the_pod_status_and_a_repeat_sends_nothing(
    sim: Any, kube: KubeClient, pod: Any
) -> None:
    target = Pod.from_dict(await sim.create("pods", pod("web-1")))
    assert await patch_pod_condition(kube, target, UNSCHEDULABLE, nominated_node_name="node-0001")
    stored = (await kube.request("GET", "/api/v1/namespaces/default/pods/web-1")).body
    [condition] = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        "0/2 nodes",
    )
    assert condition["lastTransitionTime"]
    assert stored["status"]["nominatedNodeName"] == "node-0001"
    assert not await patch_pod_condition(kube, Pod.from_dict(stored), UNSCHEDULABLE, "node-0001")


async def test_transient_errors_are_retried_and_permanent_ones_raised(
    sim: Any, kube: KubeClient, pod: Any
) -> None:
    target = Pod.from_dict(await sim.create("pods", pod("web-1")))
    sim.faults.set_error("patch", "pods", 1.0, code=503)
    calls: list[str] = []

    class Spy:
        async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
            calls.append(method)
            return await kube.request(method, path, body, **kw)

    with pytest.raises(ApiError) as info:
        await patch_pod_condition(Spy(), target, UNSCHEDULABLE)  # type: ignore[arg-type]
    assert info.value.status == 503
    assert calls == ["PATCH"] * 4  # client-go's DefaultBackoff: four tries
    sim.faults.clear()
    gone = Pod.from_dict(pod("gone") | {"metadata": {"name": "gone", "namespace": "default", "uid": "x"}})
    with pytest.raises(ApiError) as info:
        await patch_pod_condition(kube, gone, UNSCHEDULABLE)
    assert info.value.is_not_found


async def test_delete_pod_removes_the_victim_and_tolerates_it_being_gone(
    sim: Any, kube: KubeClient, pod: Any
) -> None:
    victim = Pod.from_dict(await sim.create("pods", pod("victim")))
    assert await delete_pod(kube, victim)
    assert sim.store.get("pods", "default", "victim") is None
    assert not await delete_pod(kube, victim)


async def test_delete_pod_spares_a_recreated_pod_with_the_same_name(
    sim: Any, kube: KubeClient, pod: Any
) -> None:
    old = Pod.from_dict(await sim.create("pods", pod("victim")))
    await kube.request("DELETE", "/api/v1/namespaces/default/pods/victim")
    await sim.create("pods", pod("victim"))
    assert not await delete_pod(kube, old)
    assert sim.store.get("pods", "default", "victim") is not None
