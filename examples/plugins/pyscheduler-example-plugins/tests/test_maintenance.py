"""MaintenanceWindow on a FakeClock: pods wait while the window is open, go once it closes, time
out as the framework times them out; its queueing hint and its args."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from pyscheduler_example_plugins import MaintenanceWindow, MaintenanceWindowArgs

from scheduler.framework import ActionType, ClusterEvent, Code, QueueingHint, Status
from scheduler.testing import FakeHandle, make_pod, run_permit

CONFIG_MAP = "kube-system/maintenance-window"


def window(state: str, reason: str = "", name: str = "maintenance-window") -> dict:
    data = {"state": state, **({"reason": reason} if reason else {})}
    return {"metadata": {"namespace": "kube-system", "name": name}, "data": data}


@pytest.fixture
def handle() -> FakeHandle:
    return FakeHandle(listers={"v1/configmaps": [window("open", "kernel upgrades")]})


@pytest.fixture
async def plugin(handle: FakeHandle) -> AsyncIterator[MaintenanceWindow]:
    """The plugin with its background work running, as the scheduler runs it."""
    plugin = MaintenanceWindow(MaintenanceWindowArgs(check_interval_seconds=5), handle)
    task = asyncio.create_task(plugin.run_in_background())
    yield plugin
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def close_window(handle: FakeHandle) -> None:
    handle.lister("v1/configmaps").put(window("closed"))


async def test_a_pod_waits_while_the_window_is_open_and_goes_once_it_closes(handle, plugin) -> None:
    outcome = run_permit(plugin, pod=make_pod("web"), node_name="node-a", handle=handle)
    assert outcome.status is not None and outcome.status.code == Code.WAIT
    assert outcome.timeout == 600
    assert outcome.is_waiting
    assert [w.pod.name for w in handle.waiting_pods] == ["web"]
    (event,) = handle.events
    assert (event.event_type, event.reason, event.action) == ("Normal", "MaintenanceWindowOpen", "Waiting")
    assert event.message == (
        f"waiting to bind to node-a until maintenance window {CONFIG_MAP} closes (kernel upgrades)"
    )

    await handle.clock.advance(30)  # several checks: the window is still open
    assert outcome.is_waiting

    close_window(handle)
    await handle.clock.advance(5)  # the next check lets it go
    assert outcome.ended is not None and outcome.ended.done()
    assert outcome.ended.result() is None  # allowed
    assert len(handle.waiting_pods) == 0


async def test_a_pod_not_let_go_in_time_is_rejected_with_upstreams_message(handle, plugin) -> None:
    outcome = run_permit(plugin, pod=make_pod("web"), handle=handle)
    await handle.clock.advance(599)
    assert outcome.is_waiting
    await handle.clock.advance(1)
    assert outcome.ended is not None
    rejection = outcome.ended.result()
    assert rejection is not None and rejection.code == Code.UNSCHEDULABLE
    assert rejection.reasons == ("rejected due to timeout after waiting 10m0s at plugin MaintenanceWindow",)


class Gate:
    """Another Permit plugin that holds every pod."""

    name = "Gate"

    def permit(self, state, pod, node_name) -> tuple[Status, float]:
        return Status(Code.WAIT, ("gated",)), 60.0


async def test_only_the_pods_it_holds_are_allowed(handle, plugin) -> None:
    ours = run_permit(plugin, pod=make_pod("ours"), handle=handle)
    theirs = run_permit(Gate(), pod=make_pod("theirs"), handle=handle)
    close_window(handle)
    assert plugin.release() == 1
    await asyncio.sleep(0)
    assert not ours.is_waiting
    assert theirs.is_waiting and theirs.waiting is not None
    assert theirs.waiting.pending_plugins == {"Gate"}


async def test_without_the_config_map_or_outside_the_window_nothing_waits(handle, plugin) -> None:
    close_window(handle)
    assert run_permit(plugin, pod=make_pod("web"), handle=handle).status is None
    handle.lister("v1/configmaps").delete(CONFIG_MAP)
    assert run_permit(plugin, pod=make_pod("web"), handle=handle).status is None
    assert handle.events == []


async def test_exempt_namespaces_are_never_held(handle, plugin) -> None:
    outcome = run_permit(plugin, pod=make_pod("dns", namespace="kube-system"), handle=handle)
    assert (outcome.status, outcome.is_waiting) == (None, False)


def test_a_change_of_its_config_map_to_closed_requeues_rejected_pods(handle) -> None:
    plugin = MaintenanceWindow(MaintenanceWindowArgs(), handle)
    ((registered, hint),) = [(e.event, e.hint) for e in plugin.events_to_register()]
    assert ClusterEvent("v1/configmaps", ActionType.UPDATE_OTHER).matches(registered)
    pod = make_pod("web")
    assert hint(pod, window("open"), window("closed")) == QueueingHint.QUEUE
    assert hint(pod, window("open"), None) == QueueingHint.QUEUE  # deleted
    assert hint(pod, window("closed"), window("open")) == QueueingHint.SKIP
    assert hint(pod, None, window("closed", name="other")) == QueueingHint.SKIP


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (MaintenanceWindowArgs(config_map="no-namespace"), "configMap: Invalid value: 'no-namespace'"),
        (MaintenanceWindowArgs(timeout_seconds=0), "timeoutSeconds: Invalid value: 0: must be more than 0"),
        (MaintenanceWindowArgs(timeout_seconds=3600), "timeoutSeconds: Invalid value: 3600"),
        (MaintenanceWindowArgs(check_interval_seconds=-1), "checkIntervalSeconds: Invalid value: -1"),
    ],
)
def test_validate_names_the_bad_field(args: MaintenanceWindowArgs, message: str) -> None:
    assert any(error.startswith(message) for error in args.validate()), args.validate()
