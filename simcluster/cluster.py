"""`SimCluster`: the simulated API server with its nodes, kubelet and controllers, as one object.

Tests use it in-process (`async with SimCluster(...) as sim`), the CLI serves it until a signal.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
import yaml
from aiohttp import web

from simcluster.access import ADMIN_TOKEN, AccessTable
from simcluster.api import Api
from simcluster.controllers import WorkloadControllers
from simcluster.disruption import DisruptionController
from simcluster.dra_attach import DeviceAttacher
from simcluster.dra_drivers import DevicePublisher
from simcluster.faults import FaultInjector
from simcluster.jobs import JobController
from simcluster.kubelet import SimKubelet
from simcluster.nodes import build_fleet
from simcluster.resourceclaims import ResourceClaimController
from simcluster.resources import BY_STORE_NAME, Kinds
from simcluster.server import SimServer
from simcluster.store import Store
from simcluster.volumes import VolumeControllers

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CONTEXT = "pyscheduler-sim"


class SimCluster:
    """A local Kubernetes API endpoint on 127.0.0.1 with `nodes` simulated nodes."""

    def __init__(
        self,
        nodes: int = 3,
        kubelet: bool = True,
        node_template: str | Path | dict[str, Any] | list[Any] | None = None,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        kubelet_delay: float = 0.05,
        bookmark_interval: float = 5.0,
        history_size: int = 20_000,
        controllers: bool = True,
        access: AccessTable | dict[str, Any] | str | Path | None = None,
        volume_controllers: bool | None = None,
        disabled_apis: Iterable[str] = (),
        claim_controller: bool | None = None,
    ) -> None:
        """`access`: who may do what (see `simcluster.access`): a table, its YAML form as a
        dict or a file; by default everyone may do everything. `volume_controllers` (default:
        as `controllers`) runs the PV controller and provisioner alone, e.g. for a simulation
        that creates workloads' pods itself but needs claims bound as a cluster binds them;
        `claim_controller` (default: as `controllers`) likewise makes pods' ResourceClaims from
        their templates.
        `disabled_apis`: built-in group/versions the endpoint does not serve, as a cluster whose API
        server leaves them off (e.g. ``("scheduling.k8s.io/v1alpha2",)``, alpha on most clusters)."""
        self.host = host
        self.port = port
        self.store = Store(history_size=history_size)
        self.api = Api(self.store, Kinds(disabled_apis))
        self.faults = FaultInjector(self.store)
        if isinstance(access, str | Path):
            access = AccessTable.from_file(access)
        elif isinstance(access, dict):
            access = AccessTable().load(access)
        self.access = access if access is not None else AccessTable()
        self.server = SimServer(
            self.api, self.faults, bookmark_interval=bookmark_interval, access=self.access
        )
        # fail early on a bad template
        self._node_objects, self._node_devices = build_fleet(nodes, node_template)
        self._kubelet_enabled = kubelet
        self._kubelet_delay = kubelet_delay
        self._controllers_enabled = controllers
        self._volume_controllers_enabled = controllers if volume_controllers is None else volume_controllers
        self._claim_controller_enabled = controllers if claim_controller is None else claim_controller
        self.kubelet: SimKubelet | None = None
        self.controllers: WorkloadControllers | None = None
        self.volumes: VolumeControllers | None = None
        self.disruption: DisruptionController | None = None
        self.jobs: JobController | None = None
        self.claims: ResourceClaimController | None = None
        self.drivers: DevicePublisher | None = None
        self.attacher: DeviceAttacher | None = None
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> SimCluster:
        for ns in SYSTEM_NAMESPACES:
            self.api.create(BY_STORE_NAME["namespaces"], None, {"metadata": {"name": ns}})
        for node in self._node_objects:
            self.api.create(BY_STORE_NAME["nodes"], None, node)
        self.drivers = DevicePublisher(self.api, self._node_devices)
        self.attacher = DeviceAttacher(self.api, self._node_devices)
        if self._kubelet_enabled:
            self.kubelet = SimKubelet(self.api, self._kubelet_delay)
        if self._controllers_enabled:
            self.controllers = WorkloadControllers(self.api)
            self.disruption = DisruptionController(self.api)
            self.jobs = JobController(self.api)
        if self._claim_controller_enabled:
            self.claims = ResourceClaimController(self.api)
        if self._volume_controllers_enabled:
            self.volumes = VolumeControllers(self.api)
        await self._serve()
        return self

    async def _serve(self) -> None:
        self._runner = web.AppRunner(self.server.app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock)
        await site.start()

    async def restart(self, down_for: float = 0.0) -> None:
        """Restart the API server in place, as a real one restarting behind the same address:
        every connection and watch is dropped, the watch history is gone (a resume answers 410,
        so clients relist), the objects are kept. Nothing answers for ``down_for`` seconds."""
        self.faults.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        # A restarted server's watch cache starts after the last write (as etcd moves on with the
        # restart's own writes): every resume, even from the newest version, gets 410.
        self.store.next_revision()
        self.store.compact()
        if down_for > 0:
            await asyncio.sleep(down_for)
        await self._serve()

    async def stop(self) -> None:
        self.faults.drop_watches()  # let streaming handlers finish instead of being cancelled
        if self.kubelet:
            self.kubelet.close()
        if self.controllers:
            self.controllers.close()
        if self.volumes:
            self.volumes.close()
        if self.disruption:
            self.disruption.close()
        if self.jobs:
            self.jobs.close()
        if self.claims:
            self.claims.close()
        for driver in (self.drivers, self.attacher):
            if driver is not None:
                driver.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SimCluster:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # ---- conveniences for tests and tools ----------------------------------------------

    def kubeconfig(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": CONTEXT, "cluster": {"server": self.url}}],
            "users": [{"name": CONTEXT, "user": {"token": ADMIN_TOKEN}}],
            "contexts": [
                {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"}}
            ],
            "current-context": CONTEXT,
        }

    def write_kubeconfig(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        return path

    def load(self, objects: Mapping[str, Iterable[Any]]) -> list[str]:
        """Restore objects in bulk, keyed by store name ("pods", "persistentvolumes", ...), as read
        from a cluster: kept as they are (status, uid, nodeName), without watch events or
        controller reactions (see `Api.load`); namespaces first, so their members find them,
        then CustomResourceDefinitions, served at once so their custom resources load too.
        Returns one line per object skipped or resource not served."""
        problems: list[str] = []
        first = ("namespaces", "customresourcedefinitions")
        for resource in sorted(objects, key=lambda name: first.index(name) if name in first else len(first)):
            rt = self.api.kinds.by_store_name.get(resource)
            if rt is None or not rt.stored:
                problems.append(f"{resource}: skipped, the local endpoint does not serve it")
                continue
            problems.extend(self.api.load(rt, objects[resource]))
        return problems

    async def create(
        self, resource: str, obj: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """Create like an HTTP POST would (defaults, validation, events); returns the stored object."""
        rt = self.api.resource(resource)
        ns = namespace or (obj.get("metadata") or {}).get("namespace") if rt.namespaced else None
        return orjson.loads(self.api.create(rt, ns, obj).raw)
