"""VolumeZone: bound PVs' zone/region labels against node labels (upstream volume_zone_test.go)."""

from __future__ import annotations

import pytest

from scheduler.framework import ActionType, Code, CycleState, QueueingHint, Status
from scheduler.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone, pv_topologies
from scheduler.testing.builders import FakeHandle, make_node, make_pod, table_of
from scheduler.testing.storage import pv, pvc, storage_class, volume_pod

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"

NODES = [
    make_node("in-a", labels={ZONE: "zone-a", REGION: "r1"}),
    make_node("in-b", labels={ZONE: "zone-b", REGION: "r1"}),
    make_node("beta-a", labels={BETA_ZONE: "zone-a"}),
    make_node("unlabelled"),
]
VOLUMES = [
    pv("pv-a", labels={ZONE: "zone-a"}),
    pv("pv-ab", labels={ZONE: "zone-a__zone-b"}),
    pv("pv-beta", labels={BETA_ZONE: "zone-b"}),
    pv("pv-r2", labels={REGION: "r2"}),
    pv("pv-plain"),
]
CLAIMS = [
    pvc(f"claim-{v['metadata']['name']}", volume_name=v["metadata"]["name"], bound=True) for v in VOLUMES
]
CLAIMS += [
    pvc("late", storage_class="wffc"),
    pvc("soon", storage_class="immediate"),
    pvc("classless", storage_class=None),
    pvc("orphan", volume_name="missing", bound=True),
]
CLASSES = [storage_class("wffc"), storage_class("immediate", mode="Immediate")]


def make_plugin() -> tuple[VolumeZone, FakeHandle]:
    listers = {"persistentvolumes": VOLUMES, "persistentvolumeclaims": CLAIMS, "storageclasses": CLASSES}
    handle = FakeHandle(table_of(NODES), listers=listers)
    return VolumeZone(None, handle), handle


OK = None
NO_ZONE = ERR_REASON_CONFLICT


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        (("claim-pv-a",), {"in-a": OK, "in-b": NO_ZONE, "beta-a": NO_ZONE, "unlabelled": OK}),
        (("claim-pv-ab",), {"in-a": OK, "in-b": OK, "beta-a": NO_ZONE, "unlabelled": OK}),
        (("claim-pv-beta",), {"in-a": NO_ZONE, "in-b": OK, "beta-a": NO_ZONE, "unlabelled": OK}),
        (("claim-pv-r2",), {"in-a": NO_ZONE, "in-b": NO_ZONE, "beta-a": NO_ZONE, "unlabelled": OK}),
        (("claim-pv-a", "claim-pv-ab"), {"in-a": OK, "in-b": NO_ZONE, "beta-a": NO_ZONE, "unlabelled": OK}),
    ],
    ids=[
        "a zonal volume keeps the pod in its zone (a GA label does not match a beta-only node)",
        "a volume in several zones accepts any of them",
        "a beta-labelled volume matches the GA label of a node",
        "a region label must match as well",
        "every volume of the pod must fit the node",
    ],
)
def test_filter_matches_volume_topology_against_node_labels(claims, expected):
    plugin, handle = make_plugin()
    pod = volume_pod("p", *claims)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot)
    assert status is None
    got = {info.name: plugin.filter(state, pod, info) for info in handle.snapshot.node_infos()}
    assert {name: s.reasons[0] if s else None for name, s in got.items()} == expected
    assert all(s is None or s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE for s in got.values())


@pytest.mark.parametrize(
    "pod",
    [make_pod("plain"), volume_pod("p", "claim-pv-plain"), volume_pod("p", "late")],
    ids=[
        "a pod without volumes",
        "a volume without topology labels",
        "an unbound WaitForFirstConsumer claim",
    ],
)
def test_pre_filter_skips_pods_with_nothing_to_check(pod):
    plugin, handle = make_plugin()
    _, status = plugin.pre_filter(CycleState(), pod, handle.snapshot)
    assert status is not None and status.is_skip


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ("nowhere", 'persistentvolumeclaim "nowhere" not found'),
        ("soon", "PersistentVolume had no name"),
        ("classless", "PersistentVolumeClaim had no pv name and storageClass name"),
        ("orphan", 'persistentvolume "missing" not found'),
    ],
    ids=[
        "a missing claim",
        "an unbound claim of an Immediate class",
        "an unbound claim without a class",
        "a claim bound to a missing volume",
    ],
)
def test_pre_filter_reports_unusable_claims_as_unresolvable(claim, message):
    plugin, handle = make_plugin()
    _, status = plugin.pre_filter(CycleState(), volume_pod("p", claim), handle.snapshot)
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def test_only_a_topology_change_of_a_volume_queues_the_pod():
    plugin, _ = make_plugin()
    hint = next(e.hint for e in plugin.events_to_register() if e.event.resource == "PersistentVolume")
    assert hint is not None
    pod = volume_pod("p", "claim-pv-a")
    assert hint(pod, pv("x", labels={ZONE: "a"}), pv("x", labels={ZONE: "b"})) == QueueingHint.QUEUE
    assert (
        hint(pod, pv("x", labels={ZONE: "a"}), pv("x", labels={ZONE: "a", "other": "1"})) == QueueingHint.SKIP
    )
    assert hint(pod, None, pv("x")) == QueueingHint.QUEUE


def test_an_empty_zone_label_on_a_volume_constrains_nothing():
    volume = pv("blank")
    volume["metadata"]["labels"] = {"topology.kubernetes.io/zone": "", "topology.kubernetes.io/region": "r1"}
    assert [(t.key, t.values) for t in pv_topologies(volume)] == [("topology.kubernetes.io/region", {"r1"})]


@pytest.mark.parametrize("value", ["zone-a__", "zone-a____zone-b", " __zone-b"])
def test_a_zone_label_with_an_empty_element_is_ignored_entirely_as_upstream_fails_to_parse_it(value):
    volume = pv("odd", labels={ZONE: value, REGION: "r1"})
    assert [(t.key, t.values) for t in pv_topologies(volume)] == [(REGION, {"r1"})]


def test_zone_list_elements_are_trimmed():
    volume = pv("spaced", labels={ZONE: " zone-a __ zone-b "})
    assert [t.values for t in pv_topologies(volume)] == [{"zone-a", "zone-b"}]


def test_node_taint_changes_do_not_requeue_as_upstream_with_queueing_hints():
    plugin, _ = make_plugin()
    [node_event] = [e.event for e in plugin.events_to_register() if e.event.resource == "Node"]
    assert node_event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
