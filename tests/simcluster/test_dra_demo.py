"""`pyscheduler demo` end to end: the GPU pod's claim, made from its template by the local
endpoint's claim controller, is allocated a device of the simulated driver by the scheduler."""

from __future__ import annotations

import re

import pytest

from scheduler.demo import run_demo


async def test_the_demo_places_the_web_pods_and_allocates_the_gpu_pods_claim(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await run_demo(replicas=4, timeout=30) == 0
    out = capsys.readouterr().out
    assert "with 11 simulated nodes" in out
    assert len(re.findall(r"^web-\S+\s+\S+\s+zone-\w\s+Running\s+pyscheduler$", out, re.MULTILINE)) == 4
    assert "pod default/too-big is pending:" in out
    assert re.search(
        r"^pod default/trainer runs on dra-gpu-0000; claim trainer-gpu-[a-z0-9]{5}:\n"
        r"  allocated gpu\.example\.com/dra-gpu-0000/gpu-[0-7], reserved for trainer$",
        out,
        re.MULTILINE,
    ), out
