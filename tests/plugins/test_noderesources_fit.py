from __future__ import annotations

import pytest

from scheduler.api import Pod
from scheduler.config.args import (
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler.dra.shared import shared_dra
from scheduler.framework import ActionType, Code, CycleState, QueueingHint
from scheduler.framework.interface import DEVICE_CLASS, NODE, POD
from scheduler.plugins.noderesources import Fit
from scheduler.testing import dra
from scheduler.testing.builders import (
    FakeHandle,
    FakeLister,
    make_node,
    make_pod,
    per_node_and_batch_filter,
    per_node_and_batch_score,
    pod_dict,
    table_of,
)

GPU = "example.com/gpu"


def run_filter(plugin: Fit, pod_kwargs: dict, nodes: list, pods: list = ()) -> list:
    pod = make_pod("incoming", **pod_kwargs)
    state = CycleState()
    result, status = plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    assert (result, status) == (None, None)
    per_node, batch = per_node_and_batch_filter(plugin, state, pod, table_of(nodes, pods))
    assert per_node == batch, "the batch and per-node forms disagree"
    return per_node


BUSY = [make_pod("existing", node_name="n", requests={"cpu": "3500m", "memory": "6Gi"})]


@pytest.mark.parametrize(
    ("case", "pod_kwargs", "node_kwargs", "existing", "code", "reasons"),
    [
        ("a pod that fits passes", {"requests": {"cpu": "1", "memory": "1Gi"}}, {}, [], None, ()),
        ("a pod without requests fits a full node", {}, {}, BUSY, None, ()),
        (
            "too little free cpu is unschedulable",
            {"requests": {"cpu": "1"}},
            {},
            BUSY,
            Code.UNSCHEDULABLE,
            ("Insufficient cpu",),
        ),
        (
            "a request above the node's allocatable is unresolvable",
            {"requests": {"cpu": "5"}},
            {},
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient cpu",),
        ),
        (
            "several shortages are all reported in upstream's order",
            {"requests": {"cpu": "1", "memory": "3Gi"}},
            {},
            BUSY,
            Code.UNSCHEDULABLE,
            ("Insufficient cpu", "Insufficient memory"),
        ),
        (
            "a full pod count rejects even an empty pod",
            {},
            {"pods": 1},
            [make_pod("existing", node_name="n")],
            Code.UNSCHEDULABLE,
            ("Too many pods",),
        ),
        (
            "ephemeral storage is checked",
            {"requests": {"ephemeral-storage": "20Gi"}},
            {"ephemeral_storage": "10Gi"},
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient ephemeral-storage",),
        ),
        (
            "an extended resource missing on the node is unresolvable",
            {"requests": {GPU: "1"}},
            {},
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (f"Insufficient {GPU}",),
        ),
        (
            "an extended resource in use is unschedulable",
            {"requests": {GPU: "1"}},
            {"extra": {GPU: 1}},
            [make_pod("existing", node_name="n", requests={GPU: "1"})],
            Code.UNSCHEDULABLE,
            (f"Insufficient {GPU}",),
        ),
        (
            "the larger of init and regular containers counts",
            {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "init_containers": [{"name": "i", "resources": {"requests": {"cpu": "4500m"}}}],
            },
            {},
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient cpu",),
        ),
        (
            "pod overhead counts",
            {"requests": {"cpu": "3900m"}, "overhead": {"cpu": "200m"}},
            {},
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient cpu",),
        ),
    ],
)
def test_filter(
    case: str, pod_kwargs: dict, node_kwargs: dict, existing: list, code: Code | None, reasons: tuple
) -> None:
    (status,) = run_filter(Fit(), pod_kwargs, [make_node("n", **node_kwargs)], existing)
    if code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, reasons)


@pytest.mark.parametrize(
    ("case", "args"),
    [
        ("an ignored extended resource is not checked", NodeResourcesFitArgs(ignored_resources=[GPU])),
        (
            "an ignored resource group is not checked",
            NodeResourcesFitArgs(ignored_resource_groups=["example.com"]),
        ),
    ],
)
def test_ignored_resources(case: str, args: NodeResourcesFitArgs) -> None:
    assert run_filter(Fit(args), {"requests": {GPU: "1"}}, [make_node("n")]) == [None]


def test_hugepages_are_not_extended_resources_so_groups_cannot_ignore_them() -> None:
    args = NodeResourcesFitArgs(ignored_resource_groups=["hugepages-2Mi"])
    (status,) = run_filter(
        Fit(args), {"requests": {"hugepages-2Mi": "4Mi", "memory": "4Mi"}}, [make_node("n")]
    )
    assert status is not None and status.reasons == ("Insufficient hugepages-2Mi",)


def test_batch_filter_gives_each_node_its_own_reasons() -> None:
    nodes = [
        make_node("roomy", cpu="8", memory="16Gi"),
        make_node("tight-cpu", cpu="1", memory="16Gi"),
        make_node("tight-both", cpu="1", memory="1Gi"),
        make_node("busy", cpu="4", memory="16Gi", pods=1),
    ]
    statuses = run_filter(
        Fit(), {"requests": {"cpu": "2", "memory": "2Gi"}}, nodes, [make_pod("x", node_name="busy")]
    )
    assert [None if s is None else s.reasons for s in statuses] == [
        None,
        ("Insufficient cpu",),
        ("Insufficient cpu", "Insufficient memory"),
        ("Too many pods",),
    ]


def score(args: NodeResourcesFitArgs | None, pod_kwargs: dict, nodes: list, pods: list = ()) -> list[int]:
    plugin = Fit(args)
    pod = make_pod("incoming", **pod_kwargs)
    state = CycleState()
    cluster = table_of(nodes, pods)
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch, "the batch and per-node forms disagree"
    return per_node


NODE_4CPU_10K = {"cpu": "4", "memory": "10000"}
REQ_1CPU_2K = {"requests": {"cpu": "1", "memory": "2000"}}


def strategy(
    kind: str, resources: list[ResourceSpec] | None = None, shape: list | None = None
) -> NodeResourcesFitArgs:
    s = ScoringStrategy(type=kind)
    if resources is not None:
        s.resources = resources
    if shape is not None:
        s.requested_to_capacity_ratio = [UtilizationShapePoint(u, sc) for u, sc in shape]
    return NodeResourcesFitArgs(scoring_strategy=s)


@pytest.mark.parametrize(
    ("case", "args", "pod_kwargs", "expected"),
    [
        # cpu (4000-1000)*100/4000 = 75, memory (10000-2000)*100/10000 = 80, mean 77
        ("least allocated averages the free share", None, REQ_1CPU_2K, 77),
        # cpu 25, memory 20 -> 22
        ("most allocated averages the used share", strategy(MOST_ALLOCATED), REQ_1CPU_2K, 22),
        (
            "resource weights weigh the average",
            strategy("LeastAllocated", [ResourceSpec("cpu", 3), ResourceSpec("memory", 1)]),
            REQ_1CPU_2K,
            76,
        ),
        # a request-less pod counts 100m cpu and 200Mi memory: cpu 97, memory 0 (200Mi > 10000 bytes)
        ("least allocated uses the non-zero defaults for empty pods", None, {}, 48),
        # shape (0,0)-(100,10) scaled to 0..100: cpu 25, memory 20 -> 22.5 rounds half away from zero
        (
            "requested to capacity ratio follows the shape and rounds like Go",
            strategy(REQUESTED_TO_CAPACITY_RATIO, shape=[(0, 0), (100, 10)]),
            REQ_1CPU_2K,
            23,
        ),
        # a falling shape (0,10)-(100,0): cpu 75, memory 80 -> 77.5 -> 78
        (
            "requested to capacity ratio can spread with a falling shape",
            strategy(REQUESTED_TO_CAPACITY_RATIO, shape=[(0, 10), (100, 0)]),
            REQ_1CPU_2K,
            78,
        ),
    ],
)
def test_score_strategies(
    case: str, args: NodeResourcesFitArgs | None, pod_kwargs: dict, expected: int
) -> None:
    assert score(args, pod_kwargs, [make_node("n", **NODE_4CPU_10K)]) == [expected]


def test_existing_pods_count_toward_the_used_share() -> None:
    existing = [make_pod("e", node_name="busy", requests={"cpu": "2", "memory": "5000"})]
    scores = score(
        None, REQ_1CPU_2K, [make_node("idle", **NODE_4CPU_10K), make_node("busy", **NODE_4CPU_10K)], existing
    )
    # busy: cpu (4000-3000)*100/4000 = 25, memory (10000-7000)*100/10000 = 30 -> 27
    assert scores == [77, 27]


def test_extended_resources_score_only_where_the_pod_asks_and_the_node_has_them() -> None:
    args = strategy(MOST_ALLOCATED, [ResourceSpec("cpu", 1), ResourceSpec(GPU, 1)])
    nodes = [make_node("gpu", cpu="4", extra={GPU: 4}), make_node("plain", cpu="4")]
    # gpu node: cpu 25, gpu 1*100/4 = 25 -> 25; plain node: the gpu is left out -> cpu 25
    assert score(args, {"requests": {"cpu": "1", GPU: "1"}}, nodes) == [25, 25]
    existing = [make_pod("e", node_name="gpu", requests={GPU: "2"})]
    # gpu node now: the existing pod counts the 100m default, cpu 1100*100/4000 = 27, gpu 3*100/4 = 75 -> 51
    assert score(args, {"requests": {"cpu": "1", GPU: "1"}}, nodes, existing) == [51, 25]
    # a pod that does not ask for the gpu is scored on cpu alone
    assert score(args, {"requests": {"cpu": "1"}}, nodes, existing) == [27, 25]


def test_overcommitted_nodes_score_zero_when_least_allocated() -> None:
    assert score(None, {"requests": {"cpu": "8", "memory": "20000"}}, [make_node("n", **NODE_4CPU_10K)]) == [
        0
    ]


def test_a_strategy_without_a_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="shape"):
        Fit(strategy(REQUESTED_TO_CAPACITY_RATIO))


# ---------------------------------------------------------------------------- events


def hints(plugin: Fit) -> tuple:
    pod_event, node_event, _ = plugin.events_to_register()
    assert pod_event.event.resource == POD and node_event.event.resource == NODE
    assert node_event.event.action == ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
    return pod_event.hint, node_event.hint


@pytest.mark.parametrize(
    ("case", "old", "new", "hint"),
    [
        ("an added node big enough queues", None, {"cpu": "4"}, QueueingHint.QUEUE),
        ("an added node too small skips", None, {"cpu": "1"}, QueueingHint.SKIP),
        ("a node whose cpu grew queues", {"cpu": "2"}, {"cpu": "4"}, QueueingHint.QUEUE),
        (
            "a node whose memory grew skips a cpu-only pod",
            {"cpu": "4", "memory": "1Gi"},
            {"cpu": "4", "memory": "2Gi"},
            QueueingHint.SKIP,
        ),
        (
            "a node whose pod count grew queues",
            {"cpu": "4", "pods": 1},
            {"cpu": "4", "pods": 2},
            QueueingHint.QUEUE,
        ),
        ("a node that shrank below the request skips", {"cpu": "4"}, {"cpu": "1"}, QueueingHint.SKIP),
    ],
)
def test_node_change_hint(case: str, old: dict | None, new: dict, hint: QueueingHint) -> None:
    _, node_hint = hints(Fit())
    pod = make_pod(requests={"cpu": "2"})
    assert node_hint(pod, None if old is None else make_node("n", **old), make_node("n", **new)) == hint


def test_pod_delete_hint_queues_only_for_pods_that_held_a_node() -> None:
    pod_hint, _ = hints(Fit())
    pod = make_pod("pending", requests={"cpu": "1"})
    assert pod_hint(pod, make_pod("gone", node_name="n"), None) == QueueingHint.QUEUE
    assert pod_hint(pod, make_pod("gone", nominated_node_name="n"), None) == QueueingHint.QUEUE
    assert pod_hint(pod, make_pod("gone"), None) == QueueingHint.SKIP


def test_pod_scale_down_hint_queues_when_a_wanted_resource_shrank() -> None:
    pod_hint, _ = hints(Fit())
    pod = make_pod("pending", uid="me", requests={"cpu": "1"})
    before = make_pod("other", uid="o", node_name="n", requests={"cpu": "2", "memory": "2Gi"})
    less_cpu = make_pod("other", uid="o", node_name="n", requests={"cpu": "1", "memory": "2Gi"})
    less_memory = make_pod("other", uid="o", node_name="n", requests={"cpu": "2", "memory": "1Gi"})
    assert pod_hint(pod, before, less_cpu) == QueueingHint.QUEUE
    assert pod_hint(pod, before, less_memory) == QueueingHint.SKIP
    assert pod_hint(pod, pod, make_pod("pending", uid="me", requests={"cpu": "500m"})) == QueueingHint.QUEUE
    unassigned = make_pod("other", uid="o", requests={"cpu": "2"})
    assert pod_hint(pod, unassigned, make_pod("other", uid="o", requests={"cpu": "1"})) == QueueingHint.SKIP


def test_batch_filter_notices_a_node_filling_up_and_emptying_between_cycles() -> None:
    # The quick "fits even where the least is free" answer must follow every row change.
    plugin = Fit()
    cluster = table_of([make_node("a", cpu="2"), make_node("b", cpu="2")])
    pod = make_pod("incoming", requests={"cpu": "1"})
    state = CycleState()
    plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    assert plugin.filter_nodes(state, pod, cluster.table, cluster.slots) is None
    a = cluster.info("a")
    a.add_pod(make_pod("filler", node_name="a", requests={"cpu": "1500m"}))
    cluster.table.sync_row(a)
    verdicts = plugin.filter_nodes(state, pod, cluster.table, cluster.slots)
    assert verdicts is not None
    assert verdicts.rejected.tolist() == [True, False]
    assert verdicts.statuses[0].reasons == ("Insufficient cpu",)
    a.remove_pod(next(iter(a.pods)))
    cluster.table.sync_row(a)
    assert plugin.filter_nodes(state, pod, cluster.table, cluster.slots) is None


@pytest.mark.parametrize(
    "args",
    [NodeResourcesFitArgs(), NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(MOST_ALLOCATED))],
    ids=["least allocated", "most allocated"],
)
def test_batch_scores_follow_pods_placed_after_an_earlier_cycle(args: NodeResourcesFitArgs) -> None:
    plugin = Fit(args)
    cluster = table_of([make_node(f"n{i}", cpu="4", memory="8Gi") for i in range(12)])
    pod = make_pod("incoming", requests={"cpu": "500m", "memory": "1Gi"})
    for round_ in range(12):  # one more pod per round, as the scheduling loop places them
        per_node, batch = per_node_and_batch_score(plugin, CycleState(), pod, cluster)
        assert batch == per_node
        info = cluster.infos[round_ % 3]
        info.add_pod(
            make_pod(f"placed{round_}", node_name=info.name, requests={"cpu": "250m", "memory": "512Mi"})
        )
        cluster.table.sync_row(info)
    assert len(set(batch)) > 1, "the placed pods should have changed some scores"


# ---------------------------------------------------------------------------- resizes, pod-level


def resizing_pod(name: str, uid: str, spec_cpu: str, allocated_cpu: str) -> Pod:
    """A pod on node "n" whose spec asks ``spec_cpu`` while the kubelet still holds ``allocated_cpu``."""
    obj = pod_dict(name, uid=uid, node_name="n", requests={"cpu": spec_cpu})
    obj["status"]["containerStatuses"] = [
        {
            "name": "c0",
            "resources": {"requests": {"cpu": allocated_cpu}},
            "allocatedResources": {"cpu": allocated_cpu},
        }
    ]
    return Pod.from_dict(obj)


def test_a_pod_resizing_down_on_the_node_still_holds_its_allocated_cpu() -> None:
    existing = [resizing_pod("shrinking", "s", spec_cpu="1", allocated_cpu="3")]
    (status,) = run_filter(Fit(), {"requests": {"cpu": "1500m"}}, [make_node("n")], existing)
    assert status is not None and status.reasons == ("Insufficient cpu",)


def test_pod_scale_down_hint_queues_only_once_the_kubelet_releases_the_resources() -> None:
    pod_hint, _ = hints(Fit())
    pod = make_pod("pending", uid="me", requests={"cpu": "1"})
    before = resizing_pod("other", "o", spec_cpu="3", allocated_cpu="3")
    spec_lowered = resizing_pod("other", "o", spec_cpu="1", allocated_cpu="3")
    released = resizing_pod("other", "o", spec_cpu="1", allocated_cpu="1")
    assert pod_hint(pod, before, spec_lowered) == QueueingHint.SKIP
    assert pod_hint(pod, spec_lowered, released) == QueueingHint.QUEUE


def test_node_hint_checks_ignored_resources_too() -> None:
    # upstream's isFit passes no ignored resources: the pod never fits a node lacking the gpu
    _, node_hint = hints(Fit(NodeResourcesFitArgs(ignored_resources=[GPU])))
    pod = make_pod(requests={"cpu": "1", GPU: "1"})
    assert node_hint(pod, None, make_node("n")) == QueueingHint.SKIP
    assert node_hint(pod, None, make_node("n", extra={GPU: 1})) == QueueingHint.QUEUE


def test_existing_pods_with_pod_level_requests_count_defaults_only_for_what_nothing_states() -> None:
    obj = pod_dict(
        "e",
        node_name="n",
        containers=[{"name": "a", "resources": {"requests": {"cpu": "1"}}}, {"name": "b"}],
    )
    obj["spec"]["resources"] = {"requests": {"memory": "1000"}}
    # the node's non-zero cpu is 1000 (container b gets no default: "a" states cpu) and memory 1000;
    # with the incoming pod: cpu (4000-2000)*100/4000 = 50, memory (10000-3000)*100/10000 = 70 -> 60
    assert score(None, REQ_1CPU_2K, [make_node("n", **NODE_4CPU_10K)], [Pod.from_dict(obj)]) == [60]


# ------------------------------------------------------------ extended resources backed by DRA

GPU_CLASS = {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": GPU}}


def dra_fit(*classes: dict) -> Fit:
    return Fit(None, FakeHandle(listers={"deviceclasses": list(classes)}))  # type: ignore[arg-type]


SHORT = ("Insufficient example.com/gpu",)


@pytest.mark.parametrize(
    ("case", "requests", "classes", "reasons"),
    [
        # left to DynamicResources where the node has none (an explicit 0 counts as none)
        ("a served resource", {GPU: "1"}, [GPU_CLASS], [None, SHORT, None]),
        (
            "the class's implicit name",
            {"deviceclass.resource.kubernetes.io/gpu": "1"},
            [GPU_CLASS],
            [None] * 3,
        ),
        ("no class serves it", {GPU: "1"}, [], [SHORT] * 3),
    ],
)
def test_extended_resources_a_device_class_serves(
    case: str, requests: dict, classes: list, reasons: list
) -> None:
    # no gpu in allocatable; one gpu, in use; an explicit zero
    nodes = [make_node("none"), make_node("plugin", extra={GPU: 1}), make_node("zero", extra={GPU: 0})]
    used = [make_pod("user", node_name="plugin", requests={GPU: "1"})]
    verdicts = run_filter(dra_fit(*classes), {"requests": requests}, nodes, used)
    assert [v.reasons if v is not None else None for v in verdicts] == reasons, case


def test_a_pod_dra_would_serve_is_not_signed() -> None:
    plugin = dra_fit(GPU_CLASS)
    fragments, status = plugin.sign_pod(make_pod("p", requests={GPU: "1"}))
    assert fragments == () and status.code == Code.UNSCHEDULABLE
    assert status.message() == "signature disabled when dra extended resources are used in the cluster"
    fragments, status = plugin.sign_pod(make_pod("p", requests={"example.com/other": "1"}))
    assert status is None and fragments


@pytest.mark.parametrize(
    ("case", "old", "new", "hint"),
    [
        ("a class serving the resource is added", None, GPU_CLASS, QueueingHint.QUEUE),
        ("the implicit name's class is added", None, {"metadata": {"name": "tpu"}}, QueueingHint.QUEUE),
        ("another class is added", None, {"metadata": {"name": "fpga"}}, QueueingHint.SKIP),
        ("a class starts serving the resource", {"metadata": {"name": "gpu"}}, GPU_CLASS, QueueingHint.QUEUE),
        ("an update keeping the name", GPU_CLASS, GPU_CLASS, QueueingHint.SKIP),
    ],
)
def test_device_class_hint(case: str, old: dict | None, new: dict, hint: QueueingHint) -> None:
    *_, class_event = Fit().events_to_register()
    assert class_event.event.resource == DEVICE_CLASS
    pod = make_pod("p", requests={GPU: "1", "deviceclass.resource.kubernetes.io/tpu": "1"})
    assert class_event.hint(pod, old, new) == hint, case


# ------------------------------------------------------------ scoring by a DRA-backed resource

MEMORY_40 = 'device.attributes["gpu.example.com"].memory >= 40'


def gpu_class(*expressions: str) -> dict:
    selectors = [{"cel": {"expression": e}} for e in expressions]
    return {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": GPU, "selectors": selectors}}


def dra_score(
    classes: list, slices: list, claims: list, nodes: list, pods: list = (), assumed: list = ()
) -> list[int]:
    """MostAllocated over the gpu alone, for a pod asking one; both forms must agree."""
    handle = FakeHandle(
        listers={"deviceclasses": classes, "resourceslices": slices, "resourceclaims": claims}
    )
    for claim in assumed:  # an allocation DynamicResources assumed at Reserve
        shared_dra(handle).tracker.reserve(claim)
    plugin = Fit(strategy(MOST_ALLOCATED, [ResourceSpec(GPU, 1)]), handle)  # type: ignore[arg-type]
    pod = make_pod("incoming", requests={GPU: "1"})
    state = CycleState()
    cluster = table_of(nodes, pods)
    assert plugin.pre_score(state, pod, cluster.infos) is None
    per_node, batch = per_node_and_batch_score(plugin, state, pod, cluster)
    assert per_node == batch, "the batch and per-node forms disagree"
    without_pre_score = [int(plugin.score(CycleState(), pod, info)) for info in cluster.infos]
    assert without_pre_score == per_node
    return per_node


FOUR_GPUS = dra.resource_slice("dra-gpus", [dra.device(f"gpu-{i}", memory=40) for i in range(4)], node="dra")
MIXED = dra.resource_slice(
    "mixed-gpus", [dra.device(f"gpu-{i}", memory=80 if i < 2 else 16) for i in range(4)], node="mixed"
)
ONE_USED = dra.allocated(dra.claim("used"), "dra", "gpu-0")


@pytest.mark.parametrize(
    ("case", "classes", "slices", "claims", "assumed", "expected"),
    [
        # dra: (1 allocated + 1) / 4 devices = 50; plugin: (3 + 1) / 4 = 100; none: nothing to score
        (
            "devices count where the node does not advertise the resource",
            [gpu_class()],
            [FOUR_GPUS],
            [ONE_USED],
            [],
            [50, 100, 0],
        ),
        ("without a class the devices do not count", [], [FOUR_GPUS], [ONE_USED], [], [0, 100, 0]),
        ("a free node's devices", [gpu_class()], [FOUR_GPUS], [], [], [25, 100, 0]),
        # an allocation assumed at Reserve, not written yet, holds its device too
        (
            "assumed allocations count",
            [gpu_class()],
            [FOUR_GPUS],
            [],
            [dra.allocated(dra.claim("assumed"), "dra", "gpu-1", "gpu-2")],
            [75, 100, 0],
        ),
        # upstream counts every slice serving the node, an older generation's too
        (
            "every slice serving the node counts",
            [gpu_class()],
            [
                FOUR_GPUS,
                dra.resource_slice(
                    "old", [dra.device("gpu-9", memory=40)], node="dra", pool="dra", generation=0
                ),
            ],
            [],
            [],
            [20, 100, 0],
        ),
        # a slice for all nodes serves the node without devices too: (0 + 1) / 1
        (
            "a slice for all nodes",
            [gpu_class()],
            [dra.resource_slice("shared", [dra.device("remote", memory=40)], all_nodes=True)],
            [],
            [],
            [100, 100, 100],
        ),
        # a selector that fails on a device counts nothing on that node, as upstream
        (
            "a failing selector counts none",
            [gpu_class('device.attributes["gpu.example.com"].missing')],
            [FOUR_GPUS],
            [],
            [],
            [0, 100, 0],
        ),
    ],
)
def test_scoring_counts_the_devices_of_a_dra_backed_resource(
    case: str, classes: list, slices: list, claims: list, assumed: list, expected: list
) -> None:
    nodes = [make_node("dra"), make_node("plugin", extra={GPU: 4}), make_node("none")]
    existing = [make_pod("user", node_name="plugin", requests={GPU: "3"})]
    assert dra_score(classes, slices, claims, nodes, existing, assumed) == expected, case


def test_only_devices_matching_the_class_selectors_count() -> None:
    nodes = [make_node("mixed")]
    used = [dra.allocated(dra.claim("used"), "mixed", "gpu-0")]
    # two of the four devices have 40 or more: (1 + 1) / 2 = 100; without the selector (1 + 1) / 4
    assert dra_score([gpu_class(MEMORY_40)], [MIXED], used, nodes) == [100]
    assert dra_score([gpu_class()], [MIXED], used, nodes) == [50]


def test_scoring_follows_new_allocations_between_cycles() -> None:
    """Claims change without any node row changing: the batch form must not reuse old scores."""
    claims = FakeLister()
    handle = FakeHandle(listers={"deviceclasses": [gpu_class()], "resourceslices": [FOUR_GPUS]})
    handle.listers["resourceclaims"] = claims
    plugin = Fit(strategy(MOST_ALLOCATED, [ResourceSpec(GPU, 1)]), handle)  # type: ignore[arg-type]
    pod = make_pod("incoming", requests={GPU: "1"})
    cluster = table_of([make_node("dra")] + [make_node(f"n{i}") for i in range(10)])
    scores = []
    for used in ([], ["gpu-0"], ["gpu-0", "gpu-1", "gpu-2"]):
        for i, device in enumerate(used):
            claims.put(dra.allocated(dra.claim(f"c{i}"), "dra", device))
        state = CycleState()
        plugin.pre_score(state, pod, cluster.infos)
        scores.append(int(plugin.score_nodes(state, pod, cluster.table, cluster.slots)[0]))
    assert scores == [25, 50, 100]


def test_a_pod_not_asking_for_the_resource_reads_no_dra_state() -> None:
    handle = FakeHandle(listers={"deviceclasses": [gpu_class()]})  # no slices, no claims watched
    plugin = Fit(strategy(MOST_ALLOCATED, [ResourceSpec("cpu", 1), ResourceSpec(GPU, 1)]), handle)  # type: ignore[arg-type]
    pod = make_pod("incoming", requests={"cpu": "1"})
    cluster = table_of([make_node("n", cpu="4")])
    state = CycleState()
    plugin.pre_score(state, pod, cluster.infos)
    assert per_node_and_batch_score(plugin, state, pod, cluster) == ([25], [25])


def test_a_per_device_slice_counts_the_devices_naming_the_node() -> None:
    links = dra.resource_slice(
        "links",
        [
            {**dra.device("gpu-a", memory=40), "nodeName": "dra"},
            {**dra.device("gpu-b", memory=40), "nodeName": "none"},
            {**dra.device("gpu-c", memory=40), "allNodes": True},
        ],
        pool="links",
    )
    links["spec"]["perDeviceNodeSelection"] = True
    used = [dra.allocated(dra.claim("used"), "dra", "gpu-a", pool="links")]
    nodes = [make_node("dra"), make_node("plugin", extra={GPU: 4}), make_node("none")]
    existing = [make_pod("user", node_name="plugin", requests={GPU: "3"})]
    # dra: gpu-a (held) and gpu-c, (1 + 1) / 2; none: gpu-b and gpu-c, (0 + 1) / 2
    assert dra_score([gpu_class()], [links], used, nodes, existing) == [100, 100, 50]


def test_shared_devices_and_partitions_count_as_allocated_when_held() -> None:
    """A device held by a share of its capacity is allocated, as upstream's IsDeviceAllocated;
    a pool's counter slice serves the node but offers no device to count."""
    devices = [
        dra.shared_device("nic", {"bandwidth": {"value": "10G"}}),
        dra.partition("half-0", {"memory": {"memory": "20Gi"}}),
        dra.partition("half-1", {"memory": {"memory": "20Gi"}}),
        dra.device("whole"),
    ]
    slices = [
        dra.resource_slice("dra-devices", devices, node="dra", pool="dra", count=2),
        dra.counter_slice("dra-counters", {"memory": {"memory": "40Gi"}}, pool="dra", node="dra"),
    ]
    share = dra.holding(shares=(((dra.DRIVER, "dra", "nic"), {"bandwidth": "4G"}),))
    partition = dra.holding((dra.DRIVER, "dra", "half-0"))
    nodes = [make_node("dra")]
    # four devices: the share and the partition held, (2 + 1) / 4
    assert dra_score([gpu_class()], slices, [share, partition], nodes) == [75]
    assert dra_score([gpu_class()], slices, [], nodes) == [25]
