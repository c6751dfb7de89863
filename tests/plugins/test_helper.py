from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework import NodeInfo
from scheduler.plugins.helper import (
    NodeMemo,
    default_normalize_score,
    go_div,
    go_div_array,
    per_node,
)
from scheduler.testing.builders import make_node, make_pod, table_of


@pytest.mark.parametrize(
    ("case", "raw", "reverse", "expected"),
    [
        ("the best raw score becomes 100", [0, 25, 50], False, [0, 50, 100]),
        ("scaling truncates", [1, 2, 3], False, [33, 66, 100]),
        ("all zeros stay zero", [0, 0], False, [0, 0]),
        ("reversed, all zeros become 100", [0, 0], True, [100, 100]),
        ("reversed, the lowest raw score becomes 100", [0, 1, 4], True, [100, 75, 0]),
        ("an empty list is left alone", [], False, []),
        ("negative raw scores truncate toward zero, as Go divides", [-3, 2], False, [-150, 100]),
        ("negative raw scores truncate toward zero when reversed", [-1, 3], True, [133, 0]),
        ("truncation toward zero, not flooring", [-1, 1, 3], False, [-33, 33, 100]),
    ],
)
def test_default_normalize_score(case: str, raw: list[int], reverse: bool, expected: list[int]) -> None:
    scores = np.array(raw, dtype=np.int64)
    default_normalize_score(scores, reverse)
    assert scores.tolist() == expected


@pytest.mark.parametrize(("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)])
def test_go_division_truncates_toward_zero(a: int, b: int, q: int) -> None:
    assert go_div(a, b) == q
    assert go_div_array(np.array([a]), b).tolist() == [q]


class CountingRefresh:
    """A refresh that answers each node's label ``n`` and records which slots it was asked for."""

    def __init__(self, table) -> None:
        self.asked: list[int] = []
        self._compute = per_node(table, lambda info: int(info.node.labels.get("n", "0")))

    def __call__(self, stale: np.ndarray) -> list[int]:
        self.asked += stale.tolist()
        return self._compute(stale)


def numbered_cluster(count: int = 4):
    return table_of([make_node(f"n{i}", labels={"n": str(i * 10)}) for i in range(count)])


def relabel(cluster, index: int, value: str) -> NodeInfo:
    info = cluster.infos[index]
    info.node = make_node(info.name, labels={"n": value})
    cluster.table.sync_row(info)
    return info


def test_node_memo_computes_each_node_once_while_nothing_changes() -> None:
    cluster = numbered_cluster()
    refresh = CountingRefresh(cluster.table)
    memo = NodeMemo(np.int64)
    for slots in (cluster.slots, cluster.slots[[3, 1]], cluster.slots):
        expected = [int(cluster.table.infos[s].node.labels["n"]) for s in slots.tolist()]
        assert memo.values(cluster.table, "key", slots, refresh).tolist() == expected
    assert sorted(refresh.asked) == sorted(cluster.slots.tolist())


def test_node_memo_refreshes_only_the_nodes_whose_rows_changed() -> None:
    cluster = numbered_cluster()
    refresh = CountingRefresh(cluster.table)
    memo = NodeMemo(np.int64)
    memo.values(cluster.table, "key", cluster.slots, refresh)
    refresh.asked.clear()
    relabelled = relabel(cluster, 2, "99")
    relabelled = relabel(cluster, 2, "98")  # twice: refreshed once
    placed_on = cluster.infos[0]
    placed_on.add_pod(make_pod("p", node_name="n0"))
    cluster.table.sync_row(placed_on)
    assert memo.values(cluster.table, "key", cluster.slots, refresh).tolist() == [0, 10, 98, 30]
    assert sorted(refresh.asked) == sorted([relabelled.slot, placed_on.slot])


def test_node_memo_sees_nodes_added_in_a_freed_row_and_after_the_table_grew() -> None:
    cluster = numbered_cluster()
    memo = NodeMemo(np.int64)
    refresh = CountingRefresh(cluster.table)
    memo.values(cluster.table, "key", cluster.slots, refresh)
    gone = cluster.infos.pop(1)
    freed = gone.slot
    cluster.table.remove(gone)
    back = NodeInfo(make_node("back", labels={"n": "5"}))
    cluster.table.add(back)  # takes the freed row
    cluster.infos.append(back)
    assert back.slot == freed
    assert memo.values(cluster.table, "key", cluster.slots, refresh).tolist() == [0, 20, 30, 5]
    for i in range(10):  # outgrow the capacity the memo's column was sized for
        info = NodeInfo(make_node(f"extra{i}", labels={"n": "7"}))
        cluster.table.add(info)
        cluster.infos.append(info)
    assert memo.values(cluster.table, "key", cluster.slots, refresh).tolist() == [0, 20, 30, 5] + [7] * 10


def test_node_memo_recomputes_everything_once_the_change_log_no_longer_reaches_back() -> None:
    cluster = numbered_cluster()
    memo = NodeMemo(np.int64)
    memo.values(cluster.table, "key", cluster.slots, CountingRefresh(cluster.table))
    for i in range(2000):  # far more changes than the table keeps in its log
        relabel(cluster, i % 4, str(i))
    refresh = CountingRefresh(cluster.table)
    assert memo.values(cluster.table, "key", cluster.slots, refresh).tolist() == [1996, 1997, 1998, 1999]
    assert sorted(refresh.asked) == sorted(cluster.slots.tolist())


def test_whole_table_memo_computes_the_slots_asked_until_any_node_changes() -> None:
    cluster = numbered_cluster()
    refresh = CountingRefresh(cluster.table)
    memo = NodeMemo(np.int64, whole_table=True)
    slots = cluster.slots[[3, 1]]
    assert memo.values(cluster.table, "key", slots, refresh).tolist() == [30, 10]
    assert refresh.asked == slots.tolist()
    placed_on = cluster.infos[0]
    placed_on.add_pod(make_pod("p", node_name="n0"))
    cluster.table.sync_row(placed_on)  # pods do not change what whole-table values depend on
    memo.values(cluster.table, "key", slots, refresh)
    assert len(refresh.asked) == 2
    cluster.table.add(NodeInfo(make_node("new")))  # but any node does
    memo.values(cluster.table, "key", slots, refresh)
    assert refresh.asked == slots.tolist() * 2


def test_node_memo_keeps_keys_apart_and_survives_its_limit() -> None:
    cluster = numbered_cluster()
    memo = NodeMemo(np.int64, limit=2)
    for _ in range(2):
        for key in range(5):
            values = memo.values(cluster.table, key, cluster.slots, lambda stale, k=key: [k] * len(stale))
            assert values.tolist() == [key] * 4


def test_node_memo_answers_a_few_slots_directly_until_the_key_is_memoised() -> None:
    cluster = table_of([make_node(f"n{i}", labels={"n": str(i)}) for i in range(40)])
    refresh = CountingRefresh(cluster.table)
    memo = NodeMemo(np.int64)
    one = cluster.slots[[7]]
    assert memo.values(cluster.table, "key", one, refresh).tolist() == [7]
    assert refresh.asked == one.tolist(), "one node asked, one node computed"
    memo.values(cluster.table, "key", cluster.slots, refresh)  # many asked: every node is memoised
    refresh.asked.clear()
    assert memo.values(cluster.table, "key", one, refresh).tolist() == [7]
    assert refresh.asked == []
