"""`pyscheduler simulate` against the local endpoint: its placements are a real run's on the same
snapshot; preemption, profiles, volumes, DRA claims and malformed objects on the way."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
import yaml

from scheduler.app import SchedulerApp
from scheduler.config import default_config
from scheduler.simulate.engine import Simulation, key_of
from scheduler.simulate.workloads import expand
from scheduler.testing import deployment_dict
from simcluster import SimCluster
from tests.support.cluster import eventually
from tests.support.simulate import (
    REPO,
    ZONE,
    full_cluster,
    node,
    nodes_of,
    pod,
    populate,
    pyscheduler,
    run_cli,
    running_scheduler,
    snapshot_of,
)


def deployment(name: str, replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    return deployment_dict(name, replicas, requests={"cpu": cpu}, **spec)


WORKLOADS: list[dict[str, Any]] = [
    deployment(
        "web",
        5,
        "500m",
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    ),
    deployment("ssd", 2, "1", nodeSelector={"disk": "ssd"}),
    deployment("huge", 1, "64"),
]


async def test_simulate_places_pods_as_a_real_run_does(tmp_path: Path) -> None:
    real: dict[str, Counter[str]] = {}
    async with SimCluster(nodes=0, kubelet=False, controllers=True) as sim:
        await populate(sim)
        path = await snapshot_of(sim, tmp_path)
        # the real run: the scheduler runs, the cluster's own Deployment controller creates the
        # pods of one workload after the other
        async with running_scheduler(sim, tmp_path):
            for manifest in WORKLOADS:
                name, replicas = manifest["metadata"]["name"], manifest["spec"]["replicas"]
                await sim.create("deployments", manifest)

                def placed(app: str = name, count: int = replicas) -> dict[str, str]:
                    keys = [
                        key_of(p) for p in sim.store.list("pods") if p["metadata"]["labels"]["app"] == app
                    ]
                    return nodes_of(sim, keys) if len(keys) == count else {}

                real[name] = Counter(
                    node or "<pending>"
                    for node in (await eventually(placed, timeout=20.0, interval=0.01)).values()
                )

    manifests = tmp_path / "add.yaml"
    manifests.write_text(yaml.safe_dump_all(WORKLOADS))
    result = pyscheduler("simulate", "--snapshot", str(path), "--add", str(manifests), "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    simulated: dict[str, Counter[str]] = {name: Counter() for name in real}
    for p in doc["placements"]:
        simulated[p["source"].split("/", 1)[1]][p["node"]] += 1
    for p in doc["pending"]:
        simulated[p["source"].split("/", 1)[1]]["<pending>"] += 1
    assert simulated == real
    assert sum(real["web"].values()) == 5 and "<pending>" not in real["web"]
    assert real["huge"] == Counter({"<pending>": 1})
    assert set(real["ssd"]) == {"n-c"}
    (huge,) = doc["pending"]
    assert huge["reason"] == "Unschedulable"
    assert huge["message"].startswith("0/5 nodes are available:")
    # from scheduler.explain, on the state the simulation ended in: the largest free cpu is n-e's
    # 16 (tainted), else n-d's 1 and what the added pods left on the others
    assert huge["suggestions"] and all(
        s.startswith("fits ") or "toleration" in s for s in huge["suggestions"]
    )
    usage = {u["node"]: u for u in doc["utilization"]}
    assert usage["n-a"]["cpu"] == {
        "allocatable": 4000,
        "before": 2000,
        "after": 2000 + 500 * real["web"]["n-a"],
    }
    assert usage["n-c"]["cpu"]["after"] == 1500 + 2000 + 500 * real["web"]["n-c"]


async def cli(*args: str) -> tuple[int, str, str]:
    """The CLI in a process of its own while this loop keeps serving the local endpoint."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "scheduler", *args, cwd=REPO, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_from_cluster_equals_a_saved_snapshot(tmp_path: Path) -> None:
    manifests = tmp_path / "add.yaml"
    manifests.write_text(yaml.safe_dump_all(WORKLOADS))
    async with SimCluster(nodes=0, kubelet=False, controllers=False) as sim:
        await populate(sim)
        kubeconfig = str(sim.write_kubeconfig(tmp_path / "kubeconfig"))
        code, out, err = await cli("snapshot", "-o", str(tmp_path / "saved.json"), "--kubeconfig", kubeconfig)
        assert code == 0, err
        assert out.startswith(f"snapshot written to {tmp_path / 'saved.json'}: ")
        code, live, err = await cli(
            "simulate", "--from-cluster", "--kubeconfig", kubeconfig, "--add", str(manifests), "-o", "json"
        )
        assert code == 0, err
        assert len(sim.store.list("pods")) == 3  # read-only: nothing was created in the cluster
    code, saved, err = await cli(
        "simulate", "--snapshot", str(tmp_path / "saved.json"), "--add", str(manifests), "-o", "json"
    )
    assert code == 0, err
    assert json.loads(live)["placements"] == json.loads(saved)["placements"]
    assert len(json.loads(saved)["placements"]) == 7


async def test_an_added_pod_that_preempts_is_followed_until_it_binds() -> None:
    urgent = pod("urgent", "2", priorityClassName="high")
    async with Simulation(full_cluster(), default_config(), app=SchedulerApp, timeout=30) as simulation:
        outcome = await simulation.add([expand(urgent, "test", "pyscheduler")])
    # the first FailedScheduling (nominated, victims going) is not the end: it is followed to the bind
    assert [(p.pod, p.node in ("n-a", "n-b")) for p in outcome.placements] == [("default/urgent", True)]
    assert outcome.pending == []
    # exactly the victim of the node it went to: one preemption, retried once its victim is gone
    assert outcome.preempted == [f"default/low-{'1' if outcome.placements[0].node == 'n-a' else '2'}"]


async def test_a_malformed_snapshot_object_is_reported_once_and_the_rest_simulated() -> None:
    bad = pod("bad", "lots", node_name="n-a")
    objects = {
        "namespaces": [{"metadata": {"name": "default"}}],
        "nodes": [node("n-a", "2"), {"metadata": {}}],
        "pods": [bad, pod("fine", "1", node_name="n-a")],
    }
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        outcome = await simulation.add([expand(pod("new", "500m"), "test", "pyscheduler")])
    skipped_node, bad_pod = outcome.warnings
    assert skipped_node == "nodes[1]: skipped, no metadata.name"
    assert bad_pod.startswith("pod default/bad: requests not readable (") and "'lots'" in bad_pod
    assert [(p.pod, p.node) for p in outcome.placements] == [("default/new", "n-a")]
    assert outcome.after["n-a"].cpu_requested == 1500


def test_added_pods_use_the_configured_profile_unless_they_name_a_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = tmp_path / "cluster.json"
    objects = {"nodes": [node("n-a", "4")]}
    snapshot.write_text(json.dumps({"kind": "ClusterSnapshot", "formatVersion": 1, "objects": objects}))
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: batch-scheduler\n"
    )
    unnamed = pod("unnamed")
    del unnamed["spec"]["schedulerName"]
    other = pod("other")
    other["spec"]["schedulerName"] = "someone-else"
    manifests = tmp_path / "add.yaml"
    manifests.write_text(yaml.safe_dump_all([unnamed, other]))
    code, out, err = run_cli(
        capsys,
        "simulate",
        "--snapshot",
        str(snapshot),
        "--config",
        str(config),
        "--add",
        str(manifests),
        "-o",
        "json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert [(p["pod"], p["node"]) for p in doc["placements"]] == [("default/unnamed", "n-a")]
    (pending,) = doc["pending"]
    assert pending["pod"] == "default/other" and pending["reason"] == "NotOurs"
    assert pending["message"] == "schedulerName 'someone-else' is none of the profiles (batch-scheduler)"


AVOID_NODE_A = """
from typing import Any, ClassVar

from scheduler.framework import Status


class AvoidNodeA:
    name: ClassVar[str] = "AvoidNodeA"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: Any, pod: Any, node_info: Any) -> Status | None:
        return Status.unschedulable("avoided") if node_info.node.name == "n-a" else None
"""


def test_a_plugin_given_with_plugin_decides_as_in_pyscheduler_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = tmp_path / "cluster.json"
    objects = {"nodes": [node("n-a", "8"), node("n-b", "1")]}  # n-a wins the scores without it
    snapshot.write_text(json.dumps({"kind": "ClusterSnapshot", "formatVersion": 1, "objects": objects}))
    (tmp_path / "avoid.py").write_text(AVOID_NODE_A)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: pyscheduler\n"
        "  plugins: {multiPoint: {enabled: [{name: AvoidNodeA}]}}\n"
    )
    manifests = tmp_path / "add.yaml"
    manifests.write_text(yaml.safe_dump(pod("web", "500m")))
    common = ["simulate", "--snapshot", str(snapshot), "--add", str(manifests), "-o", "json"]

    code, out, err = run_cli(capsys, *common)
    assert code == 0, err
    assert [p["node"] for p in json.loads(out)["placements"]] == ["n-a"]
    code, out, err = run_cli(
        capsys, *common, "--config", str(config), "--plugin", f"{tmp_path / 'avoid.py'}:AvoidNodeA"
    )
    assert code == 0, err
    assert [p["node"] for p in json.loads(out)["placements"]] == ["n-b"]


def local_volume(name: str, host: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}
    return {
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
        "status": {"phase": "Available"},
    }


async def test_a_statefulset_claims_bind_to_the_volumes_of_the_snapshot() -> None:
    objects = {
        "namespaces": [{"metadata": {"name": "default"}}],
        "nodes": [node("n-a", "4"), node("n-b", "4"), node("n-c", "4")],
        "storageclasses": [
            {
                "metadata": {"name": "local"},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        ],
        "persistentvolumes": [local_volume("pv-b", "n-b"), local_volume("pv-c", "n-c")],
    }
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod("db")["spec"]},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "local",
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        outcome = await simulation.add([expand(sts, "test", "pyscheduler")])
        claims = {
            c["metadata"]["name"]: c["spec"].get("volumeName", "")
            for c in simulation.sim.store.list("persistentvolumeclaims")
        }
    placed = {p.pod: p.node for p in outcome.placements}
    assert sorted(placed.values()) == ["n-b", "n-c"]
    (pending,) = outcome.pending
    assert "didn't find available persistent volumes to bind" in pending.message
    for pod_key, node_name in placed.items():
        ordinal = pod_key.rsplit("-", 1)[1]
        assert claims[f"data-db-{ordinal}"] == f"pv-{node_name[-1]}"


async def test_pods_with_claim_templates_get_devices_of_the_snapshot() -> None:
    driver = "gpu.example.com"
    objects = {
        "namespaces": [{"metadata": {"name": "default"}}],
        "nodes": [node("n-a", "8"), node("n-b", "8")],
        "deviceclasses": [
            {
                "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
            }
        ],
        "resourceslices": [
            {
                "metadata": {"name": "n-b-gpus"},
                "spec": {
                    "driver": driver,
                    "nodeName": "n-b",
                    "pool": {"name": "n-b", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
                },
            }
        ],
        "resourceclaimtemplates": [
            {
                "metadata": {"name": "one-gpu", "namespace": "default"},
                "spec": {
                    "spec": {
                        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}
                    }
                },
            }
        ],
    }
    spec = pod("infer")["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "infer"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "infer"}},
            "template": {"metadata": {"labels": {"app": "infer"}}, "spec": spec},
        },
    }
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        outcome = await simulation.add([expand(deploy, "test", "pyscheduler")])
    assert [p.node for p in outcome.placements] == ["n-b", "n-b"]
    (pending,) = outcome.pending
    assert "cannot allocate all claims" in pending.message


async def test_a_pod_pending_for_a_partitioned_gpu_names_the_counter_that_ran_out() -> None:
    driver = "gpu.example.com"
    pool = {"name": "n-b", "generation": 1, "resourceSliceCount": 2}

    def part(name: str, memory: str, profile: str) -> dict:
        return {
            "name": name,
            "attributes": {"profile": {"string": profile}},
            "consumesCounters": [{"counterSet": "gpu", "counters": {"memory": {"value": memory}}}],
        }

    whole = {"cel": {"expression": f'device.attributes["{driver}"].profile == "whole"'}}
    request = {"deviceClassName": driver, "selectors": [whole]}
    half = {"request": "gpu", "driver": driver, "pool": "n-b", "device": "part-a"}
    objects = {
        "namespaces": [{"metadata": {"name": "default"}}],
        "nodes": [node("n-a", "8"), node("n-b", "8")],
        "deviceclasses": [
            {
                "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
            }
        ],
        "resourceslices": [
            {
                "metadata": {"name": "n-b-counters"},
                "spec": {
                    "driver": driver,
                    "nodeName": "n-b",
                    "pool": pool,
                    "sharedCounters": [{"name": "gpu", "counters": {"memory": {"value": "40Gi"}}}],
                },
            },
            {
                "metadata": {"name": "n-b-gpus"},
                "spec": {
                    "driver": driver,
                    "nodeName": "n-b",
                    "pool": pool,
                    "devices": [part("full", "40Gi", "whole"), part("part-a", "20Gi", "half")],
                },
            },
        ],
        "resourceclaims": [
            {
                "metadata": {"name": "in-use", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}},
                "status": {"allocation": {"devices": {"results": [half]}}},
            }
        ],
        "resourceclaimtemplates": [
            {
                "metadata": {"name": "whole-gpu", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}},
            }
        ],
    }
    trainer = pod("trainer")
    trainer["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "whole-gpu"}]
    trainer["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        outcome = await simulation.add([expand(trainer, "test", "pyscheduler")])
    (pending,) = outcome.pending
    assert "cannot allocate all claims" in pending.message
    [suggestion] = pending.suggestions
    assert suggestion.startswith("devices on n-b: claim default/trainer-gpu-")
    assert suggestion.endswith(
        "request gpu: gpu.example.com/n-b/full needs 40Gi of counter memory in counter set gpu of pool "
        "gpu.example.com/n-b, 20Gi left"
    )


async def test_pods_pending_in_the_snapshot_that_a_profile_takes_are_reported() -> None:
    objects = {
        "namespaces": [{"metadata": {"name": "default"}}],
        "nodes": [node("n-a", "2")],
        "pods": [
            pod("waiting", "1500m"),
            {**pod("kube", "100m"), "spec": {**pod("kube")["spec"], "schedulerName": "default-scheduler"}},
        ],
    }
    async with Simulation(objects, default_config(), app=SchedulerApp, timeout=30) as simulation:
        outcome = await simulation.add([expand(pod("new", "1"), "test", "pyscheduler")])
    # the snapshot's pending pod of this profile was first in the queue and took the room
    assert [(p.pod, p.node) for p in outcome.also_placed] == [("default/waiting", "n-a")]
    assert [p.pod for p in outcome.pending] == ["default/new"]
    assert "Insufficient cpu" in outcome.pending[0].message
