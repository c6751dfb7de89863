"""Extenders in the scheduling and binding cycles, against a real HTTP extender. Upstream's
counterparts: schedule_one.go (findNodesThatPassExtenders, prioritizeNodes, extendersBinding,
the numFeasibleNodesToFind rule) and preemption.go (callExtenders)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api import Node, Pod
from scheduler.build import build_scheduler
from scheduler.config import parse_config
from scheduler.extender import close_all
from scheduler.framework import ActionType, ClusterEvent, Victims
from scheduler.framework.interface import ApiResponse
from scheduler.plugins.defaultpreemption.candidates import Candidate
from scheduler.plugins.defaultpreemption.plugin import call_extenders
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import available_plugins
from scheduler.schedule_one import prioritize_with_extenders
from scheduler.testing import node_dict, pod_dict
from tests.support.extender import ExtenderServer

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
GPU = "example.com/gpu"


class Api:
    """What the scheduler asks of the API server: every answer is a success."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.bindings: list[tuple[str, str]] = []  # (pod, node)

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        self.sent.append(f"{method} {path}")
        if path.endswith("/binding"):
            self.bindings.append((path.split("/")[-2], body["target"]["name"]))
            return ApiResponse(201, {})
        return ApiResponse(200, {})

    def bound(self) -> list[str]:
        return [pod for pod, _ in self.bindings]


class Writes:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.conditions: dict[str, dict[str, Any]] = {}

    def record(self, obj: Any, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append((obj.name, reason, note))

    def submit(self, pod: Pod, condition: dict | None, nominated: str | None) -> None:
        if condition is not None:
            self.conditions[pod.name] = condition

    async def write_now(self, pod: Pod, condition: dict | None, nominated: str | None) -> None:
        self.submit(pod, condition, nominated)


class Harness:
    """The default profile with ``extenders`` on nodes of 2 cpu, against a scripted API."""

    def __init__(
        self, extenders: list[dict[str, Any]], nodes: tuple[str, ...] = ("n1", "n2", "n3"), **top: Any
    ):
        self.api = Api()
        self.writes = Writes()
        self.pods: dict[str, Pod] = {}
        config = parse_config({**HEADER, "extenders": extenders, **top})
        registry = in_tree_registry()
        available_plugins(config, registry)
        parts = build_scheduler(
            config,
            registry,
            self.api,
            events=self.writes,
            status=self.writes,
            current_pod=lambda pod: self.pods.get(pod.name),
        )
        self.parts = parts
        self.cache, self.queue, self.scheduler = parts.cache, parts.queue, parts.scheduler
        assert parts.api_objects is not None
        self._decode_pod = parts.api_objects.pods.decoder(Pod.from_dict)
        self._decode_node = parts.api_objects.nodes.decoder(Node.from_dict)
        for name in nodes:
            self.cache.add_node(self._decode_node(node_dict(name, cpu="2", labels={"name": name})))

    def pod(self, name: str, **kwargs: Any) -> Pod:
        """A pod as the informer decodes it (its API JSON kept for the extenders)."""
        return self._decode_pod(pod_dict(name, uid=f"uid-{name}", **kwargs))

    def place(self, name: str, node: str, **kwargs: Any) -> Pod:
        placed = self.pod(name, node_name=node, **kwargs)
        self.cache.add_pod(placed)
        return placed

    async def attempt(self, pod: Pod) -> None:
        self.pods[pod.name] = pod
        self.queue.add(pod)
        await self.scheduler.attempt(await asyncio.wait_for(self.queue.pop(), 1))
        assert await self.scheduler.wait_for_bindings(5)

    def failure(self, pod: str) -> tuple[str, str]:
        condition = self.writes.conditions[pod]
        return condition["reason"], condition["message"]

    async def close(self) -> None:
        await close_all(self.parts.extenders)


def keep(names: list[str], **answer: Any) -> Any:
    """A node-cache-capable filter answer keeping ``names`` of the nodes it is given."""
    return lambda body: {"NodeNames": [n for n in body["NodeNames"] if n in names], **answer}


# ---------------------------------------------------------------------------- filter


async def test_nodes_an_extender_fails_get_its_messages_and_only_unresolvable_ones_escape_preemption():
    answer = {"NodeNames": [], "FailedNodes": {"n1": "reserved", "n2": "reserved"}}
    answer["FailedAndUnresolvableNodes"] = {"n3": "no licence"}
    async with ExtenderServer({"filter": lambda body: answer}) as server:
        harness = Harness(
            [{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}],
            nodes=("n1", "n2", "n3", "tiny"),
        )
        harness.cache.update_node(None, Node.from_dict(node_dict("tiny", cpu="500m")))
        web = harness.pod("web", requests={"cpu": "1"})
        await harness.attempt(web)
        await harness.close()

    assert server.bodies("filter")[0]["NodeNames"] == ["n1", "n2", "n3"]  # what the plugins left
    reason, message = harness.failure("web")
    assert reason == "Unschedulable"
    assert message.startswith("0/4 nodes are available: 1 Insufficient cpu, 1 no licence, 2 reserved. ")
    # n1 and n2 (Unschedulable) were preemption candidates; n3 (unresolvable) and tiny (too small
    # for the pod: unresolvable for NodeResourcesFit) were not
    assert message.endswith(
        "preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


async def test_a_pod_only_an_extender_rejected_is_retried_on_any_cluster_event():
    async with ExtenderServer({"filter": keep([])}) as server:
        harness = Harness([{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}])
        web = harness.pod("web")
        await harness.attempt(web)
        assert harness.queue.position(web.uid) == "unschedulable"
        # no plugin registers for this event: only "Extender", registered for every event, moves it
        harness.queue.on_cluster_event(ClusterEvent("storage.k8s.io/CSIDriver", ActionType.ADD), None, {})
        assert harness.queue.position(web.uid) != "unschedulable"
        await harness.close()


async def test_each_extender_gets_the_nodes_the_previous_one_left():
    async with (
        ExtenderServer({"filter": keep(["n1", "n2"])}) as first,
        ExtenderServer({"filter": keep(["n2"])}) as second,
    ):
        harness = Harness(
            [
                {"urlPrefix": first.url, "filterVerb": "filter", "nodeCacheCapable": True},
                {"urlPrefix": second.url, "filterVerb": "filter", "nodeCacheCapable": True},
            ]
        )
        await harness.attempt(harness.pod("web"))
        await harness.close()
    assert second.bodies("filter")[0]["NodeNames"] == ["n1", "n2"]
    assert harness.api.bound() == ["web"] and harness.cache.get_node_info("n2").pods


async def test_a_filtering_extender_gets_every_feasible_node_even_without_score_plugins():
    async with ExtenderServer({"filter": keep(["n3"])}) as server:
        harness = Harness(
            [{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}],
            profiles=[
                {
                    "plugins": {
                        "multiPoint": {"disabled": [{"name": "*"}]},
                        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                        "bind": {"enabled": [{"name": "DefaultBinder"}]},
                    }
                }
            ],
        )
        await harness.attempt(harness.pod("web"))
        await harness.close()
    # without the extender one feasible node would have been enough
    assert sorted(server.bodies("filter")[0]["NodeNames"]) == ["n1", "n2", "n3"]
    assert [p.name for p in harness.cache.get_node_info("n3").pods.values()] == ["web"]


async def test_a_nominated_node_is_taken_only_if_the_extenders_let_it_through():
    async with ExtenderServer({"filter": keep(["n1", "n3"])}) as server:
        harness = Harness([{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}])
        await harness.attempt(harness.pod("web", nominated_node_name="n2"))
        await harness.close()
    assert server.bodies("filter")[0]["NodeNames"] == ["n2"]  # the nominated node first, alone
    assert len(server.bodies("filter")) == 2  # refused: the whole cluster was searched
    assert not harness.cache.get_node_info("n2").pods


# ---------------------------------------------------------------------------- prioritize


async def test_extender_scores_are_multiplied_by_weight_and_scaled_to_max_node_score():
    answers = {
        "a": [{"Host": "n1", "Score": 3}, {"Host": "n2", "Score": 10}, {"Host": "elsewhere", "Score": 10}],
        "b": [{"Host": "n1", "Score": 1}],
    }
    async with ExtenderServer(
        {"a": lambda body: answers["a"], "b": lambda body: answers["b"], "c": lambda b: (500, {})}
    ) as server:
        harness = Harness(
            [
                {"urlPrefix": server.url, "prioritizeVerb": "a", "weight": 2, "nodeCacheCapable": True},
                {"urlPrefix": server.url, "prioritizeVerb": "b", "weight": 1, "nodeCacheCapable": True},
                # a prioritize failure only loses that extender's scores, ignorable or not
                {"urlPrefix": server.url, "prioritizeVerb": "c", "weight": 5, "nodeCacheCapable": True},
            ]
        )
        nodes = [harness.cache.get_node_info(n) for n in ("n1", "n2", "n3")]
        totals = await prioritize_with_extenders(harness.scheduler.extenders, harness.pod("web"), nodes)
        await harness.close()
    assert totals.tolist() == [3 * 2 * 10 + 1 * 1 * 10, 10 * 2 * 10, 0]


async def test_the_extenders_favourite_wins_among_equal_nodes():
    async with ExtenderServer({"prioritize": lambda body: [{"Host": "n2", "Score": 1}]}) as server:
        harness = Harness([{"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 5}])
        for i in range(4):
            await harness.attempt(harness.pod(f"web{i}", requests={"cpu": "100m"}))
        await harness.close()
    assert len(harness.cache.get_node_info("n2").pods) == 4
    sent = server.bodies("prioritize")[0]
    assert sent["NodeNames"] is None and len(sent["Nodes"]["items"]) == 3  # whole nodes


# ---------------------------------------------------------------------------- managedResources, ignorable


async def test_a_pod_not_asking_for_a_managed_resource_never_reaches_the_extender():
    async with ExtenderServer({"filter": keep([], FailedNodes={"n1": "no gpu left"})}) as server:
        managed = [{"name": GPU, "ignoredByScheduler": True}]
        harness = Harness(
            [
                {
                    "urlPrefix": server.url,
                    "filterVerb": "filter",
                    "nodeCacheCapable": True,
                    "managedResources": managed,
                }
            ],
            nodes=("n1",),
        )
        await harness.attempt(harness.pod("plain", requests={"cpu": "1"}))
        await harness.attempt(harness.pod("trainer", requests={"cpu": "1", GPU: "1"}))
        await harness.close()
    assert server.pods_sent("filter") == ["trainer"]
    assert harness.api.bound() == ["plain"]
    # NodeResourcesFit ignores the resource (ignoredByScheduler): the extender decides
    assert harness.failure("trainer")[1].startswith("0/1 nodes are available: 1 no gpu left.")


async def test_an_ignorable_extender_that_fails_does_not_block_scheduling():
    async with ExtenderServer({"filter": lambda body: (500, {}), "bind": lambda body: (503, {})}) as server:
        harness = Harness(
            [{"urlPrefix": server.url, "filterVerb": "filter", "bindVerb": "bind", "ignorable": True}]
        )
        await harness.attempt(harness.pod("web"))
        await harness.close()
    assert [verb for verb, _ in server.calls] == ["filter", "bind"]
    assert harness.api.bound() == ["web"]  # DefaultBinder bound it
    assert ("web", "Scheduled") in [(name, reason) for name, reason, _ in harness.writes.events]


async def test_a_failing_extender_that_is_not_ignorable_fails_the_attempt_with_its_error():
    async with ExtenderServer({"filter": lambda body: (500, {})}) as server:
        harness = Harness([{"urlPrefix": server.url, "filterVerb": "filter"}])
        web = harness.pod("web")
        await harness.attempt(web)
        await harness.close()
    assert harness.failure("web") == (
        "SchedulerError",
        f"failed filter with extender at URL {server.url}/filter, code 500",
    )
    assert (
        "web",
        "FailedScheduling",
        f"failed filter with extender at URL {server.url}/filter, code 500",
    ) in harness.writes.events
    assert harness.api.bound() == [] and not harness.cache.is_assumed(web.uid)


# ---------------------------------------------------------------------------- bind


async def test_an_interested_binding_extender_binds_instead_of_the_bind_plugins():
    async with ExtenderServer({"bind": lambda body: {}}) as server:
        harness = Harness([{"urlPrefix": server.url, "bindVerb": "bind"}], nodes=("n1",))
        await harness.attempt(harness.pod("web"))
        await harness.close()
    assert server.bodies("bind") == [
        {"PodName": "web", "PodNamespace": "default", "PodUID": "uid-web", "Node": "n1"}
    ]
    assert harness.api.bound() == []
    assert ("web", "Scheduled", "Successfully assigned default/web to n1") in harness.writes.events


async def test_a_failed_extender_binding_forgets_the_pod_and_reports_the_error():
    async with ExtenderServer({"bind": lambda body: {"Error": "the widget is broken"}}) as server:
        harness = Harness([{"urlPrefix": server.url, "bindVerb": "bind"}], nodes=("n1",))
        web = harness.pod("web")
        await harness.attempt(web)
        await harness.close()
    assert harness.failure("web") == ("SchedulerError", "the widget is broken")
    assert not harness.cache.is_assumed(web.uid) and not harness.cache.get_node_info("n1").pods


# ---------------------------------------------------------------------------- the cycle's picture


async def test_changes_that_arrive_while_an_extender_answers_wait_until_the_pod_is_decided():
    called, release = asyncio.Event(), asyncio.Event()

    async def slow_keep_n1(body: dict[str, Any]) -> dict[str, Any]:
        called.set()
        await release.wait()
        return {"NodeNames": ["n1"]}

    async with ExtenderServer({"filter": slow_keep_n1}) as server:
        harness = Harness([{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}])
        web = harness.pod("web")
        harness.pods["web"] = web
        harness.queue.add(web)
        cycle = asyncio.create_task(harness.scheduler.attempt(await harness.queue.pop()))
        await called.wait()
        # an informer event mid-cycle: the node goes away and another pod lands on n2
        harness.cache.remove_node(Node.from_dict(node_dict("n1")))
        harness.cache.add_pod(Pod.from_dict(pod_dict("other", uid="uid-other", node_name="n2")))
        assert harness.cache.get_node_info("n1") is not None and not harness.cache.get_node_info("n2").pods
        release.set()
        await cycle
        assert await harness.scheduler.wait_for_bindings(5)
        await harness.close()
    # decided on the picture the cycle started with, then the changes were applied in order
    assert harness.api.bindings == [("web", "n1")]
    assert harness.cache.get_node_info("n1") is None
    assert [p.name for p in harness.cache.get_node_info("n2").pods.values()] == ["other"]


# ---------------------------------------------------------------------------- preemption


def preemption_harness(url: str, **extender: Any) -> tuple[Harness, Pod]:
    harness = Harness([{"urlPrefix": url, "preemptVerb": "preempt", **extender}], nodes=("n1", "n2"))
    for node in ("n1", "n2"):
        harness.place(f"low-{node}", node, requests={"cpu": "2"}, priority=1)
    return harness, harness.pod("vip", requests={"cpu": "1"}, priority=100)


def keep_victims_on(node: str) -> Any:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["NodeNameToMetaVictims"] is not None:
            chosen = body["NodeNameToMetaVictims"][node]
        else:  # whole pods: answer with their uids
            pods = body["NodeNameToVictims"][node]["Pods"]
            chosen = {"Pods": [{"UID": p["metadata"]["uid"]} for p in pods], "NumPDBViolations": 0}
        return {"NodeNameToMetaVictims": {node: chosen}}

    return answer


@pytest.mark.parametrize("node_cache_capable", [True, False], ids=["victims by uid", "whole victims"])
async def test_preemption_keeps_the_candidates_an_extender_chooses(node_cache_capable):
    async with ExtenderServer({"preempt": keep_victims_on("n2")}) as server:
        harness, vip = preemption_harness(server.url, nodeCacheCapable=node_cache_capable)
        await harness.attempt(vip)
        plugin = harness.parts.frameworks["pyscheduler"].plugins["DefaultPreemption"]
        await plugin.executor.wait()
        await harness.close()
    (body,) = server.bodies("preempt")
    sent = body["NodeNameToMetaVictims"] if node_cache_capable else body["NodeNameToVictims"]
    assert sorted(sent) == ["n1", "n2"]
    if node_cache_capable:
        assert sent["n1"] == {"Pods": [{"UID": "uid-low-n1"}], "NumPDBViolations": 0}
    else:
        assert sent["n1"]["Pods"][0]["metadata"]["name"] == "low-n1"
    assert harness.queue.nominated_pods_for_node("n2") == [vip]
    assert [s for s in harness.api.sent if s.startswith("DELETE")] == [
        "DELETE /api/v1/namespaces/default/pods/low-n2"
    ]


@pytest.mark.parametrize(
    ("ignorable", "nominated"),
    [(False, []), (True, ["n1"])],
    ids=["an error", "ignored when ignorable"],
)
async def test_a_candidate_an_extender_leaves_without_victims(ignorable, nominated):
    answer = {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-low-n1"}]}, "n2": {"Pods": []}}}
    async with ExtenderServer({"preempt": lambda body: answer}) as server:
        harness, vip = preemption_harness(server.url, nodeCacheCapable=True, ignorable=ignorable)
        await harness.attempt(vip)
        plugin = harness.parts.frameworks["pyscheduler"].plugins["DefaultPreemption"]
        await plugin.executor.wait()
        await harness.close()
    assert [n for n in ("n1", "n2") if harness.queue.nominated_pods_for_node(n)] == nominated
    if not ignorable:
        assert harness.failure("vip")[1].endswith('preemption: expected at least one victim pod on node "n2"')


async def test_a_failing_preempting_extender_fails_the_preemption_with_its_error():
    async with ExtenderServer({"preempt": lambda body: (500, {})}) as server:
        harness, vip = preemption_harness(server.url, nodeCacheCapable=True)
        await harness.attempt(vip)
        await harness.close()
    assert harness.failure("vip")[1].endswith(
        f"preemption: failed preempt with extender at URL {server.url}/preempt, code 500"
    )
    assert not any(s.startswith("DELETE") for s in harness.api.sent)


class FakePreempter:
    """An Extender that answers preemption from a table, without HTTP."""

    def __init__(self, keep: list[str], *, preempts: bool = True, interested: bool = True) -> None:
        self.keep, self.preempts, self.interested = keep, preempts, interested
        self.asked: list[list[str]] = []
        self.name = "fake"

    def is_ignorable(self) -> bool:
        return False

    def supports_preemption(self) -> bool:
        return self.preempts

    def is_interested(self, pod: Pod) -> bool:
        return self.interested

    async def process_preemption(self, pod: Pod, victims: Any, nodes: Any) -> dict[str, Any]:
        self.asked.append(list(victims))
        return {name: victims[name] for name in self.keep if name in victims}


async def test_extenders_narrow_the_candidates_in_turn_and_the_candidates_keep_their_order():
    victim = Pod.from_dict(pod_dict("low", uid="u-low", node_name="n1"))
    candidates = [Candidate(n, Victims([victim])) for n in ("n3", "n1", "n2")]
    skipped = [FakePreempter([], preempts=False), FakePreempter([], interested=False)]
    first, second = FakePreempter(["n1", "n2", "n3"]), FakePreempter(["n2", "n3"])
    kept = await call_extenders([*skipped, first, second], Pod.from_dict(pod_dict("vip")), candidates, None)
    assert [c.node_name for c in kept] == ["n3", "n2"]
    assert first.asked == [["n3", "n1", "n2"]] and second.asked == [["n1", "n2", "n3"]]  # first's answer
    assert all(not s.asked for s in skipped)
