"""The Coscheduling plugin's extension points against a FakeHandle, on a fake clock."""

from __future__ import annotations

import logging

import pytest
import yaml

from scheduler.api import Pod
from scheduler.cli import main as cli
from scheduler.config.fielderrors import ConfigError
from scheduler.config.load import parse_config
from scheduler.framework import Code, CycleState, Diagnosis, QueuedPodInfo
from scheduler.plugins.coscheduling import POD_GROUP_LABEL, PODGROUPS, Coscheduling, CoschedulingArgs
from scheduler.plugins.coscheduling.args import decode_args
from scheduler.testing import FakeHandle, make_node, make_pod, run_permit, table_of
from tests.support.coscheduling import config, podgroup


class PodLister:
    """The scheduler's pod store holds Pod views (FakeLister holds dicts)."""

    def __init__(self, pods: list[Pod]) -> None:
        self.pods = pods

    def get(self, key: str) -> Pod | None:
        return next((p for p in self.pods if p.key == key), None)

    def list(self) -> list[Pod]:
        return list(self.pods)

    def with_label(self, namespace: str, key: str, value: str) -> list[Pod]:
        return [p for p in self.pods if p.namespace == namespace and p.labels.get(key) == value]


def member(name: str, group: str = "train", **kwargs) -> Pod:
    return make_pod(name, labels={POD_GROUP_LABEL: group}, requests={"cpu": "3"}, **kwargs)


def handle_for(groups: list[dict], pods: list[Pod], placed: list[Pod] = (), nodes: int = 4) -> FakeHandle:
    cluster = table_of([make_node(f"n{i}", cpu="4") for i in range(nodes)], list(placed))
    handle = FakeHandle(cluster, listers={PODGROUPS: [stamped(g) for g in groups]})
    handle.listers["pods"] = PodLister(pods)  # type: ignore[assignment]
    return handle


def stamped(group: dict, created: str = "2026-01-01T00:00:00Z", version: str = "1") -> dict:
    group["metadata"] |= {"creationTimestamp": created, "resourceVersion": version}
    return group


def test_a_pod_outside_any_group_passes_every_point() -> None:
    plugin = Coscheduling(None, handle_for([], []))
    pod = make_pod("web")
    assert plugin.pre_filter(CycleState(), pod, plugin.handle.snapshot) == (None, None)
    assert plugin.permit(CycleState(), pod, "n0") == (None, 0.0)


def test_prefilter_refuses_a_group_short_of_members_naming_it() -> None:
    pods = [member("t-0"), member("t-1")]
    plugin = Coscheduling(None, handle_for([podgroup("train", 3)], pods))
    _, status = plugin.pre_filter(CycleState(), pods[0], plugin.handle.snapshot)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "pre-filter pod t-0 cannot find enough sibling pods of PodGroup default/train, "
        "current pods number: 2, minMember of group: 3"
    )


def test_prefilter_counts_gated_members_as_missing() -> None:
    pods = [member("t-0"), member("t-1", scheduling_gates=["wait"])]
    plugin = Coscheduling(None, handle_for([podgroup("train", 2)], pods))
    _, status = plugin.pre_filter(CycleState(), pods[0], plugin.handle.snapshot)
    assert status is not None and "1 of its 2 pods are gated" in status.message()


def test_prefilter_checks_min_resources_against_the_free_resources_of_the_cluster() -> None:
    pods = [member(f"t-{i}") for i in range(2)]
    group = podgroup("train", 2, minResources={"cpu": "20", "memory": "1Gi"})
    plugin = Coscheduling(None, handle_for([group], pods))
    _, status = plugin.pre_filter(CycleState(), pods[0], plugin.handle.snapshot)
    assert status is not None and status.message() == (
        "PodGroup default/train cannot find its minResources free in the cluster, resource gap: cpu=4"
    )
    fits = podgroup("train", 2, minResources={"cpu": "16"})
    plugin = Coscheduling(None, handle_for([fits], pods))
    assert plugin.pre_filter(CycleState(), pods[0], plugin.handle.snapshot) == (None, None)


def test_what_the_groups_own_placed_pods_use_counts_as_free() -> None:
    placed = [member("t-0", node_name="n0")]
    pods = [*placed, member("t-1")]
    plugin = Coscheduling(
        None, handle_for([podgroup("train", 2, minResources={"cpu": "8"})], pods, placed, nodes=2)
    )
    assert plugin.pre_filter(CycleState(), pods[1], plugin.handle.snapshot) == (None, None)
    other = [make_pod("x", requests={"cpu": "3"}, node_name="n0")]
    plugin = Coscheduling(
        None, handle_for([podgroup("train", 2, minResources={"cpu": "8"})], pods, other, nodes=2)
    )
    _, status = plugin.pre_filter(CycleState(), pods[1], plugin.handle.snapshot)
    assert status is not None and status.message().endswith("resource gap: cpu=3")


async def test_members_wait_until_min_member_are_placed_then_go_together() -> None:
    first, second = member("t-0"), member("t-1")
    # the framework assumes a pod on its node before Permit: the cache holds the first one
    handle = handle_for([podgroup("train", 2)], [first, second], [first.on_node("n0")])
    plugin = Coscheduling(None, handle)
    waiting = run_permit(plugin, pod=first, node_name="n0", handle=handle)
    assert waiting.is_waiting and waiting.timeout == 60  # permitWaitingTimeSeconds
    assert waiting.status is not None
    assert waiting.status.reasons == (
        "PodGroup default/train waits for 1 more pods (1 of minMember 2 placed)",
    )
    assert handle.activated == [second]  # the first one waiting brings its siblings forward
    assert plugin.permit(CycleState(), second, "n1") == (None, 0.0)
    assert await waiting.ended is None  # allowed together with the second


async def test_a_member_timing_out_releases_the_others_and_moves_the_group_back() -> None:
    pods = [member("t-0"), member("t-1"), member("t-2")]
    handle = handle_for([podgroup("train", 3, scheduleTimeoutSeconds=20)], pods)
    plugin = Coscheduling(None, handle)
    before = plugin.sort_key(QueuedPodInfo(pods[0]))
    first = run_permit(plugin, pod=pods[0], node_name="n0", handle=handle)
    assert first.timeout == 20  # the PodGroup's scheduleTimeoutSeconds wins
    await handle.clock.advance(10)
    second = run_permit(plugin, pod=pods[1], node_name="n1", handle=handle)
    await handle.clock.advance(10)
    timed_out = await first.ended
    assert timed_out is not None
    assert timed_out.message() == "rejected due to timeout after waiting 20s at plugin Coscheduling"
    assert second.is_waiting
    plugin.unreserve(CycleState(), pods[0], "n0")  # what the framework does after the timeout
    released = await second.ended
    assert released is not None and released.message() == (
        "rejection in Unreserve: pod t-0 of PodGroup default/train gave up its node"
    )
    assert len(handle.waiting_pods) == 0
    # a failed group sorts after groups created before it failed
    assert plugin.sort_key(QueuedPodInfo(pods[0])) > before


async def test_post_filter_releases_the_group_and_backs_it_off() -> None:
    pods = [member(f"t-{i}") for i in range(3)]
    handle = handle_for([podgroup("train", 3)], pods)
    plugin = Coscheduling(CoschedulingArgs(pod_group_backoff_seconds=30), handle)
    held = run_permit(plugin, pod=pods[0], node_name="n0", handle=handle)
    result, status = plugin.post_filter(CycleState(), pods[2], Diagnosis())
    assert result is None and status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "PodGroup default/train gets rejected due to Pod t-2 is unschedulable even after PostFilter; "
        "0 of the group's minMember 3 pods fit, 1 waiting pods released"
    )
    rejected = await held.ended
    assert rejected is not None and rejected.message().startswith(
        "optimistic rejection in PostFilter: PodGroup"
    )
    _, refused = plugin.pre_filter(CycleState(), pods[1], handle.snapshot)
    assert refused is not None and refused.message() == "podGroup default/train failed recently"
    await handle.clock.advance(30)
    assert plugin.pre_filter(CycleState(), pods[1], handle.snapshot) == (None, None)


def test_a_nearly_complete_group_keeps_what_it_holds() -> None:
    pods = [member(f"t-{i}") for i in range(10)]
    placed = [p.on_node(f"n{i % 4}") for i, p in enumerate(pods[:9])]
    handle = handle_for([podgroup("train", 10)], pods, placed)
    plugin = Coscheduling(None, handle)  # podGroupRejectPercentage 10: 1 of 10 missing is tolerated
    _, status = plugin.post_filter(CycleState(), pods[9], Diagnosis())
    assert status is not None and status.reasons == ()


def test_queue_sort_keeps_members_together_after_priority() -> None:
    groups = [
        stamped(podgroup("b", 2), created="2026-01-01T00:00:00Z"),
        stamped(podgroup("a", 2), created="2026-01-01T00:00:05Z"),
    ]
    a0, b0, b1 = member("a-0", "a"), member("b-0", "b"), member("b-1", "b")
    urgent = member("a-1", "a", priority=10)
    handle = FakeHandle(listers={PODGROUPS: groups})
    plugin = Coscheduling(None, handle)
    ordered = sorted([a0, b1, urgent, b0], key=lambda p: plugin.sort_key(QueuedPodInfo(p)))
    assert [p.name for p in ordered] == ["a-1", "b-0", "b-1", "a-0"]


def test_permit_rejects_a_member_whose_group_does_not_exist() -> None:
    plugin = Coscheduling(None, handle_for([], [member("t-0")]))
    status, _ = plugin.permit(CycleState(), member("t-0"), "n0")
    assert status is not None and status.message() == "PodGroup not found"


def test_a_malformed_podgroup_is_reported_once_and_treated_as_absent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = podgroup("train", 2)
    bad["spec"]["minMember"] = "two"
    plugin = Coscheduling(None, handle_for([bad], [member("t-0")]))
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        assert plugin.pre_filter(CycleState(), member("t-0"), plugin.handle.snapshot) == (None, None)
    warnings = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert warnings == [
        "PodGroup default/train is malformed, its pods are scheduled as if it did not exist: "
        "spec.minMember: must be an integer, not 'two'"
    ]


def test_args_are_decoded_and_validated_with_their_field_paths() -> None:
    parsed = parse_config(config(permitWaitingTimeSeconds=10), {"Coscheduling": CoschedulingArgs})
    assert parsed.profiles[0].plugin_config["Coscheduling"] == CoschedulingArgs(
        permit_waiting_time_seconds=10
    )
    with pytest.raises(
        ConfigError, match=r"pluginConfig\[0\]\.args\.podGroupRejectPercentage: Invalid value: 120"
    ):
        parse_config(config(podGroupRejectPercentage=120), {"Coscheduling": CoschedulingArgs})
    with pytest.raises(ValueError, match=r"args\.permitWaitingTimeSecond: unknown field"):
        decode_args({"permitWaitingTimeSecond": 5})
    assert decode_args({"podGroupBackoffSeconds": 5}).pod_group_backoff_seconds == 5


def test_members_are_not_signed_so_only_other_pods_batch() -> None:
    plugin = Coscheduling(None, handle_for([], []))
    assert plugin.sign_pod(make_pod("web")) == ((), None)
    fragments, status = plugin.sign_pod(member("t-0"))
    assert fragments == () and status is not None and status.code == Code.UNSCHEDULABLE


def test_pyscheduler_run_refuses_bad_args_naming_the_field(tmp_path, capsys) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config(permitWaitingTimeSeconds=-5)))
    assert cli(["run", "--config", str(path)]) == 2
    assert (
        "profiles[0].pluginConfig[0].args.permitWaitingTimeSeconds: Invalid value: -5: must be greater than 0"
        in capsys.readouterr().err
    )
