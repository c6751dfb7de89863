"""`pyscheduler explain` on the local API endpoint: reasons, scores, choice, preemption, refusals."""

from __future__ import annotations

import re

import yaml

from bench.parity import scores_logged
from scheduler.api import Pod
from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.explain import explain_pod
from scheduler.framework import CycleState
from scheduler.schedule_one import ScheduleResult, run_now
from scheduler.serving.options import ServingOptions
from simcluster import SimCluster
from tests.support.cluster import eventually, pod_manifest, scheduled_condition
from tests.support.explain import kubeconfig, run_explain


def counts_in(message: str) -> dict[str, int]:
    """The "<count> <reason>" histogram of a FailedScheduling message (before PostFilter's part)."""
    histogram = message.split(": ", 1)[1].split(". ", 1)[0]
    return {reason: int(count) for count, reason in (part.split(" ", 1) for part in histogram.split(", "))}


async def test_per_node_reasons_match_the_failed_scheduling_message(
    cluster, start_scheduler, capsys, tmp_path
):
    await start_scheduler(cluster)
    await cluster.create("pods", pod_manifest("picky", cpu="2", nodeSelector={"disk": "ssd"}))
    condition = await eventually(lambda: scheduled_condition(cluster, "picky"))
    code, answer, _ = await run_explain(
        capsys, "picky", "--kubeconfig", kubeconfig(cluster, tmp_path), "-o", "json"
    )
    assert code == 0
    assert answer["message"] == condition["message"]
    assert (
        answer["reasonCounts"]
        == counts_in(condition["message"])
        == {
            "Insufficient cpu": 2,
            "node(s) didn't match Pod's node affinity/selector": 2,
            "node(s) had untolerated taint(s)": 1,
        }
    )
    by_node = {row["node"]: (row["plugin"], row["reasons"]) for row in answer["rejected"]}
    assert by_node == {
        "small-0000": ("NodeAffinity", ["node(s) didn't match Pod's node affinity/selector"]),
        "small-0001": ("NodeAffinity", ["node(s) didn't match Pod's node affinity/selector"]),
        "gpu-0000": ("TaintToleration", ["node(s) had untolerated taint(s)"]),
        "big-0000": ("NodeResourcesFit", ["Insufficient cpu"]),
        "big-0001": ("NodeResourcesFit", ["Insufficient cpu"]),
    }
    assert answer["chosen"] == "" and answer["scores"] == []
    assert "fits 2 node(s) with cpu <= 1" in answer["suggestions"]
    assert answer["postFilter"]["node"] == ""  # nothing of lower priority to evict


async def test_scores_equal_the_scores_of_a_real_cycle_on_the_same_snapshot(cluster, tmp_path):
    await cluster.create("pods", pod_manifest("light", cpu="500m", memory="1Gi"))
    config = default_config()
    config.leader_election.leader_elect = False
    app = SchedulerApp(
        config, kubeconfig=kubeconfig(cluster, tmp_path), serving=ServingOptions(plain_http=True)
    )
    try:
        assert await app.load(15)
        assert app.scheduler is not None
        pod = app.pod_informer.store.get("default/light")
        assert isinstance(pod, Pod)
        fwk = app.frameworks["pyscheduler"]
        explanation = await explain_pod(app.scheduler, fwk, pod)
        with scores_logged() as log:
            result = run_now(app.scheduler.schedule_pod(fwk, CycleState(), pod))
    finally:
        await app.close()
    assert isinstance(result, ScheduleResult)
    cycle = log.rounds["default/light"]
    ours = {row.node: {**row.plugins, "final": row.total} for row in explanation.scores}
    assert sorted(ours) == ["big-0000", "big-0001", "small-0000", "small-0001"]  # gpu-0000 is tainted
    assert ours == {node: {p: s for p, s in scores.items()} for node, scores in cycle.items()}
    assert len({row.total for row in explanation.scores}) > 1  # the fillers make the scores differ
    assert result.node_name in explanation.top
    assert explanation.chosen in explanation.top


async def test_table_output_reads_well(cluster, capsys, tmp_path):
    await cluster.create("pods", pod_manifest("light", cpu="500m"))
    code, text, _ = await run_explain(capsys, "light", "--kubeconfig", kubeconfig(cluster, tmp_path))
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == "Pod default/light (profile pyscheduler), 5 node(s)"
    assert lines[1].startswith("Would be placed on: small-000")
    assert (
        "Feasible nodes (4), weighted scores normalized over all of them, as a cycle does "
        "(it finds them all):" in lines
    )
    assert re.search(r"^NODE +TaintToleration +NodeResourcesFit .* TOTAL$", text, re.M)
    assert re.search(
        r"^gpu-0000 +TaintToleration +UnschedulableAndUnresolvable +node\(s\) had untolerated taint\(s\)$",
        text,
        re.M,
    )


async def test_refusals_have_clear_messages_and_exit_codes(cluster, capsys, tmp_path):
    kc = kubeconfig(cluster, tmp_path)
    await cluster.create("pods", pod_manifest("theirs", scheduler_name="default-scheduler"))
    code, _, err = await run_explain(capsys, "nope", "--kubeconfig", kc)
    assert (code, err) == (1, "pyscheduler explain: pod default/nope not found (or it has finished)\n")
    code, _, err = await run_explain(capsys, "filler-big-0000", "--kubeconfig", kc)
    assert (code, err) == (
        1,
        "pyscheduler explain: pod default/filler-big-0000 is not pending: it is bound to big-0000\n",
    )
    code, _, err = await run_explain(capsys, "theirs", "--kubeconfig", kc)
    assert code == 1
    assert "is for scheduler 'default-scheduler', not one of pyscheduler's profiles (pyscheduler)" in err
    code, answer, _ = await run_explain(
        capsys, "theirs", "--kubeconfig", kc, "--profile", "pyscheduler", "-o", "json"
    )
    assert code == 0 and answer["profile"] == "pyscheduler" and answer["chosen"]
    code, _, err = await run_explain(capsys, "theirs", "--kubeconfig", kc, "--profile", "other")
    assert code == 2 and "no profile named 'other'" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n"
    )
    code, _, err = await run_explain(capsys, "theirs", "--kubeconfig", kc, "--config", str(bad))
    assert code == 2 and "invalid configuration" in err and "profiles" in err


async def test_preemption_is_a_dry_run_naming_the_victims(cluster, capsys, tmp_path):
    for i, node in enumerate(("small-0000", "small-0001")):
        await cluster.create(
            "pods", pod_manifest(f"low-{i}", cpu="2", scheduler_name="default-scheduler", nodeName=node)
        )
    await cluster.create("pods", pod_manifest("urgent", cpu="2", priority=1000))
    code, answer, _ = await run_explain(
        capsys, "urgent", "--kubeconfig", kubeconfig(cluster, tmp_path), "-o", "json"
    )
    assert code == 0
    post = answer["postFilter"]
    assert post["plugin"] == "DefaultPreemption" and post["message"] == ""
    victims = {
        "small-0000": ["default/low-0"],
        "small-0001": ["default/low-1"],
        "big-0000": ["default/filler-big-0000"],
        "big-0001": ["default/filler-big-0001"],
    }
    assert post["victims"] == victims[post["node"]]
    # as the cycle's message: PostFilter succeeded, so it adds nothing
    assert (
        answer["message"]
        == "0/5 nodes are available: 1 node(s) had untolerated taint(s), 4 Insufficient cpu."
    )
    # nothing was evicted or nominated
    assert all(cluster.store.get("pods", "default", name) for name in ("low-0", "low-1"))
    assert not (cluster.store.get("pods", "default", "urgent").get("status") or {}).get("nominatedNodeName")


async def test_every_node_is_evaluated_not_only_those_a_cycle_looks_for(capsys, tmp_path):
    async with SimCluster(nodes=150, kubelet=False, controllers=False) as sim:
        await sim.create("pods", pod_manifest("anywhere"))
        code, answer, _ = await run_explain(
            capsys, "anywhere", "--kubeconfig", kubeconfig(sim, tmp_path), "-o", "json"
        )
    assert code == 0
    assert len(answer["scores"]) == 150 and answer["rejected"] == []
    assert len(answer["cycle"]["scores"]) == 100 and answer["cycle"]["numFeasibleNodesToFind"] == 100
    assert answer["notes"] == [
        "a cycle stops at 100 feasible nodes (percentageOfNodesToScore), searching from position 0 of the "
        "node order, and normalizes the scores over those, so they can differ from the scores over all "
        "150 feasible nodes (both are shown)"
    ]


async def test_the_namespace_defaults_to_the_kubeconfig_contexts(cluster, capsys, tmp_path):
    await cluster.create("namespaces", {"metadata": {"name": "team"}})
    manifest = pod_manifest("light", cpu="500m")
    manifest["metadata"]["namespace"] = "team"
    await cluster.create("pods", manifest)
    config = cluster.kubeconfig()
    config["contexts"][0]["context"]["namespace"] = "team"
    path = tmp_path / "team-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    code, answer, _ = await run_explain(capsys, "light", "--kubeconfig", str(path), "-o", "json")
    assert code == 0 and answer["pod"] == "team/light"
    code, _, err = await run_explain(capsys, "light", "--kubeconfig", kubeconfig(cluster, tmp_path))
    assert (code, err) == (1, "pyscheduler explain: pod default/light not found (or it has finished)\n")


async def test_a_gated_pod_is_evaluated_and_said_to_be_held_back(cluster, capsys, tmp_path):
    await cluster.create("pods", pod_manifest("gated", schedulingGates=[{"name": "example.com/wait"}]))
    code, answer, _ = await run_explain(
        capsys, "gated", "--kubeconfig", kubeconfig(cluster, tmp_path), "-o", "json"
    )
    assert code == 0 and answer["chosen"]  # where it would go once its gates are removed
    assert answer["notes"] == [
        "PreEnqueue plugin SchedulingGates keeps it out of the active queue: "
        "waiting for scheduling gates: [example.com/wait]"
    ]


async def test_a_nominated_pod_takes_its_nominated_node_when_it_fits(cluster, capsys, tmp_path):
    manifest = pod_manifest("preemptor", cpu="500m")
    manifest["status"] = {"nominatedNodeName": "big-0001"}
    cluster.load({"pods": [manifest]})
    code, answer, _ = await run_explain(
        capsys, "preemptor", "--kubeconfig", kubeconfig(cluster, tmp_path), "-o", "json"
    )
    assert code == 0
    assert (answer["chosen"], answer["whyChosen"]) == (
        "big-0001",
        "its nominated node fits: a cycle takes it without scoring",
    )
    assert "big-0001" not in answer["top"]  # the busier node would not win on scores


async def test_a_pod_is_evaluated_with_the_profile_it_names(cluster, capsys, tmp_path):
    config = tmp_path / "two-profiles.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: pyscheduler\n"
        "- schedulerName: no-taints\n  plugins:\n    multiPoint:\n      disabled: [{name: TaintToleration}]\n"
    )
    await cluster.create("pods", pod_manifest("anywhere", scheduler_name="no-taints"))
    kc = kubeconfig(cluster, tmp_path)
    code, answer, _ = await run_explain(
        capsys, "anywhere", "--kubeconfig", kc, "--config", str(config), "-o", "json"
    )
    assert code == 0 and answer["profile"] == "no-taints"
    assert "gpu-0000" in {row["node"] for row in answer["scores"]} and answer["rejected"] == []
    code, answer, _ = await run_explain(
        capsys,
        "anywhere",
        "--kubeconfig",
        kc,
        "--config",
        str(config),
        "--profile",
        "pyscheduler",
        "-o",
        "json",
    )
    assert code == 0 and [row["node"] for row in answer["rejected"]] == ["gpu-0000"]


async def test_the_feature_gates_given_shape_the_default_profile(cluster, capsys, tmp_path):
    """With the Workload API gates on, the default profile has GangScheduling, whose PreEnqueue
    holds back a gang member until the group's minCount pods exist."""
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    }
    await cluster.create("podgroups", group)
    await cluster.create("pods", pod_manifest("train-0", schedulingGroup={"podGroupName": "train"}))
    kc = kubeconfig(cluster, tmp_path)
    gates = "GenericWorkload=true,GangScheduling=true"
    code, answer, err = await run_explain(
        capsys, "train-0", "--kubeconfig", kc, "--feature-gates", gates, "-o", "json"
    )
    assert code == 0, err
    held_back = "PreEnqueue plugin GangScheduling keeps it out of the active queue"
    assert [note for note in answer["notes"] if note.startswith(held_back)], answer["notes"]
