"""Node what-ifs: --drain (PDBs honoured), --remove-node, --add-nodes and --fit, each reported
with placements, pending pods and utilization; --fit's count equals a brute-force search."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.testing.builders import node_dict, pod_dict
from tests.support.simulate import simulate_json, snapshot_file

ZONE = "topology.kubernetes.io/zone"


def running(pod: dict[str, Any], owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """A bound pod as a cluster serves it: Running and Ready, owned by ``owner`` if given."""
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return pod


REPLICAS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "default", "uid": "rs-web"},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {}}},
}
DAEMONS = {"kind": "DaemonSet", "metadata": {"name": "agent", "uid": "ds-agent"}}
PDB = {
    "metadata": {"name": "web", "namespace": "default", "generation": 1},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
}


def drained_cluster() -> dict[str, list[Any]]:
    """n-0 holds two of web's three replicas, an agent (DaemonSet) and a bare pod."""
    web = {"app": "web"}
    pods = [
        running(pod_dict("web-a", node_name="n-0", requests={"cpu": "1"}, labels=web), REPLICAS),
        running(pod_dict("web-b", node_name="n-0", requests={"cpu": "1"}, labels=web), REPLICAS),
        running(pod_dict("web-c", node_name="n-1", requests={"cpu": "1"}, labels=web), REPLICAS),
        running(pod_dict("agent-n-0", node_name="n-0", requests={"cpu": "100m"}), DAEMONS),
        running(pod_dict("lonely", node_name="n-0", requests={"cpu": "500m"})),
    ]
    nodes = [node_dict(f"n-{i}", cpu="4", labels={ZONE: f"z{i}"}) for i in range(3)]
    return {"nodes": nodes, "pods": pods, "replicasets": [REPLICAS], "poddisruptionbudgets": [PDB]}


def test_a_drain_retries_what_the_pdb_refused_once_the_replacement_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = simulate_json(
        capsys, "--snapshot", str(snapshot_file(tmp_path, drained_cluster())), "--drain", "n-0"
    )
    # three healthy, two required: web-a goes first; web-b is refused until web-a's
    # replacement runs elsewhere, then goes in the next pass
    assert [(e["pod"], e["result"]) for e in report["evictions"]] == [
        ("default/lonely", "gone"),
        ("default/web-a", "replaced"),
        ("default/web-b", "replaced"),
    ]
    assert "default/agent-n-0" not in {e["pod"] for e in report["evictions"]}  # a DaemonSet's pod stays
    placed = {p["pod"]: p for p in report["placements"]}
    assert sorted(placed) == ["default/web-a", "default/web-b"]
    assert all(p["node"] in ("n-1", "n-2") and p["source"] == "evicted from n-0" for p in placed.values())
    usage = {u["node"]: u for u in report["utilization"]}
    assert usage["n-0"]["state"] == "drained"
    assert usage["n-0"]["cpu"]["before"] == 2600 and usage["n-0"]["cpu"]["after"] == 100
    zones = {z["zone"]: z for z in report["zones"]}
    assert zones["z0"]["cpu"]["after"] == 100 and zones["z0"]["nodesAfter"] == 1


def no_room_for_web(objects: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """n-1 and n-2 too small for another 1-cpu web pod."""
    objects["nodes"] = [
        objects["nodes"][0],
        *(node_dict(f"n-{i}", cpu="1500m", labels={ZONE: f"z{i}"}) for i in (1, 2)),
    ]
    objects["pods"].append(running(pod_dict("filler", node_name="n-2", requests={"cpu": "1"})))
    return objects


def test_a_drain_leaves_the_pod_the_pdb_keeps_refusing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """web-a's replacement finds no room, so the budget never allows evicting web-b."""
    snapshot = snapshot_file(tmp_path, no_room_for_web(drained_cluster()))
    report = simulate_json(capsys, "--snapshot", str(snapshot), "--drain", "n-0")
    evictions = {e["pod"]: e for e in report["evictions"]}
    assert evictions["default/web-a"]["result"] == "replaced"
    assert evictions["default/web-b"]["result"] == "blocked"
    assert "disruption budget web" in evictions["default/web-b"]["message"]
    assert evictions["default/lonely"]["result"] == "gone"
    assert report["placements"] == []
    (pending,) = report["pending"]
    assert pending["pod"] == "default/web-a" and "Insufficient cpu" in pending["message"]
    usage = {u["node"]: u for u in report["utilization"]}
    assert usage["n-0"]["cpu"]["before"] == 2600 and usage["n-0"]["cpu"]["after"] == 1100


def test_drain_selector_drains_every_selected_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = drained_cluster()
    objects["poddisruptionbudgets"] = []
    snapshot = snapshot_file(tmp_path, objects)
    report = simulate_json(capsys, "--snapshot", str(snapshot), "--drain-selector", f"{ZONE} in (z0,z1)")
    assert report["drained"] == ["n-0", "n-1"]
    assert {p["pod"]: p["node"] for p in report["placements"]} == {f"default/web-{x}": "n-2" for x in "abc"}


def test_a_removed_node_takes_its_pods_and_their_controllers_replace_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = snapshot_file(tmp_path, drained_cluster())
    report = simulate_json(capsys, "--snapshot", str(snapshot), "--remove-node", "n-0")
    assert report["nodesRemoved"] == ["n-0"]
    # no eviction API on a removal: the budget does not hold the pods back
    assert sorted(p["pod"] for p in report["placements"]) == ["default/web-a", "default/web-b"]
    assert all(p["node"] != "n-0" for p in report["placements"])
    usage = {u["node"]: u for u in report["utilization"]}
    assert usage["n-0"]["state"] == "removed" and usage["n-0"]["cpu"]["after"] == 0
    assert [z["nodesAfter"] for z in report["zones"]] == [0, 1, 1]
    assert report["preempted"] == []  # the agent went with its node
    assert {e["pod"]: e["result"] for e in report["evictions"]}["default/agent-n-0"] == "removed"


def deployment(replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "batch"}},
            "template": {
                "metadata": {"labels": {"app": "batch"}},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                    **spec,
                },
            },
        },
    }


def test_added_nodes_copy_the_template_and_take_pending_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = {"nodes": [node_dict("small", cpu="2", labels={ZONE: "z0"})]}
    template = node_dict(
        "big", cpu="8", labels={ZONE: "z1", "pool": "big"}, taints=[("dedicated", "big", "NoSchedule")]
    )
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(template))
    (tmp_path / "add.yaml").write_text(
        yaml.safe_dump(deployment(3, "3", tolerations=[{"operator": "Exists"}]))
    )
    args = ["--snapshot", str(snapshot_file(tmp_path, objects)), "--add", str(tmp_path / "add.yaml")]
    report = simulate_json(capsys, *args, "--add-nodes", "2", "--node-template", str(tmp_path / "big.yaml"))
    assert report["nodesAdded"] == ["big-new-1", "big-new-2"]
    nodes = Counter(p["node"] for p in report["placements"])  # 3-cpu pods on 8-cpu nodes: two and one
    assert set(nodes) == {"big-new-1", "big-new-2"} and sorted(nodes.values()) == [1, 2]
    usage = {u["node"]: u for u in report["utilization"]}
    assert usage["big-new-1"]["state"] == "added" and usage["big-new-1"]["zone"] == "z1"
    report = simulate_json(capsys, *args, "--add-nodes", "1", "--like", "small")
    assert report["nodesAdded"] == ["small-new-1"] and len(report["pending"]) == 3


def random_cluster(rng: random.Random) -> tuple[dict[str, list[Any]], dict[str, Any], dict[str, Any]]:
    """A few nodes partly used, a Deployment of alike pods, and a template node."""
    nodes = [node_dict(f"n-{i}", cpu=str(rng.randint(1, 4))) for i in range(rng.randint(1, 3))]
    pods = [
        running(
            pod_dict(
                f"old-{i}", node_name=node["metadata"]["name"], requests={"cpu": f"{rng.randint(1, 9)}00m"}
            )
        )
        for i, node in enumerate(nodes)
    ]
    template = node_dict("t", cpu=str(rng.randint(1, 4)))
    workload = deployment(rng.randint(2, 7), f"{rng.randint(5, 25)}00m")
    return {"nodes": nodes, "pods": pods}, workload, template


def test_fit_finds_the_count_a_brute_force_finds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On small random clusters, --fit's count is the least --add-nodes that places every pod."""
    rng = random.Random(24)
    answers = []
    for case in range(5):
        objects, workload, template = random_cluster(rng)
        snapshot = snapshot_file(tmp_path, objects, f"cluster-{case}.json")
        (tmp_path / "add.yaml").write_text(yaml.safe_dump(workload))
        (tmp_path / "t.yaml").write_text(yaml.safe_dump(template))
        args = ["--snapshot", str(snapshot), "--add", str(tmp_path / "add.yaml")]
        fit = simulate_json(capsys, *args, "--fit", "--node-template", str(tmp_path / "t.yaml"))["fit"]
        brute = None
        for count in range(workload["spec"]["replicas"] + 1):
            report = simulate_json(
                capsys, *args, "--add-nodes", str(count), "--node-template", str(tmp_path / "t.yaml")
            )
            if not report["pending"]:
                brute = count
                break
        assert fit["nodes"] == brute, (case, fit)
        answers.append(brute)
    assert len(set(answers)) >= 3, answers  # the cases differ (none, some, "cannot fit")


def test_fit_keeps_the_nodes_it_found_and_says_when_nothing_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = {
        "nodes": [node_dict("n-0", cpu="2")],
        "pods": [running(pod_dict("old", node_name="n-0", requests={"cpu": "2"}))],
    }
    snapshot = str(snapshot_file(tmp_path, objects))
    (tmp_path / "add.yaml").write_text(yaml.safe_dump(deployment(5, "1")))
    report = simulate_json(
        capsys, "--snapshot", snapshot, "--add", str(tmp_path / "add.yaml"), "--fit", "--like", "n-0"
    )
    fit = report["fit"]
    assert fit["nodes"] == 3 and fit["pods"] == 5 and fit["tried"]["2"] == 1 and fit["tried"]["3"] == 0
    assert report["nodesAdded"] == ["n-0-fit-1", "n-0-fit-2", "n-0-fit-3"] and report["pending"] == []
    assert sorted({p["node"] for p in report["placements"]}) == report["nodesAdded"]

    (tmp_path / "add.yaml").write_text(yaml.safe_dump(deployment(2, "3")))  # more than any such node
    report = simulate_json(
        capsys, "--snapshot", snapshot, "--add", str(tmp_path / "add.yaml"), "--fit", "--like", "n-0"
    )
    assert report["fit"]["nodes"] is None and report["fit"]["bound"] == 2
    assert "Insufficient cpu" in report["fit"]["stillPending"] and len(report["pending"]) == 2
    assert report["nodesAdded"] == []


def test_the_text_report_tells_the_what_ifs_and_the_zones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = snapshot_file(tmp_path, no_room_for_web(drained_cluster()))
    code = main(["simulate", "--snapshot", str(snapshot), "--drain", "n-0"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert "drained node n-0" in lines
    assert "default/web-a on n-0: evicted, its controller makes a new one" in lines
    blocked = "default/web-b on n-0: eviction blocked: The disruption budget web needs 2 healthy pods"
    assert any(line.startswith(blocked) for line in lines)
    assert "default/lonely on n-0: evicted, nothing recreates it" in lines
    assert any(
        line.startswith("pending default/web-a (evicted from n-0)") and "Insufficient cpu" in line
        for line in lines
    )
    zones = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("z")}
    assert zones["z0"] == ["1→1", "2600m", "(65%)", "1100m", "(28%)"]
