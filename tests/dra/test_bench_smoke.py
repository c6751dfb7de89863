"""bench.dra, tiny: every pod gets a device of its own (no timing is asserted)."""

from __future__ import annotations

from bench.dra import run


async def test_every_claim_gets_a_device_of_its_own() -> None:
    result, claims = await run(nodes=10, devices=4, pods=40)
    assert result.bound == 40
    devices = [
        (r["pool"], r["device"]) for c in claims for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(devices) == len(set(devices)) == 40
    assert all(len(c["status"]["reservedFor"]) == 1 for c in claims)


async def test_every_pod_asking_for_the_extended_resource_gets_a_device_of_its_own() -> None:
    result, claims = await run(nodes=10, devices=4, pods=40, extended=True)
    assert result.bound == 40 and len(claims) == 40
    devices = [
        (r["pool"], r["device"]) for c in claims for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(devices) == len(set(devices)) == 40
    assert all(c["metadata"]["name"].startswith(c["metadata"]["ownerReferences"][0]["name"]) for c in claims)


async def test_every_pod_gets_a_half_of_a_partitioned_gpu_of_its_own() -> None:
    result, claims = await run(nodes=10, devices=2, pods=40, partitioned=True)
    assert result.bound == 40
    devices = [
        (r["pool"], r["device"]) for c in claims for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(set(devices)) == 40 and all(d.endswith(("-half-a", "-half-b")) for _, d in devices)
