"""VolumeRestrictions: ReadWriteOncePod claims in use, and in-tree disk conflicts
(upstream volume_restrictions_test.go)."""

from __future__ import annotations

import pytest

from scheduler.api import Pod
from scheduler.framework import ActionType, Code, CycleState, QueueingHint, Status
from scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from scheduler.testing.builders import FakeHandle, make_node, make_pod, pod_dict, table_of
from scheduler.testing.storage import pvc, volume_pod, volume_pod_dict

CLAIMS = [pvc("solo", modes=("ReadWriteOncePod",)), pvc("shared", modes=("ReadWriteOnce",))]


def disk_pod(name: str, volume: dict, node_name: str = "", namespace: str = "default") -> Pod:
    obj = pod_dict(name, node_name=node_name, namespace=namespace)
    obj["spec"]["volumes"] = [{"name": "disk", **volume}]
    return Pod.from_dict(obj)


def run(pod: Pod, existing: list[Pod]) -> tuple[Status | None, Status | None]:
    cluster = table_of([make_node("n1"), make_node("n2")], existing)
    handle = FakeHandle(cluster, listers={"persistentvolumeclaims": CLAIMS})
    plugin = VolumeRestrictions(None, handle)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot)
    if status is not None:
        return status, None
    return None, plugin.filter(state, pod, cluster.info("n1"))


GCE = {"gcePersistentDisk": {"pdName": "disk-1"}}
GCE_RO = {"gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}}
EBS = {"awsElasticBlockStore": {"volumeID": "vol-1"}}
ISCSI = {"iscsi": {"iqn": "iqn.a", "targetPortal": "t", "lun": 0}}
RBD = {"rbd": {"monitors": ["m1", "m2"], "image": "img"}}
RBD_OTHER = {"rbd": {"monitors": ["m2", "m3"], "image": "img2"}}


@pytest.mark.parametrize(
    ("wanted", "existing", "conflict"),
    [
        (GCE, GCE, True),
        (GCE_RO, GCE_RO, False),
        (GCE_RO, GCE, True),
        (EBS, EBS, True),
        (ISCSI, ISCSI, True),
        (RBD, RBD, True),
        (RBD, RBD_OTHER, False),
    ],
    ids=[
        "one GCE disk mounted read-write twice",
        "one GCE disk mounted read-only by both",
        "a read-only mount next to a read-write one",
        "one EBS volume, whatever the mode",
        "one iSCSI target read-write twice",
        "one RBD image on a shared monitor",
        "different RBD images",
    ],
)
def test_in_tree_disks_conflict_as_upstream_says(wanted, existing, conflict):
    _, status = run(disk_pod("new", wanted), [disk_pod("old", existing, node_name="n1")])
    assert status == (Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,)) if conflict else None)


def test_a_read_write_once_pod_claim_in_use_anywhere_blocks_every_node():
    user = Pod.from_dict(volume_pod_dict("user", "solo", node_name="n2"))
    _, status = run(volume_pod("new", "solo"), [user])
    assert status == Status(Code.UNSCHEDULABLE, (ERR_REASON_RWOP_CONFLICT,))


def test_preemption_can_free_a_read_write_once_pod_claim():
    user = Pod.from_dict(volume_pod_dict("user", "solo", node_name="n1"))
    cluster = table_of([make_node("n1")], [user])
    handle = FakeHandle(cluster, listers={"persistentvolumeclaims": CLAIMS})
    plugin = VolumeRestrictions(None, handle)
    pod = volume_pod("new", "solo")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    info = cluster.info("n1")
    plugin.remove_pod(state, pod, user, info)
    assert plugin.filter(state, pod, info) is None
    plugin.add_pod(state, pod, user, info)
    assert plugin.filter(state, pod, info) is not None


@pytest.mark.parametrize(
    "pod",
    [make_pod("plain"), volume_pod("p", "shared"), volume_pod("p", "solo")],
    ids=["no volumes", "a ReadWriteOnce claim", "a ReadWriteOncePod claim nobody uses"],
)
def test_pre_filter_skips_when_nothing_can_conflict(pod):
    status, _ = run(pod, [])
    assert status is not None and status.is_skip


def test_a_missing_claim_is_unresolvable():
    status, _ = run(volume_pod("p", "nope"), [])
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "nope" not found',))


def test_the_read_write_once_pod_conflict_reads_as_upstream():
    assert ERR_REASON_RWOP_CONFLICT == (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod"
    )


def test_the_first_missing_claim_in_the_pods_order_is_reported():
    status, _ = run(volume_pod("p", "zz-missing", "aa-missing"), [])
    assert status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "zz-missing" not found',)
    )


def test_preemption_counts_a_pods_volumes_naming_the_claim_by_name_alone_as_upstream():
    """Upstream keeps the pod's ReadWriteOncePod claims by name and counts, per added or removed
    pod, each volume naming one (in any namespace)."""
    user = Pod.from_dict(volume_pod_dict("user", "solo", node_name="n1"))
    cluster = table_of([make_node("n1")], [user])
    handle = FakeHandle(cluster, listers={"persistentvolumeclaims": CLAIMS})
    plugin = VolumeRestrictions(None, handle)
    pod = volume_pod("new", "solo")
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot)
    info = cluster.info("n1")
    twice = Pod.from_dict(volume_pod_dict("twice", "solo", "solo", namespace="other"))
    plugin.add_pod(state, pod, twice, info)  # 1 + 2
    plugin.remove_pod(state, pod, user, info)
    plugin.remove_pod(state, pod, user, info)
    assert plugin.filter(state, pod, info) is not None  # 3 - 2 conflicts left
    plugin.remove_pod(state, pod, user, info)
    assert plugin.filter(state, pod, info) is None


def test_rbd_pools_compare_as_written_so_an_unset_pool_is_not_rbd():
    ours = {"rbd": {"monitors": ["m1"], "image": "img", "pool": "rbd"}}
    _, status = run(disk_pod("new", ours), [disk_pod("old", RBD, node_name="n1")])
    assert status is None


@pytest.mark.parametrize(
    ("namespace", "hint"),
    [("default", QueueingHint.QUEUE), ("other", QueueingHint.SKIP)],
    ids=["a deleted pod with the same disk queues", "one of another namespace does not, as upstream"],
)
def test_a_pod_deletion_queues_only_pods_of_its_namespace(namespace, hint):
    plugin = VolumeRestrictions(None, None)
    pod_deleted = next(e.hint for e in plugin.events_to_register() if e.event.resource == "Pod")
    assert pod_deleted is not None
    assert pod_deleted(disk_pod("new", GCE), disk_pod("old", GCE, "n1", namespace), None) == hint


def test_only_node_additions_requeue_as_upstream_with_queueing_hints():
    [node_event] = [
        e.event for e in VolumeRestrictions(None, None).events_to_register() if e.event.resource == "Node"
    ]
    assert node_event.action == ActionType.ADD
