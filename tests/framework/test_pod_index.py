"""The pod index: selector queries and per-node counts, kept in step with the cache's placements."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any

import pytest

from scheduler.api import LabelSelector, Pod
from scheduler.cache import Cache
from scheduler.framework.pod_index import PodIndex
from scheduler.testing import make_node, make_pod


def pod(
    name: str,
    node: str = "n1",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    terminating: bool = False,
) -> Pod:
    return make_pod(
        name,
        namespace=namespace,
        uid=f"uid-{namespace}-{name}",
        labels=labels,
        node_name=node,
        deletion_timestamp="2025-01-01T00:00:00Z" if terminating else "",
    )


def sel(**raw: Any) -> LabelSelector | None:
    return LabelSelector.parse(raw)


PODS = [
    pod("web-1", "n1", {"app": "web", "tier": "front"}),
    pod("web-2", "n2", {"app": "web"}),
    pod("web-3", "n2", {"app": "web", "tier": "front"}, terminating=True),
    pod("db-1", "n1", {"app": "db", "tier": "back"}),
    pod("bare", "n3"),
    pod("web-o", "n3", {"app": "web"}, namespace="other"),
]


def names(pods: Any) -> list[str]:
    return sorted(p.name for p in pods)


@pytest.mark.parametrize(
    ("namespaces", "selector", "expected"),
    [
        pytest.param(
            ["default"], sel(matchLabels={"app": "web"}), ["web-1", "web-2", "web-3"], id="match labels"
        ),
        pytest.param(
            ["default"],
            sel(matchExpressions=[{"key": "app", "operator": "In", "values": ["web", "db"]}]),
            ["db-1", "web-1", "web-2", "web-3"],
            id="In with several values",
        ),
        pytest.param(
            ["default"],
            sel(matchExpressions=[{"key": "tier", "operator": "Exists"}]),
            ["db-1", "web-1", "web-3"],
            id="Exists",
        ),
        pytest.param(
            ["default"],
            sel(matchExpressions=[{"key": "app", "operator": "NotIn", "values": ["web"]}]),
            ["bare", "db-1"],
            id="NotIn alone checks every pod of the namespace",
        ),
        pytest.param(
            ["default"],
            sel(
                matchLabels={"app": "web"},
                matchExpressions=[{"key": "tier", "operator": "DoesNotExist"}],
            ),
            ["web-2"],
            id="every requirement must hold",
        ),
        pytest.param(["default"], sel(), ["bare", "db-1", "web-1", "web-2", "web-3"], id="empty"),
        pytest.param(["default"], None, [], id="a missing selector matches nothing"),
        pytest.param(None, sel(matchLabels={"app": "web"}), ["web-1", "web-2", "web-3", "web-o"], id="all"),
        pytest.param(["other", "nowhere"], sel(matchLabels={"app": "web"}), ["web-o"], id="listed"),
        pytest.param(["default"], sel(matchLabels={"app": "cache"}), [], id="no pod with the label"),
    ],
)
def test_matching_finds_exactly_the_pods_a_scan_would(namespaces, selector, expected) -> None:
    index = PodIndex()
    for p in PODS:
        index.add(p)
    assert names(index.matching(namespaces, selector)) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(sel(matchLabels={"app": "web"}), {"n1": 1, "n2": 1}, id="one label"),
        pytest.param(
            sel(matchLabels={"app": "web", "tier": "front"}),
            {"n1": 1},
            id="several",
        ),
        pytest.param(sel(), {"n1": 2, "n2": 1, "n3": 1}, id="empty selector counts every live pod"),
        pytest.param(None, {}, id="missing selector counts nothing"),
    ],
)
def test_count_by_node_counts_live_matching_pods_per_node(selector, expected) -> None:
    index = PodIndex()
    for p in PODS:
        index.add(p)
    assert dict(index.count_by_node("default", selector)) == expected


@pytest.mark.parametrize(
    ("namespace", "key", "value"),
    [("default", "app", "web"), ("default", "tier", "back"), ("other", "app", "web"), ("none", "app", "web")],
)
def test_uids_with_a_label_are_those_matching_that_one_label(namespace: str, key: str, value: str) -> None:
    index = PodIndex()
    for p in PODS:
        index.add(p)
    matching = {p.uid for p in index.matching([namespace], sel(matchLabels={key: value}))}
    assert set(index.uids_with_label(namespace, key, value)) == matching


def test_re_adding_a_pod_replaces_its_labels_and_node() -> None:
    index = PodIndex()
    index.add(pod("a", "n1", {"app": "web"}))
    index.add(pod("a", "n2", {"app": "db"}))
    assert len(index) == 1
    assert dict(index.count_by_node("default", sel(matchLabels={"app": "web"}))) == {}
    assert dict(index.count_by_node("default", sel(matchLabels={"app": "db"}))) == {"n2": 1}


def test_removing_uses_the_indexed_copy_and_forgets_empty_namespaces() -> None:
    index = PodIndex()
    index.add(pod("a", "n1", {"app": "web"}, namespace="ns"))
    index.remove(pod("a", "elsewhere", {"other": "labels"}, namespace="ns"))  # same uid
    index.remove(pod("never-added"))
    assert len(index) == 0
    assert list(index.namespaces()) == []
    assert list(index.matching(None, sel())) == []


def test_the_snapshot_hands_out_the_caches_live_index() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_pod(pod("a", "n1", {"app": "web"}))
    snapshot = cache.snapshot()
    assert snapshot.pod_index() is cache.pod_index
    assert names(snapshot.pod_index().matching(None, sel())) == ["a"]


def scan(cache: Cache) -> tuple[list[str], dict[str, int], list[str]]:
    """Every placed pod, the live ``app=web`` pods per node and every ``app=web`` pod's uid, by
    scanning the NodeInfos."""
    infos = cache._infos.values()
    every = sorted(p.uid for info in infos for p in info.pods.values())
    web = Counter(
        info.name
        for info in infos
        for p in info.pods.values()
        if p.labels.get("app") == "web" and p.deletion_timestamp is None
    )
    web_uids = sorted(p.uid for info in infos for p in info.pods.values() if p.labels.get("app") == "web")
    return every, dict(web), web_uids


def indexed(cache: Cache) -> tuple[list[str], dict[str, int], list[str]]:
    index = cache.pod_index
    every = sorted(p.uid for p in index.matching(None, sel()))
    web = dict(index.count_by_node("default", sel(matchLabels={"app": "web"})))
    return every, web, sorted(index.uids_with_label("default", "app", "web"))


def test_the_cache_keeps_the_index_equal_to_its_placements_through_every_path() -> None:
    """Assume, forget, confirm elsewhere, relabel, terminate, expire, delete — in random order."""
    now = [0.0]
    cache = Cache(assumed_pod_ttl=1.0, clock=lambda: now[0])
    for name in ("n1", "n2", "n3"):
        cache.add_node(make_node(name))
    rng = random.Random(7)
    live: dict[str, Pod] = {}
    for step in range(400):
        name = f"p{rng.randrange(30)}"
        uid = f"uid-default-{name}"
        current = live.get(uid)
        node = rng.choice(["n1", "n2", "n3", "n4"])  # n4 is never added: a placeholder
        labels = {"app": rng.choice(["web", "db"])}
        if current is None:
            fresh = pod(name, node, labels)
            if rng.random() < 0.5:
                cache.assume_pod(fresh)
                if rng.random() < 0.5:
                    cache.finish_binding(fresh)
            else:
                cache.add_pod(fresh)
            live[uid] = fresh
        else:
            action = rng.choice(["forget", "confirm", "update", "terminate", "remove"])
            assumed = cache.is_assumed(uid)
            if action == "forget" and assumed:
                cache.forget_pod(current)
                del live[uid]
            elif action == "confirm":
                bound = pod(name, node, labels)
                cache.add_pod(bound)
                live[uid] = bound
            elif action == "update" and not assumed:
                changed = pod(name, current.node_name, labels)
                cache.update_pod(current, changed)
                live[uid] = changed
            elif action == "terminate" and not assumed:
                changed = dataclasses.replace(current, deletion_timestamp="2025-01-01T00:00:00Z")
                cache.update_pod(current, changed)
                live[uid] = changed
            elif action == "remove":
                cache.remove_pod(current)
                del live[uid]
        if step % 50 == 49:
            now[0] += 2.0
            for expired in cache.cleanup_expired_assumed_pods():
                live.pop(expired.uid, None)
        assert indexed(cache) == scan(cache), f"step {step}"
    assert len(cache.pod_index) == cache.pod_count()
