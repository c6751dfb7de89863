"""``pyscheduler run`` with extenders, against the local API endpoint over real HTTP(S): a TLS
extender that filters, prioritizes and binds the pods asking for its resource, a plain one
sent whole nodes, and an ignorable one that always fails."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from pathlib import Path
from typing import Any

from scheduler.app import SchedulerApp
from scheduler.config import parse_config
from simcluster import SimCluster
from tests.support.cluster import eventually, local_serving, node_of, pod_manifest
from tests.support.extender import ExtenderServer, make_pki

WIDGET = "example.com/widget"


class WidgetExtender:
    """Keeps widget pods off the first node, prefers the last one, binds them itself."""

    def __init__(self, sim: SimCluster, nodes: list[str]) -> None:
        self.sim = sim
        self.banned, self.favourite = nodes[0], nodes[-1]

    def filter(self, body: dict[str, Any]) -> dict[str, Any]:
        names = body["NodeNames"]
        return {
            "NodeNames": [n for n in names if n != self.banned],
            "FailedNodes": {self.banned: "no widgets on this node"} if self.banned in names else {},
        }

    def prioritize(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"Host": n, "Score": 10 if n == self.favourite else 0} for n in body["NodeNames"]]

    def bind(self, body: dict[str, Any]) -> dict[str, Any]:
        binding = {
            "metadata": {"name": body["PodName"], "uid": body["PodUID"]},
            "target": {"name": body["Node"]},
        }
        self.sim.api.bind(body["PodNamespace"], body["PodName"], binding)
        return {}


def widget_pod(name: str) -> dict[str, Any]:
    manifest = pod_manifest(name)
    manifest["spec"]["containers"][0]["resources"]["limits"] = {WIDGET: "1"}
    return manifest


async def run_app(config: Any, sim: SimCluster, tmp_path: Path) -> tuple[SchedulerApp, asyncio.Task[int]]:
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    app = SchedulerApp(config, kubeconfig=str(kubeconfig), serving=local_serving())
    task = asyncio.create_task(app.run())
    assert await app.wait_ready(15), "the scheduler never became ready"
    return app, task


async def stop_app(app: SchedulerApp, task: asyncio.Task[int]) -> None:
    app.shutting_down.set()
    with contextlib.suppress(asyncio.CancelledError):
        assert await asyncio.wait_for(task, 15) == 0


async def test_the_scheduler_places_pods_through_tls_plain_and_failing_ignorable_extenders(tmp_path):
    pki = make_pki()
    server_tls = pki.server_context(tmp_path)
    async with SimCluster(nodes=3, kubelet=True, bookmark_interval=0.5) as sim:
        nodes = sorted(n["metadata"]["name"] for n in sim.store.list("nodes"))
        widgets = WidgetExtender(sim, nodes)
        handlers = {"filter": widgets.filter, "prioritize": widgets.prioritize, "bind": widgets.bind}
        async with (
            ExtenderServer(handlers, tls=server_tls) as tls_extender,
            ExtenderServer({"prioritize": lambda body: []}) as plain,
            ExtenderServer({"filter": lambda body: (500, {})}) as broken,
        ):
            config = parse_config(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": False},
                    "podInitialBackoffSeconds": 1,
                    "podMaxBackoffSeconds": 1,
                    "extenders": [
                        {"urlPrefix": broken.url, "filterVerb": "filter", "ignorable": True},
                        {
                            "urlPrefix": tls_extender.url,
                            "filterVerb": "filter",
                            "prioritizeVerb": "prioritize",
                            "weight": 5,
                            "bindVerb": "bind",
                            "nodeCacheCapable": True,
                            "enableHTTPS": True,
                            "tlsConfig": {
                                "caData": base64.b64encode(pki.ca).decode(),
                                "serverName": "extender.test",
                            },
                            "managedResources": [{"name": WIDGET, "ignoredByScheduler": True}],
                            "httpTimeout": "2s",
                        },
                        {"urlPrefix": plain.url, "prioritizeVerb": "prioritize", "weight": 1},
                    ],
                }
            )
            app, task = await run_app(config, sim, tmp_path)
            for manifest in (widget_pod("widget-a"), widget_pod("widget-b"), pod_manifest("plain")):
                await sim.create("pods", manifest)
            await eventually(lambda: all(node_of(sim, p) for p in ("widget-a", "widget-b", "plain")))
            await stop_app(app, task)

        # the widget pods went where the TLS extender wanted and it bound them itself
        assert node_of(sim, "widget-a") == node_of(sim, "widget-b") == widgets.favourite
        assert sorted(b["PodName"] for b in tls_extender.bodies("bind")) == ["widget-a", "widget-b"]
        # the plain pod never reached it (it asks for no widget) and was bound by DefaultBinder
        assert "plain" not in tls_extender.pods_sent("filter") + tls_extender.pods_sent("prioritize")
        # the extender sent whole nodes got the informer's Node objects
        sent = plain.bodies("prioritize")[0]["Nodes"]["items"]
        assert {n["metadata"]["name"] for n in sent} <= set(nodes)
        assert all(n["status"]["allocatable"] for n in sent)
        # the broken ignorable extender was asked about every pod and blocked none
        assert sorted(broken.pods_sent("filter")) == ["plain", "widget-a", "widget-b"]
