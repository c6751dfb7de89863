from __future__ import annotations

import pytest

from scheduler.framework import Code, CycleState, QueueingHint
from scheduler.plugins.nodeports import ERR_REASON, NodePorts
from scheduler.testing.builders import make_node, make_pod, per_node_and_batch_filter, table_of


@pytest.mark.parametrize(
    ("case", "wanted", "in_use", "fits"),
    [
        ("a free port fits", [(8080, "TCP")], [(9090, "TCP")], True),
        ("the same port and protocol conflicts", [(8080, "TCP")], [(8080, "TCP")], False),
        ("another protocol does not conflict", [(8080, "UDP")], [(8080, "TCP")], True),
        (
            "different specific IPs do not conflict",
            [(8080, "TCP", "10.0.0.1")],
            [(8080, "TCP", "10.0.0.2")],
            True,
        ),
        ("the same specific IP conflicts", [(8080, "TCP", "10.0.0.1")], [(8080, "TCP", "10.0.0.1")], False),
        ("a wanted 0.0.0.0 conflicts with any IP", [(8080, "TCP")], [(8080, "TCP", "10.0.0.2")], False),
        ("a used 0.0.0.0 conflicts with any IP", [(8080, "TCP", "10.0.0.1")], [(8080, "TCP")], False),
        ("a port without a protocol is TCP", [(8080, "")], [(8080, "TCP")], False),
        ("an empty hostIP is 0.0.0.0", [(8080, "TCP", "")], [(8080, "TCP", "10.0.0.2")], False),
    ],
)
def test_filter(case: str, wanted: list, in_use: list, fits: bool) -> None:
    plugin = NodePorts()
    pod = make_pod("incoming", host_ports=wanted)
    state = CycleState()
    assert plugin.pre_filter(state, pod, None) == (None, None)  # type: ignore[arg-type]
    cluster = table_of(
        [make_node("n"), make_node("empty")], [make_pod("user", node_name="n", host_ports=in_use)]
    )
    per_node, batch = per_node_and_batch_filter(plugin, state, pod, cluster)
    assert per_node == batch
    assert per_node[1] is None
    if fits:
        assert per_node[0] is None
    else:
        assert per_node[0] is not None
        assert (per_node[0].code, per_node[0].reasons) == (Code.UNSCHEDULABLE, (ERR_REASON,))


def test_pre_filter_skips_pods_without_host_ports() -> None:
    _, status = NodePorts().pre_filter(CycleState(), make_pod(), None)  # type: ignore[arg-type]
    assert status is not None and status.is_skip


@pytest.mark.parametrize(
    ("case", "deleted", "hint"),
    [
        (
            "deleting a bound pod holding the port queues",
            {"node_name": "n", "host_ports": [(80, "TCP")]},
            QueueingHint.QUEUE,
        ),
        (
            "deleting a bound pod with other ports skips",
            {"node_name": "n", "host_ports": [(81, "TCP")]},
            QueueingHint.SKIP,
        ),
        ("deleting a bound pod without ports skips", {"node_name": "n"}, QueueingHint.SKIP),
        ("deleting an unscheduled pod skips", {"host_ports": [(80, "TCP")]}, QueueingHint.SKIP),
    ],
)
def test_pod_delete_hint(case: str, deleted: dict, hint: QueueingHint) -> None:
    pod_event, node_event = NodePorts().events_to_register()
    assert node_event.hint is None and pod_event.hint is not None
    assert pod_event.hint(make_pod("p", host_ports=[(80, "TCP")]), make_pod("gone", **deleted), None) == hint


def test_only_sidecar_init_containers_hold_host_ports() -> None:
    # upstream's GetHostPorts: init containers count only with restartPolicy Always
    def init(name: str, **extra: str) -> dict:
        return {"name": name, "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}], **extra}

    plugin = NodePorts()
    plain = make_pod("plain", init_containers=[init("setup")])
    _, status = plugin.pre_filter(CycleState(), plain, None)  # type: ignore[arg-type]
    assert status is not None and status.is_skip
    sidecar = make_pod("sidecar", init_containers=[init("proxy", restartPolicy="Always")])
    state = CycleState()
    assert plugin.pre_filter(state, sidecar, None) == (None, None)  # type: ignore[arg-type]
    cluster = table_of([make_node("n")], [make_pod("user", node_name="n", host_ports=[(80, "TCP")])])
    per_node, batch = per_node_and_batch_filter(plugin, state, sidecar, cluster)
    assert per_node == batch
    assert per_node[0] is not None and per_node[0].reasons == (ERR_REASON,)
