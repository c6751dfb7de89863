"""Property: a rejected pod never waits in the unschedulable pool while an event its hints say may
help has arrived since its attempt began, whatever the interleaving of adds, pops, hand-backs,
cluster events, updates, deletions, activations and time (gangs included: an event that may help
any member's own rejection reaches the whole gang).

A stateful Hypothesis machine drives the real SchedulingQueue; an oracle replays the same steps
with nothing but the rule above, and every step checks that no parked pod contradicts it and that
every live pod is in exactly one place. A failure prints the steps, which replay it as they are.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from scheduler.api import Pod
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueuedPodInfo,
    QueueingHint,
    Status,
)
from scheduler.framework.interface import NODE, PERSISTENT_VOLUME, POD, UNSCHEDULED_POD, WILDCARD
from scheduler.queue import SchedulingQueue
from scheduler.queue.events import EVENT_FORCE_ACTIVATE
from scheduler.queue.gangs import Gang

FIT, GANG, VOLUME, DEVICES, AFFINITY = "Fit", "Gang", "Volume", "Devices", "Affinity"
NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
POD_DELETE = ClusterEvent("AssignedPod", ActionType.DELETE, "AssignedPodDelete")
POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD, "UnscheduledPodAdd")
PV_ADD = ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD, "PersistentVolumeAdd")
SLICE_ADD = ClusterEvent("resource.k8s.io/resourceslices", ActionType.ADD, "ResourceSliceAdd")
LABEL_UPDATE = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL)
EVENTS = [NODE_ADD, POD_DELETE, POD_ADD, PV_ADD, SLICE_ADD]


def cpu(pod: Pod) -> int:
    return int(pod.labels.get("cpu", "1"))


def fits(pod: Pod, old: object, new: object) -> QueueingHint:
    """Fit: a node (``new``, its size) or a deleted pod (``old``, its size) at least as big."""
    size = new if isinstance(new, int) else old
    return QueueingHint.QUEUE if isinstance(size, int) and size >= cpu(pod) else QueueingHint.SKIP


def same_gang(pod: Pod, old: object, new: object) -> QueueingHint:
    ok = isinstance(new, Pod) and new.labels.get("gang") == pod.labels.get("gang")
    return QueueingHint.QUEUE if ok else QueueingHint.SKIP


REGISTERED = {
    FIT: [ClusterEventWithHint(NODE_ADD, fits), ClusterEventWithHint(POD_DELETE, fits)],
    GANG: [ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD), same_gang)],
    VOLUME: [ClusterEventWithHint(PV_ADD)],
    DEVICES: [ClusterEventWithHint(SLICE_ADD)],  # rejects as "pending" (queued at once)
    AFFINITY: [ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_LABEL))],
}


class Policy:
    """The profile as the queue sees it: no PreEnqueue, the table above, gangs by label."""

    def pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        return "", None

    def hints(self, pod: Pod) -> dict[str, list[ClusterEventWithHint]]:
        return REGISTERED

    def gang_of(self, pod: Pod) -> Gang | None:
        name = pod.labels.get("gang")
        return Gang(GANG, f"{GANG}:{name}") if name else None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Event:
    """What the oracle knows of one event: who could see it, and whose own failure caused it."""

    seq: int
    event: ClusterEvent
    old: object
    new: object
    audience: frozenset[str]
    exclude: str = ""


@dataclass
class Record:
    """A pod's latest rejection as the rule keeps it: each plugin with the pop it was seen after."""

    unschedulable: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)


def helps(pod: Pod, plugin: str, pending: bool, event: Event) -> bool:
    """Does ``event`` match what ``plugin`` registered, with a hint saying QUEUE, for ``pod``?"""
    if event.event.resource == WILDCARD:
        return not isinstance(event.new, Pod) or event.new.uid == pod.uid
    for entry in REGISTERED[plugin]:
        if event.event.matches(entry.event):
            hint = entry.hint
            if hint is None or hint(pod, event.old, event.new) is QueueingHint.QUEUE:
                return True
    return False


def pod_of(uid: str, labels: dict[str, str]) -> Pod:
    return Pod(uid=uid, namespace="default", name=uid, labels=labels)


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = Clock()
        self.queue = SchedulingQueue(
            sort_key=lambda info: (-info.pod.priority, info.timestamp),
            policy=Policy(),
            clock=self.clock,
            max_in_unschedulable=math.inf,  # no five-minute flush hides a pod parked for nothing
        )
        self.pods: dict[str, Pod] = {}  # live pods by uid
        self.in_flight: dict[str, QueuedPodInfo] = {}
        self.popped_at: dict[str, int] = {}  # the oracle's seq at each pod's latest pop
        self.records: dict[str, Record] = {}
        self.events: list[Event] = []
        self.seq = 0
        self.count = 0

    # ------------------------------------------------------------------ helpers

    def _tick(self) -> int:
        self.seq += 1
        return self.seq

    def _parked(self) -> list[str]:
        return [uid for uid in self.pods if self.queue.position(uid) == "unschedulable"]

    def _audience(self) -> frozenset[str]:
        return frozenset(self._parked()) | frozenset(self.in_flight)

    def _gang(self, uid: str) -> str:
        return self.pods[uid].labels.get("gang", "")

    def _record(self, uid: str, unschedulable: set[str], pending: set[str]) -> None:
        """The rule the queue must follow: a rejection by the gang plugin alone keeps the member's
        own reasons; any other replaces them; an error keeps nothing new."""
        popped = self.popped_at[uid]
        new = Record({p: popped for p in unschedulable}, {p: popped for p in pending})
        old = self.records.get(uid)
        if not unschedulable | pending:
            return
        if old is not None and self._gang(uid) and unschedulable | pending <= {GANG}:
            new = Record({**old.unschedulable, **new.unschedulable}, {**old.pending, **new.pending})
        self.records[uid] = new

    def _pop(self, info: QueuedPodInfo) -> None:
        uid = info.pod.uid
        assert uid not in self.in_flight
        self.in_flight[uid] = info
        self.popped_at[uid] = self._tick()

    # ------------------------------------------------------------------ rules

    @rule(gang=st.sampled_from(["", "a", "a", "b"]), size=st.integers(1, 3), priority=st.sampled_from([0, 5]))
    def add_pod(self, gang: str, size: int, priority: int) -> None:
        self.count += 1
        labels = {"cpu": str(size), **({"gang": gang} if gang else {})}
        name = f"p{self.count}"
        pod = Pod(uid=name, namespace="default", name=name, labels=labels, priority=priority)
        self.pods[pod.uid] = pod
        self.queue.add(pod)
        if gang:  # the gang plugin registered pod adds: a cluster event for everyone
            self._event(POD_ADD, None, pod)

    @precondition(lambda self: self.queue.pending()["active"] + self.queue.pending()["backoff"] > 0)
    @rule()
    def pop(self) -> None:
        """What the scheduler's loop pops next, unless it would wait (only pods that failed with
        an error wait out their backoff however idle the queue is)."""
        info = self.loop.run_until_complete(self._pop_unless_waiting())
        if info is None:
            assert self.queue.pending()["active"] == 0
            return
        self._pop(info)

    async def _pop_unless_waiting(self) -> QueuedPodInfo | None:
        popping = asyncio.ensure_future(self.queue.pop())
        await asyncio.sleep(0)
        if popping.done():
            return popping.result()
        popping.cancel()
        return None

    def teardown(self) -> None:
        self.loop.close()

    @precondition(lambda self: self.in_flight)
    @rule(
        data=st.data(),
        plugins=st.sampled_from([{FIT}, {GANG}, {GANG}, {VOLUME}, {AFFINITY}, {FIT, VOLUME}, set()]),
        pending=st.sampled_from([set(), set(), set(), {DEVICES}]),
    )
    def hand_back(self, data: st.DataObject, plugins: set[str], pending: set[str]) -> None:
        uid = data.draw(st.sampled_from(sorted(self.in_flight)))
        info = self.in_flight.pop(uid)
        info.unschedulable_plugins, info.pending_plugins = set(plugins), set(pending)
        if not plugins | pending:
            info.consecutive_errors += 1
        self._record(uid, plugins, pending)
        self.queue.add_unschedulable(info, self.queue.scheduling_cycle())

    @precondition(lambda self: self.in_flight)
    @rule(data=st.data(), bound=st.booleans())
    def pass_permit(self, data: st.DataObject, bound: bool) -> None:
        """Past Permit: bound (the pod leaves; its node counts), or its binding fails (an error)."""
        uid = data.draw(st.sampled_from(sorted(self.in_flight)))
        info = self.in_flight.pop(uid)
        self.queue.done(uid)
        if bound:
            self.queue.delete(info.pod)
            self._forget(uid)
        else:
            info.unschedulable_plugins, info.pending_plugins = set(), set()
            info.consecutive_errors += 1
            self.queue.add_unschedulable(info, self.queue.scheduling_cycle())

    @rule(event=st.sampled_from(EVENTS), size=st.integers(1, 3), data=st.data())
    def cluster_event(self, event: ClusterEvent, size: int, data: st.DataObject) -> None:
        exclude = ""
        if self.pods and data.draw(st.booleans()):
            exclude = data.draw(st.sampled_from(sorted(self.pods)))
        if event is POD_ADD:
            gang = data.draw(st.sampled_from(["a", "b", "c"]))
            self._event(event, None, pod_of("elsewhere", {"gang": gang}), exclude)
        elif event is POD_DELETE:
            self._event(event, size, None, exclude)
        else:
            self._event(event, None, size, exclude)

    def _event(self, event: ClusterEvent, old: object, new: object, exclude: str = "") -> None:
        self.events.append(Event(self._tick(), event, old, new, self._audience(), exclude))
        self.queue.on_cluster_event(event, old, new, exclude=exclude)

    @precondition(lambda self: self.pods)
    @rule(data=st.data())
    def relabel(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.pods)))
        old = self.pods[uid]
        new = Pod(uid=uid, namespace="default", name=uid, labels={**old.labels, "v": str(self.seq)})
        self.pods[uid] = new
        where = self.queue.position(uid)
        if uid in self.in_flight:
            audience = frozenset(self.in_flight)
        elif where == "unschedulable":
            audience = frozenset({uid})
        else:
            audience = frozenset()
        self.events.append(Event(self._tick(), LABEL_UPDATE, old, new, audience))
        self.queue.update(old, new)

    @precondition(lambda self: self.pods)
    @rule(data=st.data())
    def delete_pod(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.pods)))
        pod = self.pods[uid]
        self.queue.delete(pod)
        if uid in self.in_flight:  # its cycle ends: the scheduler hands it back, the queue drops it
            info = self.in_flight.pop(uid)
            info.unschedulable_plugins = {FIT}
            self.queue.add_unschedulable(info, self.queue.scheduling_cycle())
        self._forget(uid)

    def _forget(self, uid: str) -> None:
        del self.pods[uid]
        self.records.pop(uid, None)

    @precondition(lambda self: self.pods)
    @rule(data=st.data())
    def activate(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.pods)))
        pod = self.pods[uid]
        audience = frozenset({uid}) & self._audience()
        self.events.append(Event(self._tick(), EVENT_FORCE_ACTIVATE, None, pod, audience))
        self.queue.activate([pod])

    @rule(seconds=st.sampled_from([0.5, 1.0, 3.0, 11.0]))
    def advance(self, seconds: float) -> None:
        self.clock.now += seconds
        self.queue.flush()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def every_live_pod_is_in_one_place(self) -> None:
        for uid in self.pods:
            where = self.queue.position(uid)
            assert (where != "") + (uid in self.in_flight) == 1, uid
        pending = self.queue.pending()
        assert sum(pending.values()) == sum(1 for uid in self.pods if self.queue.position(uid))

    @invariant()
    def no_pod_is_parked_while_an_event_since_its_attempt_may_help(self) -> None:
        for uid in self._parked():
            since = self.popped_at[uid]
            gang = self._gang(uid)
            members = [m for m in self.pods if gang and self._gang(m) == gang] or [uid]
            for event in self.events:
                if event.seq <= since or uid not in event.audience:
                    continue
                for member in members:
                    if member == event.exclude or member not in self.records:
                        continue
                    record = self.records[member]
                    for pending, plugins in ((False, record.unschedulable), (True, record.pending)):
                        for plugin, seen_after in plugins.items():
                            stale = seen_after < event.seq
                            assert not (stale and helps(self.pods[member], plugin, pending, event)), (
                                f"{uid} parked although {event.event.label or event.event} "
                                f"may help {member}'s rejection by {plugin}"
                            )


QueueMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=60,
    derandomize=True,  # the same cases in every run: CI is repeatable, a failure replays
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_queue_properties = QueueMachine.TestCase
