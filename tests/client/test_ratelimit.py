"""The client-side token bucket, driven by a fake clock."""

from __future__ import annotations

import pytest

from scheduler.client import RateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def limiter(qps: float, burst: int, clock: FakeClock) -> RateLimiter:
    return RateLimiter(qps, burst, clock=clock, sleep=clock.sleep)


async def test_a_full_bucket_lets_a_burst_through_without_waiting() -> None:
    clock = FakeClock()
    bucket = limiter(10, 5, clock)
    for _ in range(5):
        await bucket.acquire()
    assert clock.sleeps == []


async def test_requests_beyond_the_burst_wait_one_interval_each_in_arrival_order() -> None:
    clock = FakeClock()
    bucket = limiter(10, 2, clock)
    waits = [bucket.reserve() for _ in range(5)]
    assert waits == pytest.approx([0, 0, 0.1, 0.2, 0.3])


async def test_the_bucket_refills_at_qps_but_never_beyond_burst() -> None:
    clock = FakeClock()
    bucket = limiter(4, 3, clock)
    for _ in range(3):
        bucket.reserve()
    clock.now += 0.5  # two tokens back
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0, 0, 0.25])
    clock.now += 100  # a long idle period refills only up to burst
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0, 0, 0, 0.25])


async def test_acquire_sleeps_for_the_reserved_delay() -> None:
    clock = FakeClock()
    bucket = limiter(2, 1, clock)
    await bucket.acquire()
    await bucket.acquire()
    assert clock.sleeps == pytest.approx([0.5])


@pytest.mark.parametrize("qps", [0, -1])
async def test_zero_or_negative_qps_disables_throttling(qps: float) -> None:
    clock = FakeClock()
    bucket = limiter(qps, 1, clock)
    for _ in range(100):
        await bucket.acquire()
    assert clock.sleeps == []
    assert not bucket.enabled
