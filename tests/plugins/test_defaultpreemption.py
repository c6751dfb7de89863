"""DefaultPreemption: victims, PDBs, candidate ordering, eligibility, messages, the API calls,
and the framework's respect for nominated pods."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.api import Pod
from scheduler.config import DefaultPreemptionArgs, PluginRef, Plugins, PluginSet, Profile
from scheduler.framework import (
    ApiResponse,
    Code,
    CycleState,
    Diagnosis,
    PostFilterResult,
    QueueingHint,
    Status,
)
from scheduler.metrics import SchedulerMetrics
from scheduler.plugins.coscheduling import POD_GROUP_LABEL, PODGROUPS
from scheduler.plugins.defaultpreemption import DefaultPreemption
from scheduler.plugins.defaultpreemption.candidates import (
    Candidate,
    dry_run,
    num_candidates,
    pick_one,
)
from scheduler.plugins.defaultpreemption.deferred import DEFERRED_EVICTIONS, DeferredEvictions
from scheduler.plugins.defaultpreemption.gangs import whole_gangs
from scheduler.plugins.defaultpreemption.pdb import parse_budgets, split_by_violation
from scheduler.plugins.defaultpreemption.plugin import aggregate_errors, nodes_where_preemption_might_help
from scheduler.plugins.defaultpreemption.prechecks import fit_only_refilter
from scheduler.plugins.defaultpreemption.victims import NO_VICTIMS, Victims, importance, select_victims
from scheduler.plugins.registry import in_tree_registry
from scheduler.runtime import Framework
from scheduler.runtime.handle import FrameworkHandle
from scheduler.runtime.waiting import WaitingPod
from scheduler.schedule_one import find_nodes_that_pass_filters
from scheduler.testing.builders import Cluster, FakeClient, FakeHandle, make_node, make_pod, table_of

PLUGINS = ["PrioritySort", "NodeAffinity", "NodeResourcesFit", "DefaultPreemption", "DefaultBinder"]


class Store:
    """An informer store stand-in: objects by ``namespace/name``."""

    def __init__(self, objects: Sequence[Any] = ()) -> None:
        self.objects = list(objects)

    def get(self, key: str) -> Any | None:
        return next((o for o in self.objects if _key(o) == key), None)

    def list(self) -> list[Any]:
        return list(self.objects)


def _key(obj: Any) -> str:
    if isinstance(obj, Pod):
        return obj.key
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


class Handle(FakeHandle):
    """FakeHandle with the PodDisruptionBudgets preemption reads."""

    def __init__(self, cluster: Cluster, *, pdbs: Sequence[Mapping[str, Any]] = (), **kwargs: Any) -> None:
        super().__init__(cluster, **kwargs)
        self.listers = {"poddisruptionbudgets": Store(pdbs)}

    def lister(self, resource: str) -> Store:
        return self.listers[resource]

    @property
    def observed(self) -> list[int | None]:
        return self.recorded_metrics.preemptions


def framework(handle: Handle, args: DefaultPreemptionArgs | None = None) -> Framework:
    profile = Profile(
        scheduler_name="pyscheduler",
        plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in PLUGINS])),
    )
    if args is not None:
        profile.plugin_config["DefaultPreemption"] = args
    fwk = Framework(profile, in_tree_registry(), handle)
    handle.attach(fwk)
    return fwk


def setup(
    nodes: Sequence[Any],
    pods: Sequence[Pod],
    *,
    pdbs: Sequence[Mapping[str, Any]] = (),
    nominated: Mapping[str, Sequence[Pod]] | None = None,
    args: DefaultPreemptionArgs | None = None,
) -> tuple[Framework, DefaultPreemption, Handle]:
    handle = Handle(table_of(nodes, pods), pdbs=pdbs, nominated=nominated)
    fwk = framework(handle, args)
    plugin = fwk.plugins["DefaultPreemption"]
    plugin.rng.seed(0)
    return fwk, plugin, handle


def diagnose(fwk: Framework, handle: Handle, pod: Pod) -> tuple[CycleState, Diagnosis]:
    """PreFilter and Filter over every node, as the scheduling cycle does before PostFilter."""
    state = CycleState()
    snapshot = handle.snapshot
    _, status, _ = fwk.run_pre_filter(state, pod, snapshot)
    assert status is None
    slots = np.array([info.slot for info in snapshot.node_infos()], dtype=np.int64)
    search = find_nodes_that_pass_filters(fwk, state, pod, snapshot, slots, {})
    assert len(search.feasible) == 0, "the preemptor must fit nowhere for these cases"
    return state, search.rejections.to_diagnosis(snapshot.table)


def cpu_pod(name: str, node: str, cpu: str, priority: int, **kwargs: Any) -> Pod:
    return make_pod(name, node_name=node, requests={"cpu": cpu}, priority=priority, **kwargs)


def pdb(name: str, labels: Mapping[str, str], allowed: int, disrupted: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(labels)}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted},
        },
    }


# ---------------------------------------------------------------------------- victims on a node


async def test_only_the_lowest_priority_pods_needed_are_chosen_as_victims():
    pods = [cpu_pod("low", "n1", "1", 1), cpu_pod("mid", "n1", "1", 2), cpu_pod("high", "n1", "2", 3)]
    fwk, plugin, handle = setup([make_node("n1", cpu="4")], pods)
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    result, status = await plugin.post_filter(state, preemptor, diagnosis)

    assert status is None
    assert result == PostFilterResult("n1")
    # While the evictions run, the preemptor is held back from the queue...
    held = plugin.pre_enqueue(preemptor)
    assert held is not None and held.reasons == ("waiting for the preemption for this pod to be finished",)
    await plugin.executor.wait()
    deleted = [r.path.rsplit("/", 1)[1] for r in handle.client.requests if r.method == "DELETE"]
    assert sorted(deleted) == ["low", "mid"]
    # ... and once they are done it is let in, but not activated: as upstream, the victims'
    # delete events bring it back, once the cache has seen the room it made.
    assert plugin.pre_enqueue(preemptor) is None
    assert handle.activated == []
    assert handle.observed == [2]


async def test_in_a_pod_groups_trial_the_evictions_wait_for_the_group_and_can_be_dropped():
    pods = [cpu_pod("low", "n1", "2", 1)]
    fwk, plugin, handle = setup([make_node("n1", cpu="2")], pods)
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)
    deferred = DeferredEvictions()
    state.write(DEFERRED_EVICTIONS, deferred)

    result, status = await plugin.post_filter(state, preemptor, diagnosis)

    assert status is None and result == PostFilterResult("n1")  # nominated as usual ...
    assert deferred.victims() == 1 and plugin.executor.running == 0  # ... but nothing evicted
    assert plugin.pre_enqueue(preemptor) is None
    assert handle.observed == [None]  # the attempt counts; its victims only once evicted

    assert deferred.commit([preemptor.uid]) == 1  # the group fits: evicted now
    await plugin.executor.wait()
    assert [r.path.rsplit("/", 1)[1] for r in handle.client.requests if r.method == "DELETE"] == ["low"]
    assert handle.recorded_metrics.deferred_victims == [1]

    dropped = DeferredEvictions()
    state.write(DEFERRED_EVICTIONS, dropped)
    await plugin.post_filter(state, preemptor, diagnosis)
    assert dropped.commit([]) == 0 and not dropped.pending  # the group does not fit: none evicted


async def test_a_failed_eviction_activates_the_preemptor_at_once():
    pods = [cpu_pod("low", "n1", "2", 1)]
    fwk, plugin, handle = setup([make_node("n1", cpu="2")], pods)
    handle.client.responses.append(ApiResponse(403, {"kind": "Status", "reason": "Forbidden"}))
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    _, status = await plugin.post_filter(state, preemptor, diagnosis)
    await plugin.executor.wait()

    assert status is None
    assert handle.activated == [preemptor]  # no delete event will come for the victim left
    assert plugin.pre_enqueue(preemptor) is None


async def test_the_preemptor_is_released_once_the_informer_shows_its_victims_gone():
    victims = [cpu_pod("low", "n1", "1", 1), cpu_pod("mid", "n1", "1", 2)]
    fwk, plugin, handle = setup([make_node("n1", cpu="2")], victims)
    pods = Store(victims)
    handle.listers["pods"] = pods
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)
    await plugin.post_filter(state, preemptor, diagnosis)
    [hint] = plugin.events_to_register()

    # the calls have not returned yet: while a victim is still listed, the preemptor waits
    assert plugin.pre_enqueue(preemptor) is not None
    pods.objects = [victims[1]]
    assert hint.hint is not None and hint.hint(preemptor, victims[0], None) is QueueingHint.SKIP
    # every victim's deletion seen (before the calls returned): the delete event lets it in
    pods.objects = []
    assert hint.hint(preemptor, victims[1], None) is QueueingHint.QUEUE
    assert plugin.pre_enqueue(preemptor) is None
    await plugin.executor.wait()


async def test_pods_of_equal_or_higher_priority_are_never_victims():
    pods = [cpu_pod("same", "n1", "2", 10), cpu_pod("above", "n1", "2", 11), cpu_pod("x", "n2", "4", 20)]
    fwk, plugin, handle = setup([make_node("n1", cpu="4"), make_node("n2", cpu="4")], pods)
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    result, status = await plugin.post_filter(state, preemptor, diagnosis)

    assert result == PostFilterResult("")
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    assert handle.observed == [None]


async def test_nodes_rejected_for_unresolvable_reasons_are_not_candidates():
    pods = [cpu_pod("low", "n1", "4", 1), cpu_pod("low2", "n2", "4", 1)]
    nodes = [make_node("n1", cpu="4", labels={"zone": "a"}), make_node("n2", cpu="4", labels={"zone": "b"})]
    fwk, plugin, handle = setup(nodes, pods)
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10, node_selector={"zone": "c"})
    state, diagnosis = diagnose(fwk, handle, preemptor)

    result, status = await plugin.post_filter(state, preemptor, diagnosis)

    assert result == PostFilterResult("")
    assert (
        status.message() == "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert handle.client.requests == []


async def test_a_node_where_even_removing_every_victim_is_not_enough_reports_the_filter_reason():
    pods = [cpu_pod("low", "n1", "1", 1), cpu_pod("high", "n1", "3", 50)]
    fwk, plugin, handle = setup([make_node("n1", cpu="4")], pods)
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    _, status = await plugin.post_filter(state, preemptor, diagnosis)

    assert status.message() == "preemption: 0/1 nodes are available: 1 Insufficient cpu."


async def test_the_dry_run_leaves_the_real_node_and_cycle_state_untouched():
    pods = [cpu_pod("low", "n1", "4", 1)]
    fwk, plugin, handle = setup([make_node("n1", cpu="4")], pods)
    info = handle.snapshot.get("n1")
    before = (dict(info.pods), info.requested.milli_cpu, info.generation)
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    await plugin.post_filter(state, preemptor, diagnosis)

    assert (dict(info.pods), info.requested.milli_cpu, info.generation) == before
    await plugin.executor.wait()


# ---------------------------------------------------------------------------- PDBs


@pytest.mark.parametrize(
    ("labels", "budgets", "violating"),
    [
        pytest.param(
            {"a": {"app": "x"}, "b": {"app": "x"}},
            [pdb("one-left", {"app": "x"}, 1)],
            ["b"],
            id="the budget covers the first pod, the second one violates it",
        ),
        pytest.param(
            {"a": {"app": "x"}}, [pdb("none-left", {"app": "x"}, 0)], ["a"], id="a budget with none allowed"
        ),
        pytest.param(
            {"a": {"app": "x"}},
            [pdb("already", {"app": "x"}, 0, disrupted=["a"])],
            [],
            id="a pod the API server already counts as disrupted charges nothing",
        ),
        pytest.param(
            {"a": {}}, [pdb("none-left", {"app": "x"}, 0)], [], id="a pod without labels matches no budget"
        ),
        pytest.param(
            {"a": {"app": "x"}},
            [{"metadata": {"name": "empty", "namespace": "default"}, "spec": {"selector": {}}, "status": {}}],
            [],
            id="an empty selector matches nothing",
        ),
        pytest.param(
            {"a": {"app": "x"}},
            [{**pdb("elsewhere", {"app": "x"}, 0), "metadata": {"name": "elsewhere", "namespace": "other"}}],
            [],
            id="a budget in another namespace does not apply",
        ),
    ],
)
def test_victims_are_split_by_whether_evicting_them_violates_a_budget(labels, budgets, violating):
    pods = [make_pod(name, labels=pod_labels) for name, pod_labels in labels.items()]
    bad, good = split_by_violation(pods, parse_budgets(budgets))
    assert [p.name for p in bad] == violating
    assert [p.name for p in good] == [p.name for p in pods if p.name not in violating]


async def test_a_budget_protects_its_pod_when_another_candidate_exists():
    pods = [
        cpu_pod("protected", "n1", "4", 1, labels={"app": "db"}),
        cpu_pod("free", "n2", "4", 1, labels={"app": "web"}),
    ]
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    for seed in range(4):  # whatever node the dry run starts from
        fwk, plugin, handle = setup(nodes, pods, pdbs=[pdb("db", {"app": "db"}, 0)])
        plugin.rng.seed(seed)
        preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
        state, diagnosis = diagnose(fwk, handle, preemptor)
        result, _ = await plugin.post_filter(state, preemptor, diagnosis)
        assert result == PostFilterResult("n2")
        await plugin.executor.wait()


async def test_a_budget_yields_when_its_pod_is_the_only_way():
    pods = [cpu_pod("protected", "n1", "4", 1, labels={"app": "db"})]
    fwk, plugin, handle = setup([make_node("n1", cpu="4")], pods, pdbs=[pdb("db", {"app": "db"}, 0)])
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)
    result, _ = await plugin.post_filter(state, preemptor, diagnosis)
    assert result == PostFilterResult("n1")
    await plugin.executor.wait()


# ---------------------------------------------------------------------------- choosing a node


def candidate(
    node: str, priorities: Sequence[int], violations: int = 0, started: Sequence[str] = ()
) -> Candidate:
    pods = [make_pod(f"{node}-{i}", priority=prio) for i, prio in enumerate(priorities)]
    for pod, stamp in zip(pods, started, strict=False):
        pod.start_time = stamp
    return Candidate(node, Victims(pods, violations))


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        pytest.param([candidate("a", [1], 1), candidate("b", [5, 5])], "b", id="fewest PDB violations first"),
        pytest.param(
            [candidate("a", [7]), candidate("b", [5, 1, 1])], "b", id="then the lowest highest priority"
        ),
        pytest.param(
            [candidate("a", [5, 4]), candidate("b", [5, 1])], "b", id="then the smallest priority sum"
        ),
        pytest.param(
            [candidate("a", [-5, -5]), candidate("b", [-5])],
            "b",
            id="negative priorities still count every victim in the sum",
        ),
        pytest.param([candidate("a", [5, 0, 0]), candidate("b", [5, 0])], "b", id="then the fewest victims"),
        pytest.param(
            [
                candidate("a", [5], started=["2024-01-01T00:00:00Z"]),
                candidate("b", [5], started=["2024-06-01T00:00:00Z"]),
            ],
            "b",
            id="then the latest start of the highest-priority victims",
        ),
        pytest.param([candidate("a", [5]), candidate("b", [5])], "a", id="then the first one"),
    ],
)
def test_the_candidate_is_chosen_in_upstreams_order(candidates, chosen):
    assert pick_one(candidates).node_name == chosen


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        (5000, 10, 100, 500),
        (500, 10, 100, 100),
        (50, 10, 100, 50),
        (1000, 0, 1, 1),
    ],
)
def test_the_number_of_candidates_follows_min_candidate_nodes_percentage_and_absolute(
    nodes, percentage, absolute, expected
):
    assert num_candidates(nodes, percentage, absolute) == expected


def test_the_dry_run_stops_once_enough_candidates_are_found_from_the_offset():
    nodes = [make_node(f"n{i}", cpu="1") for i in range(6)]
    pods = [cpu_pod(f"v{i}", f"n{i}", "1", 1) for i in range(6)]
    fwk, _, handle = setup(nodes, pods)
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    state, _ = diagnose(fwk, handle, preemptor)

    found, statuses = dry_run(fwk, state, preemptor, handle.snapshot.node_infos(), [], offset=4, wanted=3)

    assert [c.node_name for c in found] == ["n4", "n5", "n0"]
    assert statuses == {}


def test_pdb_violating_candidates_come_after_the_others_and_do_not_end_the_search():
    nodes = [make_node(f"n{i}", cpu="1") for i in range(3)]
    pods = [cpu_pod("v0", "n0", "1", 1, labels={"app": "db"})] + [
        cpu_pod(f"v{i}", f"n{i}", "1", 1) for i in (1, 2)
    ]
    fwk, _, handle = setup(nodes, pods)
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    state, _ = diagnose(fwk, handle, preemptor)
    budgets = parse_budgets([pdb("db", {"app": "db"}, 0)])

    found, _ = dry_run(fwk, state, preemptor, handle.snapshot.node_infos(), budgets, offset=0, wanted=1)

    assert [(c.node_name, c.victims.num_pdb_violations) for c in found] == [("n1", 0), ("n0", 1)]


# ---------------------------------------------------------------------------- eligibility


async def test_a_pod_with_preemption_policy_never_does_not_preempt():
    fwk, plugin, handle = setup([make_node("n1", cpu="1")], [cpu_pod("low", "n1", "1", 1)])
    preemptor = Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "uid-never"},
            "spec": {
                "priority": 10,
                "preemptionPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
    )
    state, diagnosis = diagnose(fwk, handle, preemptor)
    result, status = await plugin.post_filter(state, preemptor, diagnosis)
    assert result is None
    assert status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    assert handle.client.requests == []


def terminating_victim(name: str, node: str) -> Pod:
    pod = cpu_pod(name, node, "1", 1)
    pod.deletion_timestamp = "2024-01-01T00:00:00Z"
    pod.conditions = ({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},)
    return pod


async def test_a_preemptor_waits_while_its_victims_on_the_nominated_node_terminate():
    fwk, plugin, handle = setup([make_node("n1", cpu="1")], [terminating_victim("going", "n1")])
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10, nominated_node_name="n1")
    state, diagnosis = diagnose(fwk, handle, preemptor)
    result, status = await plugin.post_filter(state, preemptor, diagnosis)
    assert result is None
    assert status.message() == "preemption: not eligible due to a terminating pod on the nominated node."


async def test_a_terminating_pod_deleted_for_another_reason_does_not_block_preemption():
    victim = cpu_pod("going", "n1", "1", 1)
    victim.deletion_timestamp = "2024-01-01T00:00:00Z"
    fwk, plugin, handle = setup([make_node("n1", cpu="1")], [victim])
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10, nominated_node_name="n1")
    state, diagnosis = diagnose(fwk, handle, preemptor)
    result, _ = await plugin.post_filter(state, preemptor, diagnosis)
    assert result == PostFilterResult("n1")
    await plugin.executor.wait()
    # Its deletion is already under way: no second request.
    assert handle.client.requests == []


async def test_when_every_victim_is_already_terminating_nothing_is_called_and_nothing_cleared():
    """Upstream's async preemption returns at once then: no call, no cleared nomination, no
    preemption in progress, no activation; the pod waits for the deletions like any event."""
    victim = cpu_pod("going", "n1", "1", 1)
    victim.deletion_timestamp = "2024-01-01T00:00:00Z"
    displaced = make_pod("displaced", priority=5, nominated_node_name="n1")
    fwk, plugin, handle = setup([make_node("n1", cpu="1")], [victim], nominated={"n1": [displaced]})
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)
    result, status = await plugin.post_filter(state, preemptor, diagnosis)
    assert (result, status) == (PostFilterResult("n1"), None)
    assert plugin.pre_enqueue(preemptor) is None
    await plugin.executor.wait()
    assert handle.client.requests == []
    assert handle.activated == []
    assert handle.observed == [None]


async def test_a_victim_waiting_at_permit_is_rejected_in_memory_and_its_event_says_so():
    fwk, plugin, handle = setup([make_node("n1", cpu="1")], [cpu_pod("low", "n1", "1", 1)])
    victim = handle.snapshot.get("n1").pods.popitem()[1]
    waiting = WaitingPod(victim, "n1", {"SomePermit": 60})
    fwk.waiting_pods.add(waiting)
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    await plugin.executor.preempt(preemptor, "n1", victim)
    assert handle.client.requests == []
    (event,) = handle.events
    assert event.message == f"Preempted by pod {preemptor.uid} on node n1 (in kube-scheduler memory)."


def test_several_dry_run_errors_read_as_apimachinerys_aggregate():
    one, two = Status(Code.ERROR, ("boom",)), Status(Code.ERROR, ("bang",))
    assert aggregate_errors([one]) is one
    assert aggregate_errors([one, Status(Code.ERROR, ("boom",))]).message() == "boom"
    assert aggregate_errors([one, two]).message() == "[boom, bang]"


# ---------------------------------------------------------------------------- the API calls


async def test_each_victim_is_marked_then_deleted_and_gets_a_preempted_event():
    fwk, plugin, handle = setup([make_node("n1", cpu="1")], [cpu_pod("low", "n1", "1", 1)])
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    await plugin.post_filter(state, preemptor, diagnosis)
    await plugin.executor.wait()

    patch, delete = handle.client.requests
    assert (patch.method, patch.path) == ("PATCH", "/api/v1/namespaces/default/pods/low/status")
    (condition,) = patch.body["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "pyscheduler: preempting to accommodate a higher priority pod",
    }
    assert (delete.method, delete.path) == ("DELETE", "/api/v1/namespaces/default/pods/low")
    assert delete.body["preconditions"] == {"uid": handle.snapshot.get("n1").pods.popitem()[1].uid}
    (event,) = handle.events
    assert (event.pod.name, event.event_type, event.reason, event.action) == (
        "low",
        "Normal",
        "Preempted",
        "Preempting",
    )
    assert event.message == f"Preempted by pod {preemptor.uid} on node n1"


async def test_a_victim_that_is_already_gone_is_skipped_quietly():
    client = FakeClient(responses=[ApiResponse(404, {"kind": "Status", "reason": "NotFound"})])
    handle = Handle(table_of([make_node("n1", cpu="1")], [cpu_pod("low", "n1", "1", 1)]), client=client)
    fwk = framework(handle)
    plugin = fwk.plugins["DefaultPreemption"]
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    await plugin.post_filter(state, preemptor, diagnosis)
    await plugin.executor.wait()

    assert [r.method for r in client.requests] == ["PATCH"]
    assert handle.events == []


async def test_lower_priority_pods_nominated_to_the_chosen_node_lose_their_nomination():
    displaced = make_pod("displaced", priority=5, nominated_node_name="n1")
    fwk, plugin, handle = setup(
        [make_node("n1", cpu="1")], [cpu_pod("low", "n1", "1", 1)], nominated={"n1": [displaced]}
    )
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    state, diagnosis = diagnose(fwk, handle, preemptor)

    await plugin.post_filter(state, preemptor, diagnosis)
    await plugin.executor.wait()

    first = handle.client.requests[0]
    assert (first.path, first.body) == (
        "/api/v1/namespaces/default/pods/displaced/status",
        {"status": {"nominatedNodeName": None}},
    )


# ---------------------------------------------------------------------------- nominated pods in filters


def test_filters_keep_room_for_a_nominated_pod_of_equal_or_higher_priority():
    fwk, _, handle = setup([make_node("n1", cpu="2"), make_node("n2", cpu="2")], [])
    snapshot = handle.snapshot
    waiting = make_pod("waiting", requests={"cpu": "2"}, priority=10)
    pod = make_pod("p", requests={"cpu": "1"}, priority=10)
    state = CycleState()
    fwk.run_pre_filter(state, pod, snapshot)
    slots = np.array([i.slot for i in snapshot.node_infos()], dtype=np.int64)

    search = find_nodes_that_pass_filters(fwk, state, pod, snapshot, slots, {"n1": [waiting]})
    feasible, rejections = search.feasible, search.rejections

    assert [snapshot.table.info(s).name for s in feasible.tolist()] == ["n2"]
    diagnosis = rejections.to_diagnosis(snapshot.table)
    assert diagnosis.node_to_status["n1"].reasons == ("Insufficient cpu",)


@pytest.mark.parametrize(
    ("nominated_priority", "fits"),
    [(10, False), (11, False), (9, True)],
    ids=["equal priority holds the room", "higher priority holds the room", "lower priority does not"],
)
def test_only_nominated_pods_of_equal_or_higher_priority_are_counted(nominated_priority, fits):
    waiting = make_pod("waiting", requests={"cpu": "2"}, priority=nominated_priority)
    fwk, _, handle = setup([make_node("n1", cpu="2")], [], nominated={"n1": [waiting]})
    pod = make_pod("p", requests={"cpu": "1"}, priority=10)
    state = CycleState()
    fwk.run_pre_filter(state, pod, handle.snapshot)
    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, handle.snapshot.get("n1"))
    assert (status is None) == fits


def test_a_pod_is_not_kept_out_by_its_own_nomination():
    pod = make_pod("p", requests={"cpu": "2"}, priority=10)
    fwk, _, handle = setup([make_node("n1", cpu="2")], [], nominated={"n1": [pod]})
    state = CycleState()
    fwk.run_pre_filter(state, pod, handle.snapshot)
    assert fwk.run_filter_plugins_with_nominated_pods(state, pod, handle.snapshot.get("n1")) is None


async def test_a_rejecting_post_filter_may_still_clear_the_nomination():
    fwk, _, handle = setup([make_node("n1", cpu="1")], [cpu_pod("same", "n1", "1", 10)])
    pod = make_pod("p", requests={"cpu": "1"}, priority=10, nominated_node_name="n1")
    state, diagnosis = diagnose(fwk, handle, pod)
    result, status = await fwk.run_post_filter(state, pod, diagnosis)
    assert result == PostFilterResult("")
    assert status == Status.unschedulable(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


# ---------------------------------------------------------------------------- the real handle


def test_the_framework_handle_runs_its_profiles_plugins_and_counts_preemptions():
    metrics = SchedulerMetrics()
    handle = FrameworkHandle("pyscheduler", FakeClient(), lambda: None, lambda *a: None, metrics=metrics)
    fwk = framework(handle)  # type: ignore[arg-type]
    assert handle.plugins_runner is fwk
    assert handle.waiting_pods is fwk.waiting_pods
    handle.metrics.observe_preemption(3)
    handle.metrics.observe_preemption(None)
    assert metrics.registry.get_sample_value("scheduler_preemption_attempts_total") == 2
    assert metrics.registry.get_sample_value("scheduler_preemption_victims_sum") == 3


# ---------------------------------------------------------------------------- shortcuts agree

FILTER_PROFILE = [
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "DefaultPreemption",
    "DefaultBinder",
]


class _ExtensionsStandIn:
    """Looks like a PreFilter plugin with extensions, so the dry run never skips calling them."""

    name = "ExtensionsStandIn"

    def add_pod(self, *args: Any) -> None:
        return None

    def remove_pod(self, *args: Any) -> None:
        return None


class Opaque:
    """The framework as a runner that offers the dry run no shortcut: NodeResourcesFit is hidden
    among its filters (no pre-check, no Fit-only re-check) and PreFilter extensions always look
    active (no state sharing). Running them is the framework's own business."""

    def __init__(self, fwk: Framework) -> None:
        self._fwk = fwk
        self.pre_filter_plugins = (*fwk.pre_filter_plugins, _ExtensionsStandIn())
        self.filter_plugins = tuple(p for p in fwk.filter_plugins if p.name != "NodeResourcesFit")

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, info: Any) -> Status | None:
        return self._fwk.run_filter_plugins_with_nominated_pods(state, pod, info)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, other: Pod, info: Any) -> Any:
        return self._fwk.run_pre_filter_extension_add_pod(state, pod, other, info)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, other: Pod, info: Any) -> Any:
        return self._fwk.run_pre_filter_extension_remove_pod(state, pod, other, info)


def random_victim(rng: random.Random, name: str, node: str) -> Pod:
    kwargs: dict[str, Any] = {"labels": {"app": rng.choice(["web", "db"])}}
    if rng.random() < 0.3:
        kwargs["host_ports"] = [(8080, "TCP")]
    return make_pod(
        name,
        node_name=node,
        priority=rng.choice([0, 1, 5, 10, 20]),
        requests={"cpu": f"{rng.choice([100, 500, 1000, 2000])}m", "memory": rng.choice(["256Mi", "1Gi"])},
        **kwargs,
    )


def random_preemptor(rng: random.Random) -> Pod:
    kwargs: dict[str, Any] = {}
    if rng.random() < 0.3:
        kwargs["host_ports"] = [(8080, "TCP")]
    if rng.random() < 0.2:
        term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
        kwargs["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if rng.random() < 0.2:
        kwargs["node_selector"] = {"disk": "ssd"}
    if rng.random() < 0.2:
        kwargs["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    return make_pod(
        "p",
        priority=rng.choice([5, 10, 15]),
        requests={"cpu": f"{rng.choice([500, 1500, 3000])}m", "memory": rng.choice(["512Mi", "2Gi"])},
        labels={"app": "web"},
        **kwargs,
    )


def outcome(found: list[Candidate], statuses: dict[str, Status]) -> tuple:
    """The candidates; the other nodes' statuses only when there is none (they are read only then)."""
    chosen = [(c.node_name, [p.uid for p in c.victims.pods], c.victims.num_pdb_violations) for c in found]
    return chosen, [] if chosen else list(statuses.items())


@pytest.mark.parametrize("seed", range(150))
def test_the_dry_run_shortcuts_find_what_the_plain_dry_run_finds(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [
        make_node(
            f"n{i}",
            cpu=rng.choice(["1", "2", "4"]),
            memory=rng.choice(["2Gi", "4Gi"]),
            pods=rng.choice([2, 3, 110]),
            labels={"disk": "ssd"} if rng.random() < 0.5 else {},
            taints=[("dedicated", "x", "NoSchedule")] if rng.random() < 0.15 else (),
        )
        for i in range(rng.randint(1, 12))
    ]
    pods = [random_victim(rng, f"v{j}", rng.choice(nodes).name) for j in range(rng.randint(0, 30))]
    preemptor = random_preemptor(rng)
    nominated = {
        node.name: [
            make_pod(
                f"nom-{node.name}-{k}",
                priority=rng.choice([1, 10, 20]),
                requests={"cpu": rng.choice(["500m", "1", "2"]), "memory": rng.choice(["256Mi", "2Gi"])},
            )
            for k in range(rng.randint(1, 2))
        ]
        for node in nodes
        if rng.random() < 0.4
    }
    if pods and rng.random() < 0.2:  # a nominated pod the node already holds (adding it replaces it)
        placed = rng.choice(pods)
        nominated.setdefault(placed.node_name, []).append(placed)
    handle = Handle(table_of(nodes, pods), nominated=nominated)
    profile = Profile(
        scheduler_name="pyscheduler",
        plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in FILTER_PROFILE])),
    )
    fwk = Framework(profile, in_tree_registry(), handle)
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, preemptor, handle.snapshot)
    if status is not None:
        return
    budgets = parse_budgets([pdb("db", {"app": "db"}, rng.choice([0, 1]))])
    infos = list(handle.snapshot.node_infos())
    offset, wanted = rng.randrange(len(infos)), rng.randint(1, len(infos))

    fast = dry_run(fwk, state, preemptor, infos, budgets, offset, wanted, handle.nominated_pods_for_node)
    plain = dry_run(Opaque(fwk), state, preemptor, infos, budgets, offset, wanted)

    assert outcome(*fast) == outcome(*plain)


ANTI_DB = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
        ]
    }
}


def port_pod(name: str, node: str, cpu: str, priority: int) -> Pod:
    return make_pod(
        name, node_name=node, requests={"cpu": cpu}, priority=priority, host_ports=[(8080, "TCP")]
    )


SHORTCUT_CASES = [
    pytest.param(
        [port_pod("low-a", "n1", "1", 1), cpu_pod("low-b", "n1", "1", 1), cpu_pod("high", "n1", "1", 50)],
        port_pod("p", "", "2", 10),
        {},
        ["low-a"],
        id="a victim holding the preemptor's host port goes even where its cpu could stay",
    ),
    pytest.param(
        [cpu_pod("low-a", "n1", "1", 1), cpu_pod("low-b", "n1", "1", 1), cpu_pod("high", "n1", "1", 50)],
        cpu_pod("p", "", "1", 10),
        {"n1": [make_pod("nominated", priority=20, requests={"cpu": "1"})]},
        ["low-b"],
        id="room promised to a nominated pod of higher priority is kept free by every re-check",
    ),
    pytest.param(
        [cpu_pod("low-a", "n1", "1", 1), cpu_pod("low-b", "n1", "1", 1), cpu_pod("high", "n1", "1", 50)],
        cpu_pod("p", "", "2", 10),
        {"n1": [make_pod("nominated", priority=5, requests={"cpu": "1"})]},
        ["low-b"],
        id="a nominated pod of lower priority is no reason to evict more",
    ),
    pytest.param(
        [
            cpu_pod("db", "n1", "1", 1, labels={"app": "db"}),
            cpu_pod("web", "n1", "1", 1, labels={"app": "web"}),
        ],
        cpu_pod("p", "", "1", 10, affinity=ANTI_DB),
        {},
        ["db"],
        id="a victim the preemptor's anti-affinity rejects goes: RemovePod keeps the counts right",
    ),
]


@pytest.mark.parametrize(("pods", "preemptor", "nominated", "victims"), SHORTCUT_CASES)
def test_the_dry_run_shortcuts_pick_the_victims_every_filter_would(
    pods: list[Pod], preemptor: Pod, nominated: dict[str, list[Pod]], victims: list[str]
) -> None:
    handle = Handle(table_of([make_node("n1", cpu="4")], pods), nominated=nominated)
    profile = Profile(
        scheduler_name="pyscheduler",
        plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in FILTER_PROFILE])),
    )
    fwk = Framework(profile, in_tree_registry(), handle)
    state = CycleState()
    fwk.run_pre_filter(state, preemptor, handle.snapshot)
    infos = list(handle.snapshot.node_infos())

    fast, _ = dry_run(fwk, state, preemptor, infos, [], 0, 1, handle.nominated_pods_for_node)
    plain, _ = dry_run(Opaque(fwk), state, preemptor, infos, [], 0, 1)

    assert [[p.name for p in c.victims.pods] for c in fast] == [victims]
    assert outcome(fast, {}) == outcome(plain, {})


@pytest.mark.parametrize(
    ("absent", "expected"),
    [
        pytest.param(
            None, ["n1", "n4"], id="only nodes a filter found Unschedulable may gain from evictions"
        ),
        pytest.param(
            Status.unschedulable("busy"),
            ["n1", "n3", "n4"],
            id="nodes PreFilter left out count too",
        ),
    ],
)
def test_preemption_considers_the_nodes_whose_status_is_unschedulable(
    absent: Status | None, expected: list[str]
) -> None:
    infos = table_of([make_node(f"n{i}") for i in range(1, 5)]).infos
    diagnosis = Diagnosis(
        node_to_status={
            "n1": Status.unschedulable("Insufficient cpu"),
            "n2": Status.unresolvable("node(s) didn't match Pod's node affinity/selector"),
            "n4": Status.unschedulable("Too many pods"),
        },
        absent_nodes_status=absent,
    )
    assert [info.name for info in nodes_where_preemption_might_help(infos, diagnosis)] == expected


def test_victims_are_ranked_by_when_they_started_not_when_they_were_created():
    created_first = make_pod("a", priority=1)
    created_first.creation_timestamp, created_first.start_time = (
        "2024-01-01T00:00:00Z",
        "2024-03-01T00:00:00Z",
    )
    started_first = make_pod("b", priority=1)
    started_first.creation_timestamp, started_first.start_time = (
        "2024-02-01T00:00:00Z",
        "2024-02-02T00:00:00Z",
    )
    not_started = make_pod("c", priority=1)
    ranked = sorted([not_started, created_first, started_first], key=importance)
    assert [p.name for p in ranked] == ["b", "a", "c"]  # most important first; unstarted last


# ---------------------------------------------------------------------------- cheap dry runs


class CountingState(CycleState):
    """A cycle state that counts the copies the dry run makes of it."""

    __slots__ = ("copies",)

    def __init__(self) -> None:
        super().__init__()
        self.copies = 0

    def clone(self) -> CycleState:
        self.copies += 1
        return super().clone()


@pytest.mark.parametrize(
    ("pods", "priority"),
    [
        pytest.param([], 10, id="an empty node"),
        pytest.param([cpu_pod("same", "n1", "1", 10)], 10, id="a node of pods of the same priority"),
        pytest.param([cpu_pod("high", "n1", "1", 50)], 10, id="a node of higher-priority pods"),
    ],
)
def test_a_node_without_lower_priority_pods_gets_select_victims_verdict_without_any_copy(
    pods: list[Pod], priority: int
) -> None:
    handle = Handle(table_of([make_node("n1", cpu="1")], pods))
    profile = Profile(
        scheduler_name="pyscheduler",
        plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in FILTER_PROFILE])),
    )
    fwk = Framework(profile, in_tree_registry(), handle)
    preemptor = make_pod("p", requests={"cpu": "2"}, priority=priority, affinity=ANTI_DB)
    state = CountingState()
    fwk.run_pre_filter(state, preemptor, handle.snapshot)
    info = handle.snapshot.get("n1")
    expected = select_victims(fwk, state.clone(), preemptor, info.clone(), [])
    state.copies = 0

    found, statuses = dry_run(Opaque(fwk), state, preemptor, [info], [], 0, 1)

    assert expected == (None, Status.unresolvable(NO_VICTIMS))
    assert (found, statuses) == ([], {"n1": expected[1]})
    assert state.copies == 0


def fit_profile_framework(handle: Handle) -> Framework:
    names = ["PrioritySort", "NodeName", "NodeAffinity", "TaintToleration", "NodeResourcesFit"]
    names.append("DefaultBinder")
    profile = Profile(
        scheduler_name="pyscheduler",
        plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in names])),
    )
    return Framework(profile, in_tree_registry(), handle)


@pytest.mark.parametrize("seed", range(40))
def test_the_fit_only_recheck_says_yes_exactly_when_node_resources_fit_passes(seed: int) -> None:
    rng = random.Random(seed)
    gpu = "example.com/gpu"
    nodes = [
        make_node(
            f"n{i}",
            cpu=rng.choice(["1", "2", "4"]),
            memory=rng.choice(["1Gi", "4Gi"]),
            pods=rng.choice([1, 2, 3, 110]),
            extra={gpu: rng.choice([0, 1, 2])} if rng.random() < 0.6 else None,
        )
        for i in range(6)
    ]

    def requests() -> dict[str, str]:
        wanted = {"cpu": f"{rng.choice([0, 500, 1000, 2000])}m", "memory": rng.choice(["0", "512Mi", "2Gi"])}
        if rng.random() < 0.4:
            wanted[gpu] = str(rng.choice([1, 2]))
        return wanted

    hosts = [rng.choice(nodes).name for _ in range(rng.randint(0, 12))]
    pods = [make_pod(f"v{j}", node_name=host, requests=requests()) for j, host in enumerate(hosts)]
    handle = Handle(table_of(nodes, pods))
    fwk = fit_profile_framework(handle)
    preemptor = make_pod("p", requests=requests(), priority=10)
    state = CycleState()
    fwk.run_pre_filter(state, preemptor, handle.snapshot)
    fit = fwk.plugins["NodeResourcesFit"]
    fits = fit_only_refilter(fwk, state, preemptor)
    assert fits is not None

    for info in handle.snapshot.node_infos():
        assert fits(info) == (fit.filter(state, preemptor, info) is None), info.name


def test_the_fit_only_recheck_is_not_used_when_another_filter_reads_the_pods() -> None:
    handle = Handle(table_of([make_node("n1")], []))
    profile = Profile(
        scheduler_name="pyscheduler",
        plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in FILTER_PROFILE])),
    )
    fwk = Framework(profile, in_tree_registry(), handle)
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10, host_ports=[(8080, "TCP")])
    state = CycleState()
    fwk.run_pre_filter(state, preemptor, handle.snapshot)

    assert fit_only_refilter(fwk, state, preemptor) is None  # NodePorts reads the pods' ports


def test_a_node_keeps_its_pods_and_accounting_through_a_removal_and_a_re_addition() -> None:
    info = table_of(
        [make_node("n1")],
        [
            port_pod("a", "n1", "1", 1),
            make_pod("b", node_name="n1", priority=1, affinity=ANTI_DB, requests={"cpu": "1"}),
            cpu_pod("c", "n1", "1", 1),
        ],
    ).infos[0]
    before = info.clone()
    pod = info.pods[next(uid for uid, p in info.pods.items() if p.name == "b")]

    info.remove_pod(pod.uid)
    assert not info.pods_with_affinity and not info.pods_with_required_anti_affinity
    info.add_pod(pod)

    assert set(info.pods) == set(before.pods)
    assert info.requested == before.requested and info.non_zero_requested == before.non_zero_requested
    assert info.used_ports == before.used_ports
    assert set(info.pods_with_affinity) == set(before.pods_with_affinity) == {pod.uid}
    assert set(info.pods_with_required_anti_affinity) == {pod.uid}


# ---------------------------------------------------------------------------- gangs as victims


def _gang(min_member: int, placement: Sequence[tuple[str, int]]) -> tuple[Handle, list[Pod]]:
    """A Coscheduling PodGroup "g" of ``min_member`` whose members run as (node, priority)."""
    members = [
        cpu_pod(f"m{i}", node, "1", priority, labels={POD_GROUP_LABEL: "g"})
        for i, (node, priority) in enumerate(placement)
    ]
    nodes = sorted({node for node, _ in placement})
    handle = Handle(table_of([make_node(n, cpu="1") for n in nodes], members))
    group = {
        "metadata": {"name": "g", "namespace": "default", "resourceVersion": "1"},
        "spec": {"minMember": min_member},
    }
    handle.listers[PODGROUPS] = Store([group])
    return handle, members


def _widened(handle: Handle, victim: Pod) -> tuple[list[str], dict[str, Status]]:
    preemptor = make_pod("p", requests={"cpu": "1"}, priority=10)
    candidates = [Candidate(victim.node_name, Victims([victim]))]
    kept, refused = whole_gangs(handle, preemptor, candidates, handle.snapshot.node_infos(), [])
    return [p.name for c in kept for p in c.victims.pods], refused


def test_a_victim_whose_gang_would_fall_below_its_minimum_takes_the_whole_gang():
    handle, members = _gang(3, [("n1", 0), ("n2", 1), ("n3", 0)])
    victims, refused = _widened(handle, members[0])
    assert sorted(victims) == ["m0", "m1", "m2"] and refused == {}
    assert victims[0] == "m1"  # most important first, as every victim list


def test_a_gang_above_its_minimum_loses_one_member_alone():
    handle, members = _gang(2, [("n1", 0), ("n2", 0), ("n3", 0)])
    assert _widened(handle, members[0]) == (["m0"], {})


def test_a_candidate_whose_gang_has_a_member_the_preemptor_may_not_evict_is_refused():
    handle, members = _gang(2, [("n1", 0), ("n2", 20)])
    victims, refused = _widened(handle, members[0])
    assert victims == []
    assert refused["n1"].reasons == (
        "preemption would leave a pod group with fewer than its minimum pods running",
    )


def test_pods_outside_any_watched_gang_are_victims_alone():
    handle, members = _gang(3, [("n1", 0), ("n2", 0), ("n3", 0)])
    handle.listers.clear()  # the scheduler does not watch Coscheduling PodGroups
    assert _widened(handle, members[0]) == (["m0"], {})
