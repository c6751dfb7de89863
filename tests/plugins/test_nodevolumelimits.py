"""NodeVolumeLimits (CSI): unique attached volumes per driver against CSINode limits
(upstream csi_test.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api import Pod
from scheduler.framework import ActionType, ClusterEvent, Code, CycleState, QueueingHint, Status
from scheduler.framework.interface import CSI_NODE, VOLUME_ATTACHMENT
from scheduler.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.testing.builders import FakeHandle, make_node, make_pod, table_of
from scheduler.testing.storage import csi_node, pv, pvc, storage_class, volume_pod, volume_pod_dict

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


def run(
    pod: Pod,
    existing: list[Pod],
    limits: dict[str, int | None] | None,
    attachments: Sequence[dict[str, Any]] = (),
) -> Status | None:
    cluster = table_of([make_node("n1")], existing)
    listers = {
        "persistentvolumes": VOLUMES,
        "persistentvolumeclaims": CLAIMS,
        "storageclasses": [storage_class("ebs", provisioner=DRIVER)],
        "csinodes": [csi_node("n1", limits)] if limits is not None else [],
        "volumeattachments": list(attachments),
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


def test_a_missing_claim_of_the_new_pod_is_unresolvable_with_upstreams_wrapped_message():
    status = run(volume_pod("p", "ghost"), [], {DRIVER: 5})
    assert status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ('looking up PVC default/ghost: persistentvolumeclaim "ghost" not found',),
    )


EBS = "ebs.csi.aws.com"
IN_TREE_VOLUMES = [
    {**pv("pv-ebs", claim=("default", "c-ebs")), "spec": {"awsElasticBlockStore": {"volumeID": "vol-1"}}},
    {**pv("pv-file", claim=("default", "c-file")), "spec": {"azureFile": {"shareName": "s"}}},
]
IN_TREE_CLAIMS = [
    pvc("c-ebs", volume_name="pv-ebs", bound=True),
    pvc("c-file", volume_name="pv-file", bound=True),
    pvc("c-gp2", storage_class="gp2"),
]


def in_tree_run(pod: Pod, existing: list[Pod], limits: dict[str, int | None] | None) -> Status | None:
    cluster = table_of([make_node("n1")], existing)
    listers = {
        "persistentvolumes": IN_TREE_VOLUMES,
        "persistentvolumeclaims": IN_TREE_CLAIMS,
        "storageclasses": [storage_class("gp2", provisioner="kubernetes.io/aws-ebs")],
        "csinodes": [csi_node("n1", limits)] if limits is not None else [],
    }
    handle = FakeHandle(cluster, listers=listers)
    plugin = NodeVolumeLimits(None, handle)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot)
    if status is not None:
        return status
    return plugin.filter(state, pod, cluster.info("n1"))


def inline_pod(name: str, volume: dict, node_name: str = "") -> Pod:
    return Pod.from_dict(
        volume_pod_dict(name, extra_volumes=[{"name": "disk", **volume}], node_name=node_name)
    )


EBS_INLINE = {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}}
EBS_INLINE_2 = {"awsElasticBlockStore": {"volumeID": "vol-2"}}


@pytest.mark.parametrize(
    ("pod", "existing", "expected"),
    [
        (inline_pod("p", EBS_INLINE_2), [inline_pod("a", EBS_INLINE, "n1")], EXCEEDED),
        (inline_pod("p", EBS_INLINE), [on_node("a", "c-ebs")], None),
        (volume_pod("p", "c-gp2"), [on_node("a", "c-ebs")], EXCEEDED),
        (volume_pod("p", "c-file"), [on_node("a", "c-ebs")], None),
    ],
    ids=[
        "an inline EBS volume counts against the EBS CSI driver",
        "an in-tree PV and an inline volume of one disk count once (aws:// ids translate to the bare id)",
        "a claim of an in-tree provisioner's class counts against its CSI driver",
        "Azure File volumes are not counted, as upstream's migration check leaves them out",
    ],
)
def test_in_tree_volumes_count_against_their_csi_driver_once_the_node_has_a_csinode(pod, existing, expected):
    assert in_tree_run(pod, existing, {EBS: 1}) == expected


def test_in_tree_volumes_count_nothing_on_a_node_without_a_csinode():
    assert in_tree_run(inline_pod("p", EBS_INLINE_2), [inline_pod("a", EBS_INLINE, "n1")], None) is None


def test_an_inline_azure_disk_of_a_kind_migration_refuses_is_an_internal_error():
    shared = {"azureDisk": {"diskName": "d", "diskURI": "uri", "kind": "Shared"}}
    status = in_tree_run(inline_pod("p", shared), [], {"disk.csi.azure.com": 1})
    assert status == Status(
        Code.ERROR,
        ("converting volume(disk) from inline to csi: kind(Shared) is not supported in csi migration",),
    )


@pytest.mark.parametrize(
    ("volume", "skipped"),
    [
        ({"csi": {"driver": DRIVER}}, True),
        ({"emptyDir": {}}, True),
        ({"azureFile": {"shareName": "s"}}, False),
        (EBS_INLINE, False),
    ],
    ids=[
        "an inline CSI volume alone skips",
        "an emptyDir skips",
        "any migratable in-tree volume does not skip",
        "an inline EBS volume does not skip",
    ],
)
def test_pre_filter_skips_unless_a_claim_or_a_migratable_in_tree_volume(volume, skipped):
    status = in_tree_run(inline_pod("p", volume), [], {EBS: 5})
    assert (status is not None and status.is_skip) is skipped


def test_a_claim_without_a_name_is_an_internal_error():
    nameless = Pod.from_dict(volume_pod_dict("p", ""))
    assert in_tree_run(nameless, [], {EBS: 1}) == Status(Code.ERROR, ("PersistentVolumeClaim had no name",))


def test_an_ephemeral_claim_the_pod_does_not_own_is_an_internal_error():
    pod = Pod.from_dict(volume_pod_dict("p", extra_volumes=[{"name": "scratch", "ephemeral": {}}]))
    stray = pvc("p-scratch", storage_class="gp2")
    cluster = table_of([make_node("n1")], [])
    handle = FakeHandle(
        cluster, listers={"persistentvolumeclaims": [stray], "csinodes": [csi_node("n1", {EBS: 1})]}
    )
    status = NodeVolumeLimits(None, handle).filter(CycleState(), pod, cluster.info("n1"))
    assert status == Status(
        Code.ERROR, ("PVC default/p-scratch was not created for pod default/p (pod is not owner)",)
    )


@pytest.mark.parametrize(
    ("before", "after", "hint"),
    [
        ({EBS: 1}, {EBS: 2}, QueueingHint.QUEUE),
        ({EBS: 2}, {EBS: 1}, QueueingHint.SKIP),
        ({EBS: None}, {EBS: 1}, QueueingHint.QUEUE),
        ({}, {EBS: 1}, QueueingHint.QUEUE),
        ({EBS: 1}, {EBS: 1, DRIVER: None}, QueueingHint.SKIP),
    ],
    ids=[
        "a limit that grew queues",
        "a limit that shrank does not",
        "a count that appeared queues",
        "a new driver with a count queues",
        "a new driver without a count does not",
    ],
)
def test_a_csinode_update_queues_only_when_a_driver_limit_grew(before, after, hint):
    plugin = NodeVolumeLimits(None, None)
    [update] = [
        e.hint for e in plugin.events_to_register() if e.event == ClusterEvent(CSI_NODE, ActionType.UPDATE)
    ]
    assert update is not None
    assert update(make_pod("p"), csi_node("n1", before), csi_node("n1", after)) == hint


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        (on_node("a", "c0"), QueueingHint.QUEUE),
        (
            Pod.from_dict({**volume_pod_dict("a", "c0"), "status": {"nominatedNodeName": "n1"}}),
            QueueingHint.QUEUE,
        ),
        (volume_pod("a", "c0"), QueueingHint.SKIP),
        (inline_pod("a", EBS_INLINE, "n1"), QueueingHint.QUEUE),
        (inline_pod("a", {"csi": {"driver": DRIVER}}, "n1"), QueueingHint.SKIP),
    ],
    ids=[
        "a bound pod with a claim queues",
        "a nominated pod with a claim queues",
        "a pod neither bound nor nominated does not",
        "a pod with an inline in-tree volume queues",
        "a pod with only an inline CSI volume does not",
    ],
)
def test_a_pod_deletion_queues_as_upstream(deleted, hint):
    plugin = NodeVolumeLimits(None, None)
    [deletion] = [e.hint for e in plugin.events_to_register() if e.event.resource == "Pod"]
    assert deletion is not None
    assert deletion(volume_pod("p", "c1"), deleted, None) == hint


GCE = "pd.csi.storage.gke.io"


@pytest.mark.parametrize(
    ("zones", "expected"),
    [
        ("us-central1-a", EXCEEDED),
        ("us-central1-a__us-central1-b", EXCEEDED),
        ("us-central1-a__europe-west1-b", None),
        ("", None),
    ],
    ids=[
        "a zonal PV's handle names its zone, so the same disk inline counts again",
        "a regional PV counts under its region",
        "a PV whose zones span two regions cannot be translated and is not counted",
        "a PV without zones has the inline disk's handle and counts once",
    ],
)
def test_gce_pv_handles_follow_the_translation_of_their_zone_labels(zones, expected):
    labels = {"topology.kubernetes.io/zone": zones} if zones else {}
    disk = {
        **pv("pv-gce", claim=("default", "c-gce"), labels=labels),
        "spec": {"gcePersistentDisk": {"pdName": "d1"}},
    }
    cluster = table_of([make_node("n1")], [inline_pod("a", {"gcePersistentDisk": {"pdName": "d1"}}, "n1")])
    listers = {
        "persistentvolumes": [disk],
        "persistentvolumeclaims": [pvc("c-gce", volume_name="pv-gce", bound=True)],
        "csinodes": [csi_node("n1", {GCE: 1})],
    }
    handle = FakeHandle(cluster, listers=listers)
    status = NodeVolumeLimits(None, handle).filter(CycleState(), volume_pod("p", "c-gce"), cluster.info("n1"))
    assert status == expected


def attachment(pv_name: str, node: str = "n1", attacher: str = DRIVER) -> dict[str, Any]:
    """A VolumeAttachment of a PV to a node."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": f"va-{pv_name}-{node}"},
        "spec": {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": pv_name}},
    }


@pytest.mark.parametrize(
    ("pod", "existing", "attachments", "expected"),
    [
        (volume_pod("p", "c1"), [], [attachment("pv-0")], EXCEEDED),
        (volume_pod("p", "c1"), [on_node("a", "c0")], [attachment("pv-0")], None),
        (volume_pod("p", "c0"), [], [attachment("pv-0")], EXCEEDED),
        (volume_pod("p", "c1"), [], [attachment("pv-0", node="n2")], None),
        (volume_pod("p", "c1"), [], [attachment("pv-local")], None),
        (volume_pod("p", "c1"), [], [attachment("pv-0", attacher="")], None),
    ],
    ids=[
        "a volume still attached with no pod there counts as attached",
        "an attachment a pod there counts already is not counted again",
        "the pod's own volume still attached counts twice, as upstream",
        "attachments to other nodes do not count",
        "attachments of non-CSI volumes do not count",
        "an attachment without an attacher does not count",
    ],
)
def test_volume_attachments_on_the_node_count_as_attached(pod, existing, attachments, expected):
    limit = {DRIVER: 2} if existing else {DRIVER: 1}
    assert run(pod, existing, limit, attachments) == expected


@pytest.mark.parametrize(
    ("pod", "hint"),
    [
        (volume_pod("p", "c1"), QueueingHint.QUEUE),
        (inline_pod("p", EBS_INLINE), QueueingHint.QUEUE),
        (inline_pod("p", {"gcePersistentDisk": {"pdName": "d"}}), QueueingHint.SKIP),
        (inline_pod("p", {"awsElasticBlockStore": {"volumeID": "aws://zone/bad/id"}}), QueueingHint.QUEUE),
        (make_pod("p"), QueueingHint.SKIP),
    ],
    ids=[
        "a pod with a claim queues",
        "a pod with an inline volume of the attacher's driver queues",
        "a pod with an inline volume of another driver does not",
        "a pod with an inline volume that cannot be translated queues",
        "a pod without volumes does not",
    ],
)
def test_a_volume_attachment_deletion_queues_as_upstream(pod, hint):
    plugin = NodeVolumeLimits(None, None)
    [deleted] = [e.hint for e in plugin.events_to_register() if e.event.resource == VOLUME_ATTACHMENT]
    assert deleted is not None
    assert deleted(pod, attachment("pv-0", attacher=EBS), None) == hint
