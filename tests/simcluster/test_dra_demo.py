"""`pyscheduler demo` end to end: the GPU pods' claims, made from their template by the local
endpoint's claim controller, are allocated the two halves of one partitioned GPU of the simulated
driver by the scheduler."""

from __future__ import annotations

import re

import pytest

from scheduler.cmd.demo import run_demo


async def test_the_demo_places_the_web_pods_and_shares_a_partitioned_gpu_between_two_pods(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await run_demo(replicas=4, timeout=30) == 0
    out = capsys.readouterr().out
    assert "with 11 simulated nodes" in out
    assert len(re.findall(r"^web-\S+\s+\S+\s+zone-\w\s+Running\s+pyscheduler$", out, re.MULTILINE)) == 4
    assert "pod default/too-big is pending:" in out
    for pod, half in (("trainer-a", "half-a"), ("trainer-b", "half-b")):
        assert re.search(
            rf"^pod default/{pod} runs on dra-gpu-0000; claim {pod}-gpu-[a-z0-9]{{5}}:\n"
            rf"  allocated gpu\.example\.com/dra-gpu-0000/gpu-0-{half}, reserved for {pod}$",
            out,
            re.MULTILINE,
        ), out
    # the two halves of one card: its counter set shared by both pods
    assert (
        "GPU gpu-0 of dra-gpu-0000 is shared, its 40Gi split between trainer-a (gpu-0-half-a) and "
        "trainer-b (gpu-0-half-b)"
    ) in out
