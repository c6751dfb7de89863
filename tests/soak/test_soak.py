"""Nothing lost under faults: bench/soak.py's scenario, scaled down to fit CI (~20 s).

The real scheduler process reaches the local endpoint through a proxy that resets every
connection every 3 s; it is killed with SIGKILL and restarted, the endpoint restarts (watch
history gone), the network is blackholed for less than the renew deadline. 300 pods of 1 cpu on
30 nodes of 8 cpu: exactly 240 fit.
"""

from __future__ import annotations

import pytest

from bench.soak import soak

pytestmark = [pytest.mark.soak, pytest.mark.slow]


async def test_every_pod_is_bound_once_or_reported_and_the_scheduler_keeps_leading() -> None:
    outcome = await soak(nodes=30, pods=300, cut_every=3.0, deadline=60.0)
    report = outcome.describe()
    assert outcome.bound == 240, report
    assert outcome.reported == 60, report
    assert outcome.lost == [], report
    assert outcome.overcommitted == {}, report
    assert outcome.scheduler_alive, report
    assert outcome.leader.startswith("soak-1_"), report  # the restarted scheduler leads to the end
    assert not outcome.lost_leadership, report
