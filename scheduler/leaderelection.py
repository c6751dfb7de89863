"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Only one replica may schedule at a time, or two of them could place pods against stale views of
each other. The rules follow client-go's ``leaderelection`` package:

* Timestamps in the Lease are informational only. A candidate never compares the remote
  ``renewTime`` with its own clock; it records *when it saw the lease's spec change* (local
  monotonic clock) and treats the lease as expired ``leaseDurationSeconds`` after that.
* Every write carries the lease's ``resourceVersion`` (optimistic concurrency): a 409 means another
  candidate got there first, and the write is lost.
* Each request is abandoned after ``request_timeout`` (a third of ``renew_deadline``, at least
  ``retry_period``) and tried again at the next ``retry_period`` tick, so one request hanging on a
  dead connection cannot use up the whole renew deadline.
* A leader that cannot renew within ``renew_deadline`` of its last successful renewal stops leading
  at once, which is before any follower can consider the lease expired (``lease_duration`` >
  ``renew_deadline``), so two leaders never overlap as long as clocks advance at similar rates.
* Releasing writes an empty holder (and a 1s duration) so a follower takes over at its next retry
  instead of waiting for expiry.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from scheduler.framework.interface import ApiClient, ApiResponse

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

# Acquisition retries wait retry_period * (1 + rand * JITTER_FACTOR), as client-go, so candidates
# started together do not hit the API server in lock step.
JITTER_FACTOR = 1.2

# How long past its lease duration a leader may go without renewing before /healthz fails
# (kube-scheduler's watchdog uses 20s). Renewal normally stops far earlier; this catches a stuck loop.
DEFAULT_HEALTHZ_TOLERANCE = 20.0


class LeadershipLost(Exception):
    """The lease could not be renewed in time, or another holder took it: stop and exit non-zero."""


def default_identity() -> str:
    """A holder identity unique per process: the pod's name (``POD_NAME`` from the downward API,
    else the hostname) plus a random suffix, so ``kubectl get lease`` points at the pod."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


def format_micro_time(moment: datetime) -> str:
    """RFC 3339 with microseconds in UTC, as Kubernetes' MicroTime (``2026-11-29T15:04:05.123456Z``)."""
    if moment.tzinfo is None:
        raise ValueError("a lease timestamp needs a timezone-aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True, frozen=True)
class LeaseRecord:
    """The election-relevant part of a Lease spec; equality tells whether the spec changed."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LeaseRecord:
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }


def _json_body(response: ApiResponse) -> dict[str, Any] | None:
    body = response.body
    if isinstance(body, bytes | bytearray | str):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    return body if isinstance(body, dict) else None


class LeaderElector:
    """Campaigns for one Lease and keeps it while leading.

    Use :meth:`run` (campaign, lead, renew, release), or the steps it is made of:
    :meth:`acquire`, :meth:`keep_renewing`, :meth:`release`. ``clock``/``sleep`` are injectable so
    tests can drive time; ``clock`` must be monotonic, ``wall_clock`` only feeds the informational
    timestamps written into the Lease.
    """

    __slots__ = (
        "_client",
        "_clock",
        "_duration_seconds",
        "_healthz_tolerance",
        "_leading",
        "_lease",
        "_lease_duration",
        "_metrics",
        "_observed_at",
        "_record",
        "_release_on_cancel",
        "_renew_deadline",
        "_renewed_at",
        "_reported_leader",
        "_request_timeout",
        "_retry_period",
        "_rng",
        "_sleep",
        "_wall_clock",
        "identity",
        "lost",
        "name",
        "namespace",
    )

    def __init__(
        self,
        client: ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        wall_clock: Callable[[], datetime] = _utc_now,
        metrics: SchedulerMetrics | None = None,
        release_on_cancel: bool = True,
        healthz_tolerance: float = DEFAULT_HEALTHZ_TOLERANCE,
        rng: random.Random | None = None,
        request_timeout: float | None = None,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        if not namespace or not name:
            raise ValueError("leader election needs the lease's namespace and name")
        if min(lease_duration, renew_deadline, retry_period) <= 0:
            raise ValueError("leaseDuration, renewDeadline and retryPeriod must be greater than zero")
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renewDeadline must be greater than retryPeriod*{JITTER_FACTOR}")
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._lease_duration = lease_duration
        # Rounded up: followers expire the lease by this number, so it must never undercut ours.
        self._duration_seconds = max(1, math.ceil(lease_duration))
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._request_timeout = (
            request_timeout if request_timeout is not None else max(retry_period, renew_deadline / 3)
        )
        self._clock = clock
        self._sleep = sleep
        self._wall_clock = wall_clock
        self._metrics = metrics
        self._release_on_cancel = release_on_cancel
        self._healthz_tolerance = healthz_tolerance
        self._rng = rng if rng is not None else random.Random()
        self._lease: dict[str, Any] | None = None  # last Lease read or written: its resourceVersion
        self._record: LeaseRecord | None = None  # last observed spec
        self._observed_at = 0.0  # local time the observed spec last changed
        self._renewed_at = 0.0  # local time our last successful write was sent
        self._leading = False
        self._reported_leader = ""
        self.lost = asyncio.Event()  # set when leadership is lost (not when released)
        self._set_gauge(False)

    # ----------------------------------------------------------------------------- observation

    @property
    def is_leader(self) -> bool:
        """True between a successful acquisition and a loss or release."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder identity last observed ("" when none was seen)."""
        return self._record.holder_identity if self._record else ""

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def check_health(self) -> str | None:
        """Watchdog for /healthz: a leader that has not renewed for longer than its lease duration
        (plus a tolerance) is stuck and should be restarted. Followers are always healthy."""
        if not self._leading:
            return None
        if self._clock() - self._renewed_at > self._lease_duration + self._healthz_tolerance:
            return f"failed election to renew leadership on lease {self.describe()}"
        return None

    # ------------------------------------------------------------------------------- lifecycle

    async def run(self, lead: Callable[[], Awaitable[object]]) -> None:
        """Campaign until elected, then run ``lead()`` while renewing in the background.

        * Leadership lost: ``lead()`` is cancelled at once (check :attr:`lost` in its cleanup to
          skip any drain) and :class:`LeadershipLost` is raised; the process should exit non-zero.
        * ``lead()`` returns or raises: renewal stops, the lease is released (if
          ``release_on_cancel``), and its result or exception propagates.
        * ``run()`` cancelled (graceful shutdown): ``lead()`` is cancelled and awaited while the lease
          is still renewed, so in-flight bindings can finish under it; then the lease is released
          and the cancellation propagates.
        """
        await self.acquire()
        work = asyncio.ensure_future(lead())
        renewing = asyncio.ensure_future(self.keep_renewing())
        cancelled: asyncio.CancelledError | None = None
        try:
            await asyncio.wait({work, renewing}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError as exc:
            cancelled = exc
            work.cancel()
            await asyncio.wait({work, renewing}, return_when=asyncio.FIRST_COMPLETED)
        if renewing.done() and not self.lost.is_set():
            self._lose("renewal stopped unexpectedly")
        lost = self.lost.is_set()
        work.cancel()
        renewing.cancel()
        await asyncio.gather(work, renewing, return_exceptions=True)
        if self._release_on_cancel:
            # After a loss the API is likely unreachable: try briefly, the resourceVersion keeps it safe.
            await self.release(timeout=self._retry_period if lost else self._renew_deadline)
        if cancelled is not None:
            raise cancelled
        if lost:
            raise LeadershipLost(f"lost the lease {self.describe()}")
        if not work.cancelled() and (error := work.exception()) is not None:
            raise error

    async def acquire(self) -> None:
        """Retry (jittered) until this candidate holds the lease."""
        log.info("attempting to acquire leader lease %s as %s", self.describe(), self.identity)
        while True:
            if await self._attempt(self._clock() + self._request_timeout):
                self._leading = True
                self.lost.clear()
                self._set_gauge(True)
                log.info("successfully acquired lease %s", self.describe())
                return
            await self._sleep(self._retry_period * (1 + self._rng.random() * JITTER_FACTOR))

    async def keep_renewing(self) -> None:
        """Renew every ``retry_period``; return (with :attr:`lost` set) once leadership is lost."""
        if not self._leading:
            raise RuntimeError("keep_renewing() needs a held lease; call acquire() first")
        while True:
            await self._sleep(self._retry_period)
            deadline = self._renewed_at + self._renew_deadline
            while True:
                started = self._clock()
                if await self._attempt(min(deadline, started + self._request_timeout)):
                    break
                holder = self.leader
                if holder and holder != self.identity:
                    self._lose(f"lease {self.describe()} is now held by {holder}")
                    return
                now = self._clock()
                if now >= deadline:
                    self._lose(f"failed to renew lease {self.describe()} within {self._renew_deadline}s")
                    return
                # the next try at the next retry tick, or at once if this one used the whole period
                await self._sleep(min(max(started + self._retry_period - now, 0.0), deadline - now))

    async def release(self, timeout: float | None = None) -> bool:
        """Give the lease up (empty holder, 1s duration) if we are its last observed holder.

        Returns whether the lease is no longer ours. The write carries the resourceVersion we last
        saw, so it can never clobber a newer holder.
        """
        was_leading = self._leading
        self._leading = False
        self._set_gauge(False)
        if self._record is None or self._record.holder_identity != self.identity:
            return True
        deadline = self._clock() + (self._renew_deadline if timeout is None else timeout)
        if await self._bounded(self._release(), deadline):
            log.info("released lease %s", self.describe())
            return True
        log.warning("could not release lease %s (was leading: %s)", self.describe(), was_leading)
        return False

    # -------------------------------------------------------------------------------- internals

    def _lose(self, reason: str) -> None:
        self._leading = False
        self._set_gauge(False)
        self.lost.set()
        log.error("leader election lost: %s", reason)

    def _set_gauge(self, leading: bool) -> None:
        if self._metrics is not None:
            self._metrics.set_leader(self.name, leading)

    def _path(self, with_name: bool = True) -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        return f"{base}/{self.name}" if with_name else base

    def _lease_valid(self, now: float) -> bool:
        record = self._record
        return record is not None and now < self._observed_at + record.lease_duration_seconds

    def _observe(self, lease: dict[str, Any], record: LeaseRecord, when: float) -> None:
        """Remember a lease read from the server; the expiry clock restarts only if its spec changed."""
        self._lease = lease
        if record != self._record:
            self._record = record
            self._observed_at = when
        self._report_leader(record.holder_identity)

    def _observe_own(self, response: ApiResponse, record: LeaseRecord, sent_at: float) -> None:
        """Remember a lease we wrote. Times are taken when the request left: nobody can have seen
        the write earlier, so our view of the expiry is never later than a follower's."""
        self._lease = _json_body(response)  # None forces a re-read before the next write
        self._record = record
        self._observed_at = sent_at
        if record.holder_identity == self.identity:
            self._renewed_at = sent_at
        self._report_leader(record.holder_identity)

    def _report_leader(self, holder: str) -> None:
        if holder != self._reported_leader:
            self._reported_leader = holder
            if holder:
                log.info("new leader of %s: %s", self.describe(), holder)

    async def _attempt(self, deadline: float) -> bool:
        """One try_acquire_or_renew, abandoned at ``deadline`` (local clock)."""
        return await self._bounded(self._try_acquire_or_renew(), deadline)

    async def _bounded(self, attempt: Awaitable[bool], deadline: float) -> bool:
        """Await ``attempt`` until ``deadline``; False on timeout or error (logged)."""
        work = asyncio.ensure_future(attempt)
        remaining = deadline - self._clock()
        if remaining <= 0:
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            return False
        timer = asyncio.ensure_future(self._sleep(remaining))
        try:
            await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not work.done():
                work.cancel()
            await asyncio.gather(work, timer, return_exceptions=True)
        if work.cancelled():
            log.warning("lease %s: request timed out", self.describe())
            return False
        if (error := work.exception()) is not None:
            log.warning("lease %s: request failed: %r", self.describe(), error)
            return False
        return work.result()

    async def _write(self, record: LeaseRecord) -> bool:
        """PUT ``record`` over the last seen lease (its resourceVersion guards against races)."""
        assert self._lease is not None
        sent_at = self._clock()
        body = {**self._lease, "spec": record.to_spec()}
        response = await self._client.request("PUT", self._path(), body)
        if response.status != 200:
            log.info("lease %s: update answered %s", self.describe(), response.status)
            if response.status == 409:
                self._lease = None  # stale resourceVersion: re-read before the next write
            return False
        self._observe_own(response, record, sent_at)
        return True

    async def _try_acquire_or_renew(self) -> bool:
        now = self._clock()
        stamp = format_micro_time(self._wall_clock())
        desired = LeaseRecord(self.identity, self._duration_seconds, stamp, stamp, 0)

        # Fast path: the leader writes over the lease it last saw without reading it first.
        if self._leading and self._lease is not None and self._record is not None and self._lease_valid(now):
            renewal = replace(
                desired,
                acquire_time=self._record.acquire_time,
                lease_transitions=self._record.lease_transitions,
            )
            if await self._write(renewal):
                return True

        response = await self._client.request("GET", self._path())
        if response.status == 404:
            return await self._create(desired)
        lease = _json_body(response) if response.status == 200 else None
        if lease is None:
            log.warning("lease %s: get answered %s", self.describe(), response.status)
            return False
        current = LeaseRecord.from_spec(lease.get("spec") or {})
        self._observe(lease, current, self._clock())
        held_by_other = bool(current.holder_identity) and current.holder_identity != self.identity
        if held_by_other and (self._leading or self._lease_valid(now)):
            # A leader seeing another holder has been replaced; a follower waits for expiry.
            return False
        if current.holder_identity == self.identity:
            update = replace(
                desired, acquire_time=current.acquire_time, lease_transitions=current.lease_transitions
            )
        else:
            update = replace(desired, lease_transitions=current.lease_transitions + 1)
        return await self._write(update)

    async def _release(self) -> bool:
        if self._lease is None:  # our last write conflicted: see who holds it now
            response = await self._client.request("GET", self._path())
            lease = _json_body(response) if response.status == 200 else None
            if lease is None:
                return response.status == 404
            self._observe(lease, LeaseRecord.from_spec(lease.get("spec") or {}), self._clock())
            if self.leader != self.identity:
                return True
        assert self._record is not None
        stamp = format_micro_time(self._wall_clock())
        return await self._write(LeaseRecord("", 1, stamp, stamp, self._record.lease_transitions))

    async def _create(self, record: LeaseRecord) -> bool:
        sent_at = self._clock()
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        response = await self._client.request("POST", self._path(with_name=False), body)
        if response.status not in (200, 201):
            # 409 AlreadyExists: another candidate created it first.
            log.info("lease %s: create answered %s", self.describe(), response.status)
            return False
        self._observe_own(response, record, sent_at)
        return True
