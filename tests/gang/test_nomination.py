"""NominatedNodeNameForExpectation for gang members: as upstream, a member that waited at Permit
has its node written as status.nominatedNodeName before it is bound, even when the gang was
complete (and the member allowed) before its binding cycle began; a member never held there,
with no PreBind work, is bound without that write."""

from __future__ import annotations

from typing import Any

from tests.support.cluster import eventually, pod_manifest
from tests.support.gang import NewCluster, StartScheduler, member, node_of, pod_group


async def test_members_that_waited_at_permit_are_nominated_before_binding(
    new_cluster: NewCluster, start_scheduler: StartScheduler
) -> None:
    sim = await new_cluster(nodes=3, bookmark_interval=0.5)
    nominations: dict[str, set[str]] = {}

    def record(resource: str, event: Any) -> None:
        if resource != "pods":
            return
        nominated = event.obj.get("status", {}).get("nominatedNodeName")
        if nominated:
            nominations.setdefault(event.obj["metadata"]["name"], set()).add(nominated)

    sim.api.store.listeners.append(record)
    await start_scheduler(sim)
    await sim.create("podgroups", pod_group("job", 3))
    names = [f"job-{i}" for i in range(3)]
    for name in names:
        await sim.create("pods", member(name, "job", cpu="1"))
    await sim.create("pods", pod_manifest("solo", cpu="1"))
    await eventually(lambda: all(node_of(sim, name) for name in [*names, "solo"]))

    # The members before the last were held at Permit ("waiting for quorum"); the last, which
    # completed the gang, was permitted at once.
    assert len(nominations.keys() & set(names)) == len(names) - 1, nominations
    for name in nominations:
        assert nominations[name] == {node_of(sim, name)}
    assert "solo" not in nominations
