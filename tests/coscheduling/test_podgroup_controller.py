"""`pyscheduler podgroup-controller` keeps PodGroup status on the local endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import pytest

from scheduler.cli import main as cli
from scheduler.client.config import load_client_config
from scheduler.client.rest import KubeClient
from scheduler.podgroup_controller import operator
from scheduler.podgroup_controller.reconciler import Reconciler
from simcluster import SimCluster
from tests.coscheduling.conftest import PODGROUPS, install_crd, member, podgroup
from tests.integration.conftest import eventually
from tests.simcluster.test_crds import Http

GROUP = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/train"
OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u-1", "controller": True}


@pytest.fixture
async def sim() -> AsyncIterator[SimCluster]:
    # the kubelet starts bound pods; no other controllers (the pods' owner is made up)
    async with SimCluster(nodes=2, kubelet=True, controllers=False, bookmark_interval=0.5) as cluster:
        await install_crd(cluster)
        yield cluster


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def running(
    sim: SimCluster, tmp_path: Path, reconciler: type[Reconciler] = Reconciler, resync: float = 300.0
) -> AsyncIterator[str]:
    """The operator in a thread with its own event loop, as its own process would run it;
    yields the URL of its liveness probe."""
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "kubeconfig"))
    stop, ready = threading.Event(), threading.Event()
    liveness = f"http://127.0.0.1:{free_port()}/healthz"

    async def run() -> None:
        config = await load_client_config(kubeconfig)
        async with KubeClient(config) as client:
            await operator.run(
                config,
                reconciler(client),
                liveness_endpoint=liveness,
                stop_flag=stop,
                ready_flag=ready,
                resync_seconds=resync,
            )

    thread = threading.Thread(target=lambda: asyncio.run(run()), name="podgroup-controller", daemon=True)
    thread.start()
    assert await asyncio.to_thread(ready.wait, 10), "the controller did not start"
    yield liveness
    stop.set()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()


@pytest.fixture
async def controller(sim: SimCluster, tmp_path: Path) -> AsyncIterator[str]:
    async with running(sim, tmp_path) as liveness:
        yield liveness


async def probe(url: str, timeout: float = 10.0) -> int:
    """The probe's HTTP status, once kopf serves it (it starts next to the watches)."""
    deadline = asyncio.get_running_loop().time() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(url) as answer:
                    return answer.status
            except aiohttp.ClientConnectionError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.05)


def status(sim: SimCluster) -> dict[str, Any]:
    return (sim.store.get(PODGROUPS, "default", "train") or {}).get("status") or {}


def phase_is(sim: SimCluster, phase: str) -> dict[str, Any] | None:
    found = status(sim)
    return found if found.get("phase") == phase else None


async def test_the_status_follows_the_group_from_pending_to_finished(
    sim: SimCluster, controller: str
) -> None:
    assert await probe(controller) == 200  # what the chart's livenessProbe asks
    await sim.create(PODGROUPS, podgroup("train", 2))
    await eventually(lambda: phase_is(sim, "Pending"))
    for i in range(2):
        pod = member(f"train-{i}", "train", cpu="1", schedulerName="nobody")
        pod["metadata"]["ownerReferences"] = [OWNER]
        await sim.create("pods", pod)
    scheduling = await eventually(lambda: phase_is(sim, "Scheduling"))
    assert scheduling["occupiedBy"] == "default/train"
    assert scheduling["scheduleStartTime"].endswith("Z")

    async with aiohttp.ClientSession() as session:
        http = Http(session, sim.url)
        for i in range(2):
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": f"train-{i}"},
                "target": {"kind": "Node", "name": "node-0000"},
            }
            code, body, _ = await http.call(
                "POST", f"/api/v1/namespaces/default/pods/train-{i}/binding", binding
            )
            assert code == 201, body
        running = await eventually(lambda: phase_is(sim, "Running"))
        assert (running["running"], running["succeeded"], running["failed"]) == (2, 0, 0)
        assert running["scheduleStartTime"] == scheduling["scheduleStartTime"]

        for i in range(2):
            code, body, _ = await http.call(
                "PATCH",
                f"/api/v1/namespaces/default/pods/train-{i}/status",
                {"status": {"phase": "Succeeded"}},
                "application/merge-patch+json",
            )
            assert code == 200, body
        finished = await eventually(lambda: phase_is(sim, "Finished"))
    assert (finished["running"], finished["succeeded"], finished["failed"]) == (0, 2, 0)


async def test_a_group_short_of_members_stays_pending(sim: SimCluster, controller: str) -> None:
    await sim.create(PODGROUPS, podgroup("train", 3))
    await sim.create("pods", member("train-0", "train", cpu="1", schedulerName="nobody"))
    await eventually(lambda: phase_is(sim, "Pending"))
    # another group's status is settled meanwhile: the controller has seen the pod by then
    await sim.create(PODGROUPS, podgroup("other", 1))
    await sim.create("pods", member("other-0", "other", cpu="1", schedulerName="nobody"))
    await eventually(
        lambda: (
            ((sim.store.get(PODGROUPS, "default", "other") or {}).get("status") or {}).get("phase")
            == "Scheduling"
        )
    )
    assert phase_is(sim, "Pending")


class MissesEvents(Reconciler):
    """Ignores every event: only the periodic resync brings the status up to date."""

    resyncing = False

    async def resync(self, namespaces: Collection[str] = ()) -> None:
        self.resyncing = True
        try:
            await super().resync(namespaces)
        finally:
            self.resyncing = False

    async def reconcile(self, namespace: str, name: str) -> None:
        if self.resyncing:
            await super().reconcile(namespace, name)


async def test_the_periodic_resync_repairs_what_missed_events_left_stale(
    sim: SimCluster, tmp_path: Path
) -> None:
    async with running(sim, tmp_path, MissesEvents, resync=0.1):
        await sim.create(PODGROUPS, podgroup("train", 1))
        await sim.create("pods", member("train-0", "train", cpu="1", schedulerName="nobody"))
        await eventually(lambda: phase_is(sim, "Scheduling"))


async def test_a_resync_reconciles_the_groups_of_its_namespaces_only(sim: SimCluster, tmp_path: Path) -> None:
    await sim.create(PODGROUPS, podgroup("train", 1))
    other = podgroup("train", 1)
    other["metadata"]["namespace"] = "batch"
    await sim.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}})
    await sim.create(PODGROUPS, other)
    config = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    async with KubeClient(config) as client:
        await Reconciler(client).resync(["default"])
    assert phase_is(sim, "Pending")
    assert "status" not in (sim.store.get(PODGROUPS, "batch", "train") or {})


async def test_a_group_found_gone_is_forgotten(sim: SimCluster, tmp_path: Path) -> None:
    await sim.create(PODGROUPS, podgroup("train", 1))
    config = await load_client_config(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    async with KubeClient(config) as client:
        reconciler = Reconciler(client)
        await reconciler.reconcile("default", "train")
        await reconciler.reconcile("default", "never-created")  # a pod naming a missing group
        assert list(reconciler._locks) == ["default/train"]
        sim.api.delete(sim.api.resource(PODGROUPS), "default", "train")
        await reconciler.reconcile("default", "train")
        assert reconciler._locks == {}


def test_the_pods_watch_asks_the_server_for_labelled_pods_only() -> None:
    settings = kopf.OperatorSettings()
    operator.configure(settings)
    pods = kopf.Resource("", "v1", "pods")
    assert settings.watching.label_selectors.collect(pods) == ["scheduling.x-k8s.io/pod-group"]
    assert (
        settings.watching.label_selectors.collect(
            kopf.Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups")
        )
        == []
    )


def test_a_resync_period_that_is_not_positive_stops_it_with_exit_code_2(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli(["podgroup-controller", "--resync-period", "0"])
    assert exited.value.code == 2
    assert "--resync-period: must be a number greater than 0: '0'" in capsys.readouterr().err


def test_a_kubeconfig_that_does_not_exist_stops_it_with_exit_code_2(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope"
    assert cli(["podgroup-controller", "--kubeconfig", str(missing)]) == 2
    assert f"kubeconfig {missing} does not exist" in capsys.readouterr().err


def test_a_kubeconfig_that_cannot_be_read_names_the_problem(tmp_path: Path, capsys) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: 5\n")
    assert cli(["podgroup-controller", "--kubeconfig", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pyscheduler podgroup-controller: kubeconfig {broken} is not usable:"), err


@pytest.mark.slow
async def test_the_command_keeps_status_and_stops_cleanly_on_sigterm(sim: SimCluster, tmp_path: Path) -> None:
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scheduler",
        "podgroup-controller",
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await sim.create(PODGROUPS, podgroup("train", 1))
        await sim.create("pods", member("train-0", "train", cpu="1", schedulerName="nobody"))
        await eventually(lambda: phase_is(sim, "Scheduling"), timeout=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
