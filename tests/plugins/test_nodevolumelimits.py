"""NodeVolumeLimits (CSI): unique attached volumes per driver against CSINode limits
(upstream csi_test.go)."""

from __future__ import annotations

import pytest
from builders import FakeHandle, make_node, make_pod, table_of
from volume_builders import csi_node, pv, pvc, storage_class, volume_pod, volume_pod_dict

from scheduler.api import Pod
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits

DRIVER, OTHER = "ebs.csi.example.com", "gce.csi.example.com"
VOLUMES = [pv(f"pv-{i}", csi=(DRIVER, f"h{i}"), claim=("default", f"c{i}")) for i in range(4)]
VOLUMES.append(pv("pv-other", csi=(OTHER, "o1"), claim=("default", "c-other")))
VOLUMES.append(pv("pv-local", claim=("default", "c-local")))
CLAIMS = [pvc(f"c{i}", volume_name=f"pv-{i}", bound=True) for i in range(4)]
CLAIMS += [
    pvc("c-other", volume_name="pv-other", bound=True),
    pvc("c-local", volume_name="pv-local", bound=True),
    pvc("c-unbound", storage_class="ebs"),
    pvc("c-unbound-2", storage_class="ebs"),
]
EXCEEDED = Status(Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))


def on_node(name: str, *claims: str) -> Pod:
    return Pod.from_dict(volume_pod_dict(name, *claims, node_name="n1"))


def run(pod: Pod, existing: list[Pod], limits: dict[str, int | None] | None) -> Status | None:
    cluster = table_of([make_node("n1")], existing)
    listers = {
        "persistentvolumes": VOLUMES,
        "persistentvolumeclaims": CLAIMS,
        "storageclasses": [storage_class("ebs", provisioner=DRIVER)],
        "csinodes": [csi_node("n1", limits)] if limits is not None else [],
    }
    handle = FakeHandle(cluster, listers=listers)
    plugin = NodeVolumeLimits(None, handle)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot)
    if status is not None:
        return status
    return plugin.filter(state, pod, cluster.info("n1"))


@pytest.mark.parametrize(
    ("pod", "existing", "limits", "expected"),
    [
        (volume_pod("p", "c2"), [on_node("a", "c0"), on_node("b", "c1")], {DRIVER: 2}, EXCEEDED),
        (volume_pod("p", "c1"), [on_node("a", "c0")], {DRIVER: 2}, None),
        (volume_pod("p", "c0"), [on_node("a", "c0"), on_node("b", "c1")], {DRIVER: 2}, None),
        (volume_pod("p", "c-other"), [on_node("a", "c0"), on_node("b", "c1")], {DRIVER: 2, OTHER: 1}, None),
        (volume_pod("p", "c2"), [on_node("a", "c0"), on_node("b", "c1")], {DRIVER: None}, None),
        (volume_pod("p", "c2"), [on_node("a", "c0"), on_node("b", "c1")], None, None),
        (volume_pod("p", "c-unbound"), [on_node("a", "c0")], {DRIVER: 1}, EXCEEDED),
        (volume_pod("p", "c-unbound", "c-unbound-2"), [], {DRIVER: 2}, None),
        (volume_pod("p", "c-local"), [on_node("a", "c0")], {DRIVER: 1}, None),
        (volume_pod("p", "c1", "c2"), [], {DRIVER: 1}, EXCEEDED),
    ],
    ids=[
        "a third volume over a limit of two",
        "a second volume within a limit of two",
        "a volume already attached for another pod counts once",
        "limits are per driver",
        "a driver without an allocatable count has no limit",
        "a node without a CSINode has no limit",
        "an unbound claim counts against its class's provisioner",
        "two unbound claims are two volumes",
        "a non-CSI volume does not count",
        "the pod's own volumes add up",
    ],
)
def test_filter_counts_unique_csi_volumes_per_driver(pod, existing, limits, expected):
    assert run(pod, existing, limits) == expected


def test_pods_without_claim_or_csi_volumes_skip():
    status = run(make_pod("plain"), [], {DRIVER: 0})
    assert status is not None and status.is_skip


def test_a_missing_claim_of_the_new_pod_is_unresolvable():
    status = run(volume_pod("p", "ghost"), [], {DRIVER: 5})
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "ghost" not found',))
