"""OpportunisticBatching: when the batch hands out a node, and that doing so changes no decision."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.build import DiscardEvents, DiscardStatus, SchedulerParts, build_scheduler
from scheduler.config import parse_config
from scheduler.features import OPPORTUNISTIC_BATCHING, FeatureGates
from scheduler.framework import CycleState, NodeInfo, Status
from scheduler.metrics import SchedulerMetrics
from scheduler.plugins.registry import in_tree_registry
from scheduler.runtime.batch import MAX_BATCH_AGE, OpportunisticBatch, RankedNodes
from scheduler.schedule_one import ScheduleResult, find_nodes_that_pass_filters, run_now
from scheduler.testing import FakeClient, FakeClock, make_node, make_pod
from scheduler.testing.builders import table_of
from scheduler.testing.configs import no_default_spread_config

BATCHING_CONFIG = no_default_spread_config()


class _Snapshot:
    def __init__(self, names: list[str]) -> None:
        self.infos = {name: NodeInfo(node=make_node(name)) for name in names}

    def get(self, name: str) -> NodeInfo | None:
        return self.infos.get(name)


def _full(state: CycleState, pod: Any, info: NodeInfo) -> Status | None:
    return Status.unschedulable("Too many pods")


def _room(state: CycleState, pod: Any, info: NodeInfo) -> Status | None:
    return None


def _batch(filter_node: Any = _full) -> tuple[OpportunisticBatch, FakeClock, SchedulerMetrics]:
    clock, metrics = FakeClock(), SchedulerMetrics()
    return OpportunisticBatch("p", filter_node, clock=clock, metrics=metrics), clock, metrics


def _ranked(*names: str) -> RankedNodes:
    return RankedNodes(list(reversed(names)))


def _counter(metrics: SchedulerMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


SIG = b'{"a":1}'
POD = make_pod("p")


def test_a_consecutive_alike_pod_gets_the_next_node_of_the_stored_list() -> None:
    batch, _, metrics = _batch()
    snapshot = _Snapshot(["n1", "n2", "n3"])
    batch.store(SIG, "", "n1", 7, others=2, ranked=lambda: _ranked("n2", "n3"))
    assert batch.node_hint(POD, SIG, CycleState(), 8, snapshot) == "n2"
    batch.store(SIG, "n2", "n2", 8)
    assert batch.node_hint(POD, SIG, CycleState(), 9, snapshot) == "n3"
    assert batch.batched_pods == 1
    assert _counter(metrics, "scheduler_batch_attempts_total", profile="p", result="hint_used") == 1


@pytest.mark.parametrize(
    ("cycle", "signature", "advance", "last_node", "filter_node", "reason"),
    [
        (9, SIG, 0.0, "n1", _full, "pod_skipped"),  # a cycle came between
        (8, b'{"a":2}', 0.0, "n1", _full, "pod_incompatible"),
        (8, None, 0.0, "n1", _full, "pod_incompatible"),
        (8, SIG, MAX_BATCH_AGE + 0.01, "n1", _full, "expired"),
        (8, SIG, 0.0, "gone", _full, "node_missing"),
        (8, SIG, 0.0, "n1", _room, "node_not_full"),  # the pod would fit where the last one went
    ],
)
async def test_no_hint_when_the_premise_breaks(
    cycle: int, signature: bytes | None, advance: float, last_node: str, filter_node: Any, reason: str
) -> None:
    batch, clock, metrics = _batch(filter_node)
    batch.store(SIG, "", last_node, 7, others=2, ranked=lambda: _ranked("n2", "n3"))
    await clock.advance(advance)
    assert batch.node_hint(POD, signature, CycleState(), cycle, _Snapshot(["n1", "n2", "n3"])) == ""
    assert _counter(metrics, "scheduler_batch_cache_flushed_total", profile="p", reason=reason) == 1
    assert _counter(metrics, "scheduler_batch_attempts_total", profile="p", result="no_hint") == 1


def test_a_hint_not_taken_is_counted_and_the_cycle_stores_its_own_list() -> None:
    batch, _, metrics = _batch()
    snapshot = _Snapshot(["n1", "n2", "n3", "n4"])
    batch.store(SIG, "", "n1", 1, others=2, ranked=lambda: _ranked("n2", "n3"))
    assert batch.node_hint(POD, SIG, CycleState(), 2, snapshot) == "n2"
    batch.store(SIG, "n2", "n4", 2, others=1, ranked=lambda: _ranked("n3"))
    assert _counter(metrics, "scheduler_batch_attempts_total", profile="p", result="hint_not_used") == 1
    assert batch.node_hint(POD, SIG, CycleState(), 3, snapshot) == "n3"


@pytest.mark.parametrize(
    ("signature", "others", "reason"),
    [(None, 3, "pod_not_batchable"), (SIG, 0, "empty_list"), (None, 0, "empty_list")],
)
def test_nothing_is_stored_for_an_unsignable_pod_or_a_single_feasible_node(
    signature: bytes | None, others: int, reason: str
) -> None:
    batch, _, metrics = _batch()
    batch.store(SIG, "", "n1", 1, others=2, ranked=lambda: _ranked("n2", "n3"))
    built: list[int] = []

    def ranked() -> RankedNodes:
        built.append(1)
        return _ranked("x")

    batch.store(signature, "", "n9", 2, others=others, ranked=ranked)
    assert built == []  # the ranking is only built when it is kept
    assert _counter(metrics, "scheduler_batch_cache_flushed_total", profile="p", reason=reason) == 1
    assert batch.node_hint(POD, SIG, CycleState(), 3, _Snapshot(["n1", "n9", "x"])) == ""


def test_ranked_nodes_come_best_first_and_leave_out_the_chosen_one() -> None:
    cluster = table_of([make_node(f"n{i}") for i in range(6)], capacity=8)
    table, slots = cluster.table, cluster.slots
    totals = np.array([5, 9, 7, 9, 1, 7], dtype=np.int64)
    names = [info.name for info in cluster.infos]
    chosen = names[1]
    ranked = RankedNodes.of(table, slots, totals, chosen, random.Random(3))
    order = [ranked.pop() for _ in range(len(ranked))]
    by_name = dict(zip(names, totals.tolist(), strict=True))
    assert chosen not in order and len(order) == 5
    assert [by_name[name] for name in order] == [9, 7, 7, 5, 1]


# ---------------------------------------------------------------------- against a fresh search


def _parts(features: FeatureGates, clock: FakeClock, seed: int) -> SchedulerParts:
    return build_scheduler(
        parse_config(BATCHING_CONFIG),
        in_tree_registry(),
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
        clock=clock,
        rng=random.Random(seed),
        features=features,
    )


def _cluster(rng: random.Random) -> list[Any]:
    zones = ["a", "b", "c"]
    images = [(["registry.example/app:1"], 400 * 1024 * 1024)]
    return [
        make_node(
            f"n{i:02d}",
            cpu=str(rng.choice([2, 4, 8, 16])),
            memory=f"{rng.choice([4, 8, 16, 32])}Gi",
            labels={"topology.kubernetes.io/zone": rng.choice(zones)},
            images=images if rng.random() < 0.3 else (),
        )
        for i in range(rng.randrange(8, 40))
    ]


def _best_totals(parts: SchedulerParts, pod: Any) -> tuple[set[str], int]:
    """The nodes a full search with batching off scores highest, and that score."""
    fwk = parts.frameworks["pyscheduler"]
    snapshot = parts.cache.snapshot()
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, pod, snapshot)
    assert status is None
    search = find_nodes_that_pass_filters(fwk, state, pod, snapshot, snapshot.order, {})
    table = snapshot.table
    names = [table.info(int(slot)).name for slot in search.feasible]
    if len(names) == 1:
        return set(names), 0
    totals, status = fwk.run_scoring(state, pod, table, search.feasible)
    assert status is None
    best = int(totals.max())
    return {name for name, total in zip(names, totals.tolist(), strict=True) if total == best}, best


@pytest.mark.parametrize("seed", range(12))
def test_batched_decisions_are_those_of_a_fresh_search(seed: int) -> None:
    """One pod per node (a host port): every pod, hinted or not, lands on a node a full search
    with batching off ranks first."""
    rng = random.Random(seed)
    nodes = _cluster(rng)
    clock = FakeClock()
    on = _parts(FeatureGates(), clock, seed)
    off = _parts(FeatureGates({OPPORTUNISTIC_BATCHING: False}), clock, seed)
    fwk = on.frameworks["pyscheduler"]
    assert fwk.batch is not None and off.frameworks["pyscheduler"].batch is None
    for parts in (on, off):
        for node in nodes:
            parts.cache.add_node(node)
    requests = {"cpu": rng.choice(["100m", "500m", "1"]), "memory": rng.choice(["128Mi", "1Gi"])}
    for i in range(len(nodes) + 2):
        pod = make_pod(
            f"web-{i}", requests=requests, host_ports=[(8080, "TCP")], images=["registry.example/app:1"]
        )
        on.queue.add(pod)
        info = run_now(on.queue.pop())
        assert info is not None
        expected, _ = _best_totals(off, pod) if i < len(nodes) else (set(), 0)
        decision = run_now(on.scheduler.schedule_pod(fwk, CycleState(), info.pod))
        on.queue.done(pod.uid)
        if i >= len(nodes):  # every node holds the port now
            assert not isinstance(decision, ScheduleResult)
            continue
        assert isinstance(decision, ScheduleResult), decision
        assert decision.node_name in expected, (i, decision.node_name, expected)
        for parts in (on, off):
            parts.cache.assume_pod(pod.on_node(decision.node_name))
    assert fwk.batch.batched_pods >= len(nodes) // 2  # most pods took the hint


def test_the_default_profile_batches_nothing_as_upstream() -> None:
    """System default spreading constraints make every pod unsignable."""
    parts = build_scheduler(
        parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}),
        in_tree_registry(),
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
    )
    fwk = parts.frameworks["pyscheduler"]
    assert fwk.batch is not None
    assert fwk.sign_pod(CycleState(), make_pod("p", host_ports=[(80, "TCP")])) is None


def test_batching_is_off_when_a_plugin_cannot_sign() -> None:
    class Unsigned:
        name = "Unsigned"

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        def filter(self, state: CycleState, pod: Any, node_info: NodeInfo) -> Status | None:
            return None

    config = dict(BATCHING_CONFIG)
    config["profiles"] = [
        {**BATCHING_CONFIG["profiles"][0], "plugins": {"filter": {"enabled": [{"name": "Unsigned"}]}}}
    ]
    parts = build_scheduler(
        parse_config(config),
        {**in_tree_registry(), "Unsigned": Unsigned},
        FakeClient(),
        events=DiscardEvents(),
        status=DiscardStatus(),
        current_pod=lambda _: None,
    )
    assert parts.frameworks["pyscheduler"].batch is None
