"""Leader election against an in-memory Lease API, with virtual time so failover runs instantly."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from scheduler.framework.interface import ApiResponse
from scheduler.leaderelection import (
    LeaderElector,
    LeadershipLost,
    LeaseRecord,
    default_identity,
    format_micro_time,
)
from scheduler.metrics import SchedulerMetrics

NS, NAME = "kube-system", "pyscheduler"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{NAME}"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class FakeTime:
    """Virtual monotonic clock: ``sleep`` parks until :meth:`advance` moves time past its deadline."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return datetime(2026, 11, 29, 15, 4, 5, tzinfo=UTC) + timedelta(seconds=self.now - 1000.0)

    async def sleep(self, delay: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (self.now + max(0.0, delay), next(self._seq), future))
        await future

    async def settle(self) -> None:
        for _ in range(30):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in deadline order and letting them run in between."""
        target = self.now + seconds
        await self.settle()
        while self._waiters and self._waiters[0][0] <= target:
            deadline, _, future = heapq.heappop(self._waiters)
            if future.done():
                continue
            self.now = max(self.now, deadline)
            future.set_result(None)
            await self.settle()
        self.now = target
        await self.settle()


@dataclass
class LeaseStore:
    """The server side: Lease objects with resourceVersion-based optimistic concurrency."""

    leases: dict[str, dict[str, Any]] = field(default_factory=dict)
    rv: int = 0

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    @property
    def spec(self) -> dict[str, Any]:
        return self.leases[NAME]["spec"]

    def force(self, **spec: Any) -> None:
        """An out-of-band writer (another scheduler) changing the lease."""
        lease = self.leases.setdefault(
            NAME, {"metadata": {"name": NAME, "namespace": NS}, "spec": {"leaseTransitions": 0}}
        )
        lease["spec"].update(spec)
        self._bump(lease)

    def handle(self, method: str, path: str, body: Any) -> ApiResponse:
        name = path.rsplit("/", 1)[1]
        if method == "GET":
            if name not in self.leases:
                return ApiResponse(404, {"kind": "Status", "reason": "NotFound"})
            return ApiResponse(200, _copy(self.leases[name]))
        if method == "POST":
            name = body["metadata"]["name"]
            if name in self.leases:
                return ApiResponse(409, {"kind": "Status", "reason": "AlreadyExists"})
            self.leases[name] = self._bump(_copy(body))
            return ApiResponse(201, _copy(self.leases[name]))
        if method == "PUT":
            if name not in self.leases:
                return ApiResponse(404, {"kind": "Status", "reason": "NotFound"})
            sent_rv = body["metadata"].get("resourceVersion")
            if sent_rv != self.leases[name]["metadata"]["resourceVersion"]:
                return ApiResponse(409, {"kind": "Status", "reason": "Conflict"})
            self.leases[name] = self._bump(_copy(body))
            return ApiResponse(200, _copy(self.leases[name]))
        return ApiResponse(405, None)


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    return obj


class FakeClient:
    """One replica's connection: can fail with a status or hang (a timeout) on demand."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.fail_with: int | None = None
        self.hang = False
        self.calls: list[str] = []

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        self.calls.append(method)
        await asyncio.sleep(0)  # a real request yields to other replicas before the server answers
        if self.hang:
            await asyncio.Event().wait()
        if self.fail_with is not None:
            return ApiResponse(self.fail_with, {"kind": "Status"})
        return self.store.handle(method, path, body)


@dataclass
class Replica:
    client: FakeClient
    elector: LeaderElector
    led: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    async def lead(self) -> None:
        self.led.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.stopped.set()

    def start(self) -> None:
        self.task = asyncio.ensure_future(self.elector.run(self.lead))


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def store() -> LeaseStore:
    return LeaseStore()


def make_replica(
    store: LeaseStore, clock: FakeTime, identity: str, metrics: SchedulerMetrics | None = None, **kw: Any
) -> Replica:
    client = FakeClient(store)
    elector = LeaderElector(
        client,
        namespace=NS,
        name=NAME,
        identity=identity,
        clock=clock,
        sleep=clock.sleep,
        wall_clock=clock.wall,
        metrics=metrics,
        **kw,
    )
    return Replica(client, elector)


async def stop(*replicas: Replica) -> None:
    for replica in replicas:
        if replica.task is not None and not replica.task.done():
            replica.task.cancel()
    await asyncio.gather(*(r.task for r in replicas if r.task is not None), return_exceptions=True)


async def test_exactly_one_of_three_candidates_leads_and_the_others_wait(clock, store):
    replicas = [make_replica(store, clock, f"replica-{i}") for i in range(3)]
    for replica in replicas:
        replica.start()
    await clock.advance(60)
    leaders = [r for r in replicas if r.elector.is_leader]
    assert len(leaders) == 1
    assert [r.led.is_set() for r in replicas].count(True) == 1
    assert store.spec["holderIdentity"] == leaders[0].elector.identity
    assert store.spec["leaseTransitions"] == 0
    assert store.spec["leaseDurationSeconds"] == 15
    assert all(r.elector.leader == leaders[0].elector.identity for r in replicas)
    await stop(*replicas)


async def test_the_leader_keeps_renewing_every_retry_period(clock, store):
    leader = make_replica(store, clock, "a")
    leader.start()
    await clock.advance(1)
    first_renew = store.spec["renewTime"]
    acquired = store.spec["acquireTime"]
    await clock.advance(2.5)
    assert store.spec["renewTime"] != first_renew
    assert store.spec["acquireTime"] == acquired
    assert leader.elector.is_leader
    await stop(leader)


async def test_lease_timestamps_are_utc_micro_time(clock, store):
    leader = make_replica(store, clock, "a")
    leader.start()
    await clock.advance(0.5)
    assert MICRO_TIME.match(store.spec["acquireTime"])
    assert store.spec["acquireTime"] == "2026-11-29T15:04:05.000000Z"
    assert MICRO_TIME.match(store.spec["renewTime"])
    await stop(leader)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "2026-01-02T03:04:05.000006Z"),
        (
            datetime(2026, 1, 2, 5, 4, 5, 123456, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T03:04:05.123456Z",
        ),
    ],
    ids=["utc stays as is", "offsets are converted to utc"],
)
def test_micro_time_is_written_in_utc_with_a_z(moment, expected):
    assert format_micro_time(moment) == expected


def test_micro_time_refuses_naive_datetimes():
    with pytest.raises(ValueError):
        format_micro_time(datetime(2026, 1, 1))


async def test_a_follower_takes_over_an_abandoned_lease_only_after_it_expires(clock, store):
    a = make_replica(store, clock, "a", release_on_cancel=False)
    a.start()
    await clock.advance(1)
    assert a.elector.is_leader
    b = make_replica(store, clock, "b")
    b.start()
    await clock.advance(1)
    await stop(a)  # like kill -9: no release
    await clock.advance(12)  # less than leaseDuration since b last saw a change
    assert not b.elector.is_leader
    await clock.advance(15 + 2 * 2.2)  # expiry plus one jittered retry at most
    assert b.elector.is_leader
    assert store.spec["holderIdentity"] == "b"
    assert store.spec["leaseTransitions"] == 1
    await stop(b)


async def test_a_candidate_never_trusts_the_remote_renew_time(clock, store):
    # renewTime years in the past: only the local observation of the spec counts.
    store.force(holderIdentity="other", leaseDurationSeconds=15, renewTime="2001-01-01T00:00:00.000000Z")
    b = make_replica(store, clock, "b")
    b.start()
    await clock.advance(14)
    assert not b.elector.is_leader
    assert b.elector.leader == "other"
    await clock.advance(10)
    assert b.elector.is_leader
    await stop(b)


async def test_a_lease_that_keeps_changing_is_never_taken(clock, store):
    store.force(holderIdentity="other", leaseDurationSeconds=15)
    b = make_replica(store, clock, "b")
    b.start()
    for _ in range(20):  # the other holder renews every 2s for 40s
        await clock.advance(2)
        store.force(renewTime=format_micro_time(clock.wall()))
    assert not b.elector.is_leader
    await stop(b)


async def test_release_empties_the_holder_and_a_follower_takes_over_within_a_retry(clock, store):
    metrics = SchedulerMetrics()
    a = make_replica(store, clock, "a", metrics=metrics)
    a.start()
    await clock.advance(1)
    b = make_replica(store, clock, "b")
    b.start()
    await clock.advance(3)
    assert metrics.registry.get_sample_value("leader_election_master_status", {"name": NAME}) == 1
    a.task.cancel()  # SIGTERM
    await clock.settle()
    assert a.stopped.is_set()
    assert store.spec["holderIdentity"] == ""
    assert store.spec["leaseDurationSeconds"] == 1
    assert store.spec["leaseTransitions"] == 0
    assert metrics.registry.get_sample_value("leader_election_master_status", {"name": NAME}) == 0
    await clock.advance(2 * 2.2)
    assert b.elector.is_leader
    assert store.spec["holderIdentity"] == "b"
    assert store.spec["leaseTransitions"] == 1
    with pytest.raises(asyncio.CancelledError):
        await a.task
    await stop(b)


async def test_shutdown_keeps_renewing_while_the_leading_work_drains(clock, store):
    drained = asyncio.Event()
    a = make_replica(store, clock, "a")

    async def lead() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await clock.sleep(6)  # in-flight bindings finishing
            drained.set()
            raise

    task = asyncio.ensure_future(a.elector.run(lead))
    await clock.advance(1)
    renewed = store.spec["renewTime"]
    task.cancel()
    await clock.advance(5)
    assert store.spec["holderIdentity"] == "a"
    assert store.spec["renewTime"] != renewed  # still renewing during the drain
    await clock.advance(2)
    assert drained.is_set()
    assert store.spec["holderIdentity"] == ""
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("failure", ["500", "timeout"])
async def test_a_leader_that_cannot_renew_stops_before_its_lease_expires(clock, store, failure):
    metrics = SchedulerMetrics()
    a = make_replica(store, clock, "a", metrics=metrics)
    a.start()
    await clock.advance(1)
    last_renewal = clock.now
    b = make_replica(store, clock, "b")
    b.start()
    await clock.advance(0.5)
    if failure == "500":
        a.client.fail_with = 500
    else:
        a.client.hang = True
    # Step in small increments and note when a stops and when b starts.
    stopped_at = took_over_at = None
    for _ in range(300):
        await clock.advance(0.1)
        if stopped_at is None and a.stopped.is_set():
            stopped_at = clock.now
            assert not a.elector.is_leader
            assert a.elector.lost.is_set()
        if took_over_at is None and b.elector.is_leader:
            took_over_at = clock.now
    assert stopped_at is not None and took_over_at is not None
    assert stopped_at - last_renewal < 15  # before the lease can expire for b
    assert stopped_at < took_over_at
    assert metrics.registry.get_sample_value("leader_election_master_status", {"name": NAME}) == 0
    with pytest.raises(LeadershipLost):
        await a.task
    assert store.spec["holderIdentity"] == "b"
    assert store.spec["leaseTransitions"] == 1
    await stop(b)


async def test_a_stale_renewal_loses_to_the_new_holder_at_once(clock, store):
    a = make_replica(store, clock, "a")
    a.start()
    await clock.advance(1)
    store.force(holderIdentity="intruder", leaseTransitions=1)  # another writer won meanwhile
    await clock.advance(2.1)  # a's next renewal: PUT with an old resourceVersion
    assert a.stopped.is_set()
    assert not a.elector.is_leader
    assert store.spec["holderIdentity"] == "intruder"
    with pytest.raises(LeadershipLost):
        await a.task


async def test_a_renewal_conflict_from_an_unrelated_write_rereads_and_keeps_the_lease(clock, store):
    a = make_replica(store, clock, "a")
    a.start()
    await clock.advance(1)
    store.force()  # e.g. someone added a label: new resourceVersion, same holder
    await clock.advance(2.1)
    assert a.elector.is_leader
    assert a.client.calls[-3:] == ["PUT", "GET", "PUT"]
    await stop(a)


async def test_racing_creators_get_already_exists_and_only_one_wins(clock, store):
    replicas = [make_replica(store, clock, f"r{i}") for i in range(2)]
    for replica in replicas:
        replica.start()
    await clock.settle()
    assert [r.client.calls[:2] for r in replicas] == [["GET", "POST"], ["GET", "POST"]]
    assert sum(r.elector.is_leader for r in replicas) == 1
    await stop(*replicas)


async def test_the_watchdog_flags_a_leader_that_stopped_renewing(clock, store):
    a = make_replica(store, clock, "a")
    await asyncio.ensure_future(a.elector.acquire())
    assert a.elector.check_health() is None
    await clock.advance(15 + 19)
    assert a.elector.check_health() is None
    await clock.advance(2)
    assert "failed election to renew leadership" in (a.elector.check_health() or "")


async def test_followers_are_healthy(clock, store):
    store.force(holderIdentity="other", leaseDurationSeconds=15)
    b = make_replica(store, clock, "b")
    b.start()
    await clock.advance(100)
    assert b.elector.check_health() is None
    await stop(b)


async def test_when_the_leading_work_returns_the_lease_is_released(clock, store):
    a = make_replica(store, clock, "a")

    async def lead() -> str:
        return "done"

    task = asyncio.ensure_future(a.elector.run(lead))
    await clock.advance(1)
    assert task.done() and task.exception() is None
    assert store.spec["holderIdentity"] == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "leaseDuration must be greater than renewDeadline"),
        ({"renew_deadline": 2, "retry_period": 2}, "renewDeadline must be greater than retryPeriod"),
        ({"retry_period": 0}, "greater than zero"),
        ({"identity": ""}, "identity"),
    ],
)
def test_invalid_timings_are_refused(kwargs, message):
    args = {"namespace": NS, "name": NAME, "identity": "a", **kwargs}
    with pytest.raises(ValueError, match=message):
        LeaderElector(FakeClient(LeaseStore()), **args)


def test_default_identity_is_hostname_plus_a_unique_suffix():
    import socket

    first, second = default_identity(), default_identity()
    assert first.startswith(socket.gethostname() + "_")
    assert first != second


def test_lease_records_round_trip_through_a_spec():
    record = LeaseRecord("a", 15, "t1", "t2", 3)
    assert LeaseRecord.from_spec(record.to_spec()) == record
    assert LeaseRecord.from_spec({}) == LeaseRecord()


# ------------------------------------------------------------------ over real HTTP (sim cluster)


async def _wait_for(predicate, timeout: float = 10.0) -> bool:
    """Poll ``predicate`` in real time; generous bounds, no timing assertions."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


async def test_two_replicas_elect_hand_over_and_step_down_against_the_sim_cluster():
    sim_module = pytest.importorskip("simcluster")
    rest = pytest.importorskip("scheduler.client.rest")
    from scheduler.client import ClientConfig

    async with sim_module.SimCluster(nodes=1, kubelet=False, controllers=False) as sim:
        config = ClientConfig(server=sim.url)
        clients = [rest.KubeClient(config, qps=0) for _ in range(2)]
        timings = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
        replicas = [
            Replica(c, LeaderElector(c, namespace="default", name=NAME, identity=f"r{i}", **timings))
            for i, c in enumerate(clients)
        ]
        try:
            for replica in replicas:
                replica.start()
            assert await _wait_for(lambda: any(r.led.is_set() for r in replicas))
            leader = next(r for r in replicas if r.led.is_set())
            follower = next(r for r in replicas if r is not leader)
            lease = sim.store.get("leases", "default", NAME)
            assert lease["spec"]["holderIdentity"] == leader.elector.identity
            assert MICRO_TIME.match(lease["spec"]["renewTime"])
            assert not follower.elector.is_leader

            leader.task.cancel()  # graceful shutdown: release
            with pytest.raises(asyncio.CancelledError):
                await leader.task
            assert await _wait_for(lambda: follower.elector.is_leader)
            lease = sim.store.get("leases", "default", NAME)
            assert lease["spec"]["holderIdentity"] == follower.elector.identity
            assert lease["spec"]["leaseTransitions"] == 1

            sim.faults.set_error("update", "leases", 1.0, code=500)  # renewals fail from now on
            with pytest.raises(LeadershipLost):
                await asyncio.wait_for(follower.task, 10)
            assert follower.stopped.is_set()
            assert not follower.elector.is_leader
        finally:
            await stop(*replicas)
            for client in clients:
                await client.close()


class HangOnce(FakeClient):
    """The first renewal (PUT) after ``armed`` hangs forever, as on a connection cut silently."""

    armed = False

    async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        if self.armed and method == "PUT":
            self.armed = False
            self.calls.append(method)
            await asyncio.Event().wait()
        return await super().request(method, path, body, **kw)


async def test_a_renewal_that_hangs_is_abandoned_and_retried_so_the_lease_is_kept(clock, store):
    # leaseDuration 6s, renewDeadline 4s, retryPeriod 1s: a request may take at most 4/3 s
    client = HangOnce(store)
    elector = LeaderElector(
        client,
        namespace=NS,
        name=NAME,
        identity="a",
        lease_duration=6,
        renew_deadline=4,
        retry_period=1,
        clock=clock,
        sleep=clock.sleep,
        wall_clock=clock.wall,
    )
    replica = Replica(client, elector)
    replica.start()
    await clock.advance(0.5)
    assert elector.is_leader
    client.armed = True
    for _ in range(80):
        await clock.advance(0.1)
    assert elector.is_leader and not elector.lost.is_set()
    assert client.calls.count("PUT") >= 6  # the hung one, then a renewal every second
    await stop(replica)
