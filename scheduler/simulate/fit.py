"""`--fit`: the smallest number of template nodes to add so that every pending pod is placed.

Each count is tried on the simulated cluster by the real scheduler (`Simulation.fit`); the
search assumes more nodes never place fewer pods. It starts from a guess (what the pending pods
request over what one template node offers, `resource_guess`), then gallops: up from a guess
that fails (doubling the step), down from one that passes, and a binary search between the
last failure and the least success; a good guess costs two runs. Zero nodes fail by
definition (the pods are pending). It stops at ``bound`` nodes (one new node per pending pod, or
``--fit-max``): if that many do not help, no count does, and the answer is "cannot fit" with
the reason of a pod left pending.
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


async def smallest(trial: Trial, bound: int, tried: dict[int, int], guess: int = 1) -> int | None:
    """The least count in 1..bound for which ``trial`` leaves nothing pending (None if none);
    0 is known to fail. ``tried`` records each count run and what it left pending."""

    async def passes(count: int) -> bool:
        if count not in tried:
            tried[count] = await trial(count)
        return tried[count] == 0

    if bound < 1:
        return None
    count = min(max(guess, 1), bound)
    failed, step = 0, 1
    if await passes(count):
        while count - step > failed and await passes(count - step):
            count, step = count - step, step * 2
        failed = max(failed, count - step)
    else:
        while True:
            failed = count
            if count >= bound:
                return None
            count = min(count + step, bound)
            step *= 2
            if await passes(count):
                break
    while count - failed > 1:  # failed fails, count passes
        middle = (failed + count) // 2
        if await passes(middle):
            count = middle
        else:
            failed = middle
    return count


def resource_guess(requests: list[dict[str, int]], allocatable: dict[str, int]) -> int:
    """How many nodes of ``allocatable`` the summed ``requests`` fill (at least 1)."""
    needed = 1
    for name, offered in allocatable.items():
        total = sum(r.get(name, 0) for r in requests)
        if offered > 0 and total > 0:
            needed = max(needed, -(-total // offered))
    return needed
