"""bench.gang runs end to end on a small cluster (its figures are for bench/, not asserted)."""

from __future__ import annotations

import pytest

from bench import gang
from scheduler.config import default_config


async def test_the_gang_benchmark_binds_every_gang(capsys: pytest.CaptureFixture[str]) -> None:
    figures, arrivals = await gang.run(20, 2, 5, default_config(features=gang.GATES))
    assert figures.pods == 10 and len(figures.latencies) == 2 and len(arrivals) == 2
    assert figures.pods_per_s > 0 and figures.percentile_ms(0.99) == max(figures.latencies) * 1000
    assert "were bound" not in capsys.readouterr().out  # bench.gang says when pods were left over
