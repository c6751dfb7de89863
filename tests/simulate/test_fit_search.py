"""--fit's search over counts: the least passing count, from any guess, as a scan finds it."""

from __future__ import annotations

import random

from scheduler.simulate.fit import resource_guess, smallest


async def test_the_search_finds_what_a_scan_finds_from_any_guess() -> None:
    rng = random.Random(7)
    for _ in range(300):
        bound = rng.randint(1, 40)
        needed = rng.randint(1, bound + 3)  # above bound: nothing fits
        runs: list[int] = []

        async def trial(count: int, needed: int = needed, runs: list[int] = runs) -> int:
            runs.append(count)
            return max(needed - count, 0)  # pods left pending: fewer with more nodes

        tried: dict[int, int] = {}
        found = await smallest(trial, bound, tried, guess=rng.randint(0, bound + 5))
        assert found == (needed if needed <= bound else None)
        assert len(runs) == len(set(runs)) and all(1 <= c <= bound for c in runs)
        assert tried == {count: max(needed - count, 0) for count in runs}


async def test_a_right_guess_costs_two_runs() -> None:
    runs: list[int] = []

    async def trial(count: int) -> int:
        runs.append(count)
        return 0 if count >= 10 else 1

    assert await smallest(trial, 20, {}, guess=10) == 10
    assert runs == [10, 9]


def test_the_guess_is_the_tightest_resource() -> None:
    pods = [{"cpu": 4000, "memory": 1 << 30, "pods": 1}] * 5
    assert resource_guess(pods, {"cpu": 8000, "memory": 64 << 30, "pods": 110}) == 3
    assert resource_guess(pods, {"cpu": 64000, "memory": 2 << 30, "pods": 110}) == 3
    assert resource_guess(pods, {"cpu": 64000, "memory": 64 << 30, "pods": 2}) == 3
    assert resource_guess([], {"cpu": 1}) == 1
