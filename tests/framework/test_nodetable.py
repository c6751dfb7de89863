"""NodeTable: the derived columns, the versions plugins memoise against, and the running minimum."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.api import Node, Pod
from scheduler.framework import NodeInfo, NodeTable
from scheduler.testing import make_node, make_pod


def node(
    name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110, unschedulable: bool = False
) -> Node:
    return make_node(name, cpu=cpu, memory=memory, pods=pods, unschedulable=unschedulable)


def pod(name: str, cpu: str = "500m", memory: str = "1Gi") -> Pod:
    return make_pod(name, uid=name, requests={"cpu": cpu, "memory": memory})


def placed(table: NodeTable, info: NodeInfo, *pods: Pod) -> None:
    for p in pods:
        info.add_pod(p)
    table.sync_row(info)


def test_free_is_allocatable_minus_requested_and_follows_pods() -> None:
    table = NodeTable(2)
    info = NodeInfo(node("a", cpu="4", memory="8Gi", pods=3))
    table.add(info)
    placed(table, info, pod("p1"), pod("p2", cpu="1"))
    assert table.free[info.slot].tolist() == [4000 - 1500, (8 - 2) * 2**30, 0, 3 - 2]
    info.remove_pod("p2")
    table.sync_row(info)
    assert table.free[info.slot].tolist() == [3500, 7 * 2**30, 0, 2]
    np.testing.assert_array_equal(table.free[info.slot], table.alloc[info.slot] - table.requested[info.slot])


def test_resource_columns_are_contiguous_so_plugins_read_them_without_copies() -> None:
    table = NodeTable(8)
    for matrix in (table.alloc, table.requested, table.free, table.non_zero):
        assert matrix[:, 0].flags.c_contiguous
    table.add(NodeInfo(node("a")))
    for _ in range(10):  # growing keeps the layout
        table.add(NodeInfo(node(f"n{_}")))
    assert table.capacity > 8
    for matrix in (table.alloc, table.requested, table.free, table.non_zero):
        assert matrix[:, 0].flags.c_contiguous


def test_the_change_log_lists_every_rewritten_row_and_the_epoch_only_node_changes() -> None:
    table = NodeTable(4)
    a, b = NodeInfo(node("a")), NodeInfo(node("b"))
    table.add(a)
    table.add(b)
    mark, epoch = table.change_mark, table.epoch
    placed(table, a, pod("p1"))
    assert table.changed_since(mark) == [a.slot]
    assert table.epoch == epoch, "pods do not change any node"
    b.node = node("b", unschedulable=True)
    table.sync_row(b)
    assert table.changed_since(mark) == [a.slot, b.slot]
    assert table.epoch != epoch
    assert table.unschedulable[b.slot]
    epoch, slot = table.epoch, a.slot
    table.remove(a)
    assert table.changed_since(mark)[-1] == slot
    assert table.epoch != epoch
    assert table.size == 1


def test_the_change_log_stays_short_and_says_so_when_it_no_longer_reaches_back() -> None:
    table = NodeTable(4)
    info = NodeInfo(node("a"))
    table.add(info)
    mark = table.change_mark
    for i in range(3000):
        placed(table, info, pod(f"p{i}", cpu="1m", memory="1Ki"))
    assert table.changed_since(mark) is None
    recent = table.change_mark
    placed(table, info, pod("last", cpu="1m", memory="1Ki"))
    assert table.changed_since(recent) == [info.slot]
    assert len(table.changed_since(table.change_mark - 100) or ()) == 100


def test_epochs_are_never_shared_between_tables() -> None:
    first, second = NodeTable(4), NodeTable(4)
    first.add(NodeInfo(node("a")))
    second.add(NodeInfo(node("a")))
    assert first.epoch != second.epoch


def test_a_replaced_node_without_an_extended_resource_reads_zero_for_it() -> None:
    table = NodeTable(2)
    gpu_node = Node.from_dict(
        {
            "metadata": {"name": "a"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "2"}},
        }
    )
    info = NodeInfo(gpu_node)
    table.add(info)
    assert table.scalar("example.com/gpu")[0][info.slot] == 2
    info.node = node("a")
    table.sync_row(info)
    assert table.scalar("example.com/gpu")[0][info.slot] == 0


def test_size_counts_the_rows_holding_a_node() -> None:
    table = NodeTable(2)
    infos = [NodeInfo(node(f"n{i}")) for i in range(3)]
    for info in infos:
        table.add(info)
    table.remove(infos[1])
    assert table.size == 2


def test_min_free_of_an_empty_table_lets_everything_through() -> None:
    assert (NodeTable(4).min_free() == np.iinfo(np.int64).max).all()


@pytest.mark.parametrize("seed", range(5))
def test_min_free_stays_the_column_minimum_of_the_live_rows_through_any_change(seed: int) -> None:
    rng = random.Random(seed)
    table = NodeTable(2)
    infos: list[NodeInfo] = []
    for serial in range(300):
        action = rng.random()
        if action < 0.15 or not infos:
            info = NodeInfo(node(f"n{serial}", cpu=rng.choice(["1", "2", "4"]), pods=rng.choice([2, 5])))
            table.add(info)
            infos.append(info)
        elif action < 0.25:
            info = infos.pop(rng.randrange(len(infos)))
            table.remove(info)
        elif action < 0.35:
            info = rng.choice(infos)
            info.node = node(info.name, cpu=rng.choice(["1", "2", "4"]), pods=rng.choice([2, 5]))
            table.sync_row(info)
        elif action < 0.7:
            placed(table, rng.choice(infos), pod(f"p{serial}", cpu=rng.choice(["100m", "1"]), memory="64Mi"))
        else:
            info = rng.choice(infos)
            if info.pods:
                info.remove_pod(rng.choice(list(info.pods)))
                table.sync_row(info)
        if rng.random() < 0.5:  # read it sometimes, so both kept and recomputed minimums are checked
            expected = table.free[table.valid].min(axis=0) if infos else None
            if expected is not None:
                assert table.min_free().tolist() == expected.tolist()
