"""Properties of the whole scheduler (queue, cache, in-flight events, gang activation, plugins,
binding) under random interleavings of node and pod adds and deletes, PodGroups, scheduling
cycles, watch events delivered late or several at once, failed bindings and time:

- no node is ever overcommitted, in the cache or in the API;
- a gang is bound whole or not at all (members past Permit count with the bound ones);
- once the cluster quiesces (no more changes, every event delivered, time moving on for less than
  the five-minute flush, which is off here), nothing stays assumed or held at Permit, and no pod
  (no gang) waits while it fits in what the nodes have left.

Three machines: plain pods with priorities (preemption), Coscheduling gangs, Workload-API gangs.
Each runs a fixed set of cases (``derandomize``); a failure prints the steps that replay it.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, ClassVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from scheduler.config import default_config
from scheduler.plugins.coscheduling import POD_GROUP_LABEL
from tests.support.world import (
    COSCHEDULING_GROUPS,
    GANG_GATES,
    WORKLOAD_GROUPS,
    World,
    coscheduling_config,
    coscheduling_group,
    coscheduling_member,
    node,
    pod,
    workload_group,
    workload_member,
)

PERMIT_TIMEOUT = 5  # Coscheduling's scheduleTimeoutSeconds in these gangs


class SchedulerMachine(RuleBasedStateMachine):
    """Rules shared by the three machines; ``gangs`` says which gang API they use, if any."""

    gangs: ClassVar[str] = ""
    # how long quiescing lasts: the longest backoff, and the longest Permit wait of the gangs
    horizon: ClassVar[float] = 30.0

    def __init__(self) -> None:
        super().__init__()
        self.world = self.make_world()
        self.count = 0
        self.groups: dict[str, int] = {}  # gang -> minimum members
        self.tainted: set[str] = set()  # gangs whose all-or-nothing a test fault may break

    def make_world(self) -> World:
        return World(default_config())

    def teardown(self) -> None:
        try:
            # idle once quiet: a pod is retried after a backoff (a second at least), never in a loop
            budget = int(len(self.world.cluster.pods) * (self.horizon + 2))
            cycles = self.world.run(self.world.quiesce(self.horizon, budget))
            assert cycles <= budget, f"{cycles} scheduling cycles while nothing changed"
            self.check_quiet()
        finally:
            self.world.close()

    def _name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    # ------------------------------------------------------------------ cluster changes

    @precondition(lambda self: len(self.world.cluster.nodes) < 5)
    @rule(cpu=st.sampled_from([2, 4]))
    def add_node(self, cpu: int) -> None:
        self.world.cluster.create_node(node(self._name("n"), cpu))

    @precondition(lambda self: self.world.cluster.nodes)
    @rule(data=st.data())
    def grow_node(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.world.cluster.nodes)))
        cpu = self.world.cluster.nodes[name].allocatable.milli_cpu // 1000 + 2
        self.world.cluster.update_node(node(name, cpu))

    @precondition(lambda self: self.world.cluster.nodes)
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.world.cluster.nodes)))
        self.world.cluster.delete_node(name)
        for bound in [p for p in self.world.bound() if p.node_name == name]:  # the pod GC's part
            self._delete(bound.key)

    @rule(cpu=st.sampled_from([1, 2, 3]), priority=st.sampled_from([0, 0, 10]))
    def add_pod(self, cpu: int, priority: int) -> None:
        self.world.cluster.create_pod(pod(self._name("p"), cpu, priority=priority))

    @precondition(lambda self: self.world.cluster.pods)
    @rule(data=st.data())
    def delete_pod(self, data: st.DataObject) -> None:
        self._delete(data.draw(st.sampled_from(sorted(self.world.cluster.pods))))

    def _delete(self, key: str) -> None:
        deleted = self.world.cluster.delete_pod(key)
        group = self._group_of(deleted) if deleted is not None else ""
        if group:
            self.tainted.add(group)  # a bound member gone: the gang may stay below its minimum

    def _group_of(self, member: Any) -> str:
        if self.gangs == "coscheduling":
            return str(member.labels.get(POD_GROUP_LABEL, ""))
        return str(member.pod_group or "")

    # ------------------------------------------------------------------ the scheduler's progress

    @rule(limit=st.integers(1, 4))
    def schedule(self, limit: int) -> None:
        self.world.run(self.world.schedule(limit))

    @rule(count=st.sampled_from([1, 2, 3, None]))
    def deliver(self, count: int | None) -> None:
        """Watch events reach the scheduler, one or several in one read."""
        self.world.cluster.deliver(count)
        self.world.run(self.world.settle())

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.0, 6.0]))
    def advance(self, seconds: float) -> None:
        self.world.run(self.world.advance(seconds))

    @rule()
    def refuse_next_binding(self) -> None:
        self.world.cluster.refused_bindings += 1
        self.tainted.update(self.groups)  # a member's binding may fail after its siblings'

    # ------------------------------------------------------------------ invariants

    @invariant()
    def no_node_is_overcommitted(self) -> None:
        assert self.world.overcommitted() == []

    @invariant()
    def a_gang_is_placed_whole_or_not_at_all(self) -> None:
        if not self.gangs:
            return
        world = self.world
        placed: Counter[str] = Counter()
        waiting = {p.uid for p in world.waiting()}
        for member in world.cluster.pods.values():
            group = self._group_of(member)
            past_permit = world.parts.cache.is_assumed(member.uid) and member.uid not in waiting
            if group and (member.node_name or past_permit):
                placed[group] += 1
        for group, count in placed.items():
            if group not in self.tainted:
                assert count >= self.groups[group], (
                    f"{count} of gang {group} placed, minimum {self.groups[group]}"
                )

    def check_quiet(self) -> None:
        world = self.world
        assert world.assumed() == [], "pods stayed assumed"
        assert world.waiting() == [], "pods stayed held at Permit"
        free = world.free()
        nominated: Counter[str] = Counter()
        pending = list(world.pending())
        for waiting in pending:
            if waiting.nominated_node_name:
                nominated[waiting.nominated_node_name] += waiting.requests.milli_cpu
        gangs: dict[str, list[Any]] = {}
        for waiting in pending:
            group = self._group_of(waiting) if self.gangs else ""
            if group:
                gangs.setdefault(group, []).append(waiting)
                continue
            cpu = waiting.requests.milli_cpu
            room = [f.node for f in free if f.cpu * 1000 - nominated[f.node] >= cpu]
            assert not room, f"{waiting.name} ({cpu}m) pending though {room} have room"
        for group, members in gangs.items():
            minimum = self.groups.get(group)
            if minimum is None:
                continue  # no PodGroup: its members wait for one
            bound = sum(1 for p in world.bound() if self._group_of(p) == group)
            needed = max(0, minimum - bound)
            size = members[0].requests.milli_cpu / 1000
            slots = sum(math.floor(f.cpu / size) for f in free if not nominated[f.node])
            if len(members) + bound >= minimum and needed <= len(members):
                assert slots < max(needed, 1), (
                    f"gang {group}: {len(members)} pending, {needed} needed, room for {slots}"
                )


class PlainPods(SchedulerMachine):
    pass


class CoschedulingGangs(SchedulerMachine):
    gangs = "coscheduling"
    horizon = 30.0 + PERMIT_TIMEOUT

    def make_world(self) -> World:
        return World(coscheduling_config())

    @rule(size=st.integers(2, 3), cpu=st.sampled_from([1, 2, 3]), group_first=st.booleans())
    def add_gang(self, size: int, cpu: int, group_first: bool) -> None:
        group = self._name("g")
        cluster = self.world.cluster
        if group_first:
            cluster.create_object(COSCHEDULING_GROUPS, coscheduling_group(group, size, PERMIT_TIMEOUT))
        for i in range(size):
            cluster.create_pod(coscheduling_member(f"{group}-{i}", group, cpu))
        if not group_first:
            cluster.create_object(COSCHEDULING_GROUPS, coscheduling_group(group, size, PERMIT_TIMEOUT))
        self.groups[group] = size


class WorkloadGangs(SchedulerMachine):
    gangs = "workload"
    horizon = 30.0 + 300.0  # GangScheduling holds members at Permit for five minutes at most

    def make_world(self) -> World:
        config = default_config(features=GANG_GATES)
        return World(config, features=GANG_GATES)

    @rule(size=st.integers(2, 3), cpu=st.sampled_from([1, 2, 3]), group_first=st.booleans())
    def add_gang(self, size: int, cpu: int, group_first: bool) -> None:
        group = self._name("g")
        cluster = self.world.cluster
        if group_first:
            cluster.create_object(WORKLOAD_GROUPS, workload_group(group, size))
        for i in range(size):
            cluster.create_pod(workload_member(f"{group}-{i}", group, cpu))
        if not group_first:
            cluster.create_object(WORKLOAD_GROUPS, workload_group(group, size))
        self.groups[group] = size


CASES = settings(
    max_examples=40,
    stateful_step_count=40,
    derandomize=True,  # the same cases in every run: CI is repeatable, a failure replays
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
PlainPods.TestCase.settings = CASES
CoschedulingGangs.TestCase.settings = CASES
WorkloadGangs.TestCase.settings = CASES
test_plain_pods = PlainPods.TestCase
test_coscheduling_gangs = CoschedulingGangs.TestCase
test_workload_gangs = WorkloadGangs.TestCase
