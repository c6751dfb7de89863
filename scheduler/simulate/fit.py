"""`--fit`: the smallest number of template nodes to add so that every pending pod is placed.

Each count is tried on the simulated cluster by the real scheduler (`Simulation.try_nodes`);
the search assumes more nodes never place fewer pods: counts double from 1 until one places
everything, then a binary search between the last failure and that success. It stops at
``bound`` nodes (one new node per pending pod, or ``--fit-max``): if that many do not help, no
count does, and the answer is "cannot fit" with the reason of a pod left pending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class Fit:
    """The search's answer and the counts it tried (count -> pods left pending)."""

    template: str  # the node the new ones copy
    pods: int  # pending pods to place
    nodes: int | None = None  # None: even ``bound`` nodes do not place them all
    bound: int = 0
    tried: dict[int, int] = field(default_factory=dict)
    still_pending: str = ""  # with nodes None: one pod left pending and why


Trial = Callable[[int], Awaitable[int]]  # nodes to add -> pods left pending


async def smallest(trial: Trial, bound: int, tried: dict[int, int]) -> int | None:
    """The least count in 0..bound for which ``trial`` leaves nothing pending (None if none)."""

    async def passes(count: int) -> bool:
        if count not in tried:
            tried[count] = await trial(count)
        return tried[count] == 0

    if await passes(0):
        return 0
    failed, count = 0, 1
    while not await passes(count):
        if count >= bound:
            return None
        failed, count = count, min(2 * count, bound)
    while count - failed > 1:  # failed fails, count passes
        middle = (failed + count) // 2
        if await passes(middle):
            count = middle
        else:
            failed = middle
    return count
