"""SchedulerApp, what `pyscheduler run` starts: wiring and lifecycle (kube-scheduler's server.go
Run, in asyncio). The command's flags and exit codes are in ``scheduler.cmd.run``.

config → client → cache, queue, profiles → informers → status server → wait for handler sync
→ leader election (or not) → scheduling loop; SIGTERM drains bindings, releases the lease and
exits 0; a leader that loses its lease stops scheduling at once and exits 1 so it restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import random
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

from scheduler import __version__
from scheduler.api import Node, Pod
from scheduler.api.kinds import decoder_for
from scheduler.apidispatcher import RELEVANCES, APIDispatcher, EventRecorder, PodStatusUpdates
from scheduler.build import build_scheduler
from scheduler.client.backoff import Backoff
from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.client.informer import EventHandler, Informer, InformerGroup
from scheduler.client.outage import OutageLog
from scheduler.client.rest import KubeClient, TransportError
from scheduler.client.transport import ProxyError
from scheduler.config import SchedulerConfiguration
from scheduler.eventhandlers import DeviceTaintRuleEvents, MalformedPods, ResourceEvents
from scheduler.explain.endpoint import explain_handler
from scheduler.extender import HTTPExtender, close_all
from scheduler.features import (
    DEFAULT_FEATURES,
    DRA_DEVICE_TAINT_RULES,
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    FeatureGates,
)
from scheduler.framework import BackgroundPlugin, ObjectLister, PluginFactory
from scheduler.leaderelection import LeaderElector, LeadershipLost, default_identity
from scheduler.metrics import AsyncAPICallMetrics, SchedulerMetrics
from scheduler.plugins.gangscheduling import PODGROUPS, WORKLOAD_PLUGINS
from scheduler.plugins.registry import in_tree_registry
from scheduler.policy import (
    available_plugins,
    refuse_shadow,
    without_plugins,
)
from scheduler.queue.scheduling_queue import ACTIVE
from scheduler.schedule_one import Scheduler
from scheduler.serving import DelegatedAuth, ServingCertificate, StatusServer
from scheduler.serving.auth import MAX_REVIEWS_IN_FLIGHT, REVIEW_BURST, REVIEW_QPS
from scheduler.serving.options import ServingOptions
from scheduler.serving.server import Check, Handler
from scheduler.shadow import ShadowMode, ShadowPodEvents
from scheduler.watched import DEVICE_TAINT_RULES, PLUGIN_RESOURCES

log = logging.getLogger("scheduler")

SHUTDOWN_GRACE_SECONDS = 10.0
# Upstream's informer excludes finished pods: they hold no resources.
ACTIVE_PODS_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
# Young-generation collections every 50,000 allocations instead of 700: a scheduling cycle
# allocates a few hundred short-lived objects, and each collection costs more than it frees.
GC_THRESHOLDS = (50_000, 20, 100)


def relax_garbage_collector() -> None:
    """Before the initial lists: with the default thresholds, decoding 100,000 pods triggers a
    young collection every 700 allocations and full ones that walk everything cached so far
    again, a third of the start-up's CPU at 15,000 nodes / 100,000 pods (bench.startup)."""
    gc.set_threshold(*GC_THRESHOLDS)


def tune_garbage_collector() -> None:
    """Once the initial lists are in the cache: what they built lives until it is deleted (and
    is then freed by reference counting), so it is moved out of the cycle collector's sight —
    every full collection would walk every cached pod and node again. In process, collections
    took ~3% of the scheduling CPU before this (bench.decisions, 1,000 nodes).

    Only the young generations are collected first: the lists leave no cycles behind in the old
    one (a full collection there found none at 15,000 nodes / 100,000 pods) and walking it would
    cost ~0.9 s before the first binding."""
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class SchedulerApp:
    """Everything `pyscheduler run` starts, with its lifecycle."""

    def __init__(
        self,
        config: SchedulerConfiguration,
        *,
        kubeconfig: str | None = None,
        serving: ServingOptions | None = None,
        registry: Mapping[str, PluginFactory] | None = None,
        identity: str | None = None,
        watches: Sequence[str] = (),
        features: FeatureGates = DEFAULT_FEATURES,
        tune_gc: bool = False,
        rng: random.Random | None = None,
        shadow: str = "",
    ) -> None:
        """``rng`` breaks ties between equally scored nodes (``pyscheduler simulate`` seeds it so
        a simulation repeats); by default a fresh random one."""
        self.config = config
        self.features = features
        self.rng = rng
        # process-wide: only the process `pyscheduler run` starts (not tests running apps in theirs)
        self.tune_gc = tune_gc
        refusal = refuse_shadow(config, shadow)
        if refusal:
            raise ValueError(refusal)
        self.shadow_name = shadow  # shadow mode: the other scheduler whose pods are only decided
        self.shadow: ShadowMode | None = None
        self.watches = list(watches)  # kinds plugins read beyond the built-in ones
        self.kubeconfig = kubeconfig or config.client_connection.kubeconfig or None
        self.serving = serving or ServingOptions()
        self.registry = dict(registry or in_tree_registry())
        self.identity = identity or default_identity()
        self.metrics = SchedulerMetrics()
        self.outage = OutageLog()
        self.shutting_down = asyncio.Event()
        self._built = asyncio.Event()  # everything built: the informers exist
        self._stopped = asyncio.Event()  # run() has returned
        self.exit_code = 0
        self._tasks: list[asyncio.Task[Any]] = []
        # background work that _build set up
        self._spawn_later: list[tuple[Coroutine[Any, Any, None], str]] = []
        self._review_clients: list[KubeClient] = []
        self.server: StatusServer | None = None
        self.scheduler: Scheduler | None = None
        self.extenders: list[HTTPExtender] = []
        self.elector: LeaderElector | None = None

    # ------------------------------------------------------------------ building

    async def _build(self) -> None:
        missing = available_plugins(self.config, self.registry)
        if missing:
            log.warning("default plugins not available in this build, left out: %s", ", ".join(missing))
        client_config = await load_client_config(self.kubeconfig)
        conn = self.config.client_connection
        self.client = KubeClient(client_config, qps=conn.qps, burst=conn.burst)
        await self._check_workload_api()
        # As kube-scheduler's, events and the lease have clients (token buckets) of their own:
        # a burst of bindings that drains the main bucket delays neither an event nor a renewal.
        events_client = self.client.sibling(qps=conn.qps, burst=conn.burst)
        lease_client = self.client.sibling(qps=conn.qps, burst=conn.burst)
        names = [p.scheduler_name for p in self.config.profiles]
        # One recorder per profile: events name the profile as their reporting controller.
        self.recorders = {
            name: EventRecorder(events_client, name, self.identity, outage=self.outage) for name in names
        }
        # kube-scheduler's APIDispatcher: pod status patches (conditions, nominations) in the background
        self.api_dispatcher = APIDispatcher(
            self.client,
            RELEVANCES,
            "status writer",
            max_in_flight=self.config.parallelism,
            outage=self.outage,
            metrics=AsyncAPICallMetrics(self.metrics.registry),
        )
        self.pod_status = PodStatusUpdates(self.api_dispatcher, self.client, self._status_of)
        self.recorder = _ProfileEvents(self.recorders)
        listers: dict[str, ObjectLister] = {}
        parts = build_scheduler(
            self.config,
            self.registry,
            self.client,
            events=self.recorder,
            status=self.pod_status,
            current_pod=self._current_pod,
            listers=listers,
            metrics=self.metrics,
            features=self.features,
            rng=self.rng,
        )
        self.cache, self.queue, self.frameworks = parts.cache, parts.queue, parts.frameworks
        self.extenders = parts.extenders
        pod_events: EventHandler[Pod] = parts.pod_events
        if self.shadow_name:
            first = parts.frameworks[names[0]]
            self.shadow = ShadowMode(
                self.shadow_name, parts.scheduler, first, self.metrics.registry, busy=self._has_pods_ready
            )
            pod_events = ShadowPodEvents(self.shadow, pod_events)
        node_events: EventHandler[Node] = parts.node_events
        decode_pod: Callable[[dict[str, Any]], Pod] = Pod.from_dict
        decode_node: Callable[[dict[str, Any]], Node] = Node.from_dict
        if parts.api_objects is not None:  # extenders are sent the objects' API JSON
            kept = parts.api_objects
            decode_pod, pod_events = kept.pods.decoder(decode_pod), kept.pods.handler(pod_events)
            decode_node, node_events = kept.nodes.decoder(decode_node), kept.nodes.handler(node_events)
        self.malformed_pods = MalformedPods(names, self.queue, self.recorder, self.pod_status)
        # the kinds plugins read, before the pods: a pod reaches the queue (and PreEnqueue)
        # once the claims and other objects it names are in their stores, so that pods whose
        # claims exist before the start are not held, each to be let go by a claim's add
        plugin_informers: list[Informer[Any]] = []
        for plural, (path, resource) in PLUGIN_RESOURCES.items():
            handler = ResourceEvents(self.queue, resource) if resource else _Ignore()
            decode = decoder_for(plural)
            plugin_informers.append(
                Informer(self.client, path, decode=decode, handler=handler, name=plural, outage=self.outage)
            )
        self.pod_informer = Informer(
            self.client,
            "/api/v1/pods",
            decode=decode_pod,
            handler=pod_events,
            params={"fieldSelector": ACTIVE_PODS_SELECTOR},
            name="pods",
            outage=self.outage,
            malformed=self.malformed_pods,
            deliver_after=[informer.synced for informer in plugin_informers],
        )
        informers: list[Informer[Any]] = [
            self.pod_informer,
            Informer(
                self.client,
                "/api/v1/nodes",
                decode=decode_node,
                handler=node_events,
                name="nodes",
                outage=self.outage,
            ),
            *plugin_informers,
        ]
        if self.features.enabled(DRA_DEVICE_TAINT_RULES):
            plural, path, resource = DEVICE_TAINT_RULES
            rules = DeviceTaintRuleEvents(self.queue, resource)
            informers.append(
                Informer(
                    self.client,
                    path,
                    decode=decoder_for(plural),
                    handler=rules,
                    name=plural,
                    outage=self.outage,
                )
            )
        for kind in self.watches:  # what out-of-tree plugins declared: each change is a cluster event
            informers.append(
                Informer(
                    self.client,
                    await self._served_path(kind),
                    decode=dict,
                    handler=ResourceEvents(self.queue, kind),
                    name=kind,
                    outage=self.outage,
                )
            )
        listers.update({informer.name: informer.store for informer in informers})
        self.informers = InformerGroup(informers)
        self.scheduler = parts.scheduler  # last: tests wait for it to see a fully built app
        lease = self.config.leader_election
        if lease.leader_elect:
            namespace = lease.resource_namespace or _own_namespace()
            self.elector = LeaderElector(
                lease_client,
                namespace=namespace,
                name=lease.resource_name,
                identity=self.identity,
                lease_duration=lease.lease_duration,
                renew_deadline=lease.renew_deadline,
                retry_period=lease.retry_period,
                metrics=self.metrics,
            )
        health: list[Check] = [("ping", lambda: None)]
        if self.elector is not None:
            health.append(("leaderElection", self.elector.check_health))
        tls, auth = await self._secure_serving()
        self.server = StatusServer(
            self.serving.bind_address,
            self.serving.port,
            tls=tls,
            auth=auth,
            metrics=self.metrics,
            configz=self.config.to_dict,
            health_checks=health,
            ready_checks=[
                ("sched-handler-sync", self._handler_sync_check),
                ("shutdown", self._shutdown_check),
            ],
            routes=self._debug_routes(),
        )
        self._built.set()

    def _has_pods_ready(self) -> bool:
        """The scheduling loop runs here (no election, or leading) and has pods ready to pop:
        shadow mode's decisions wait meanwhile."""
        leading = self.elector is None or self.elector.is_leader
        return leading and self.queue.pending()[ACTIVE] > 0

    def _debug_routes(self) -> dict[str, Handler]:
        """/debug/explain (and /debug/shadow in shadow mode), guarded as /metrics is."""
        assert self.scheduler is not None, "the debug paths are set up after the scheduler"
        routes: dict[str, Handler] = {
            "/debug/explain": explain_handler(self.scheduler, self.pod_informer.store.get)
        }
        if self.shadow is not None:
            routes["/debug/shadow"] = self.shadow.handle
        return routes

    async def _check_workload_api(self) -> None:
        """With GenericWorkload, or a profile enabling a workload plugin, PodGroups are watched.
        Where the cluster does not serve scheduling.k8s.io/v1alpha2 (alpha APIs are off on most
        clusters) say so once and run without the workload plugins and the pod-group cycle."""
        enabled = {name for profile in self.config.profiles for name in profile.plugins.enabled_names()}
        if not self.features.enabled(GENERIC_WORKLOAD) and not enabled & set(WORKLOAD_PLUGINS):
            return
        try:
            await self._served_path(PODGROUPS)
        except MissingResource:
            log.warning(
                "the cluster does not serve %s: gang scheduling is off (GenericWorkload, GangScheduling "
                "and TopologyAwareWorkloadScheduling), running without the plugins %s",
                PODGROUPS,
                ", ".join(WORKLOAD_PLUGINS),
            )
            self.features = FeatureGates(
                {
                    **self.features.overrides,
                    GENERIC_WORKLOAD: False,
                    GANG_SCHEDULING: False,
                    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: False,
                }
            )
            without_plugins(self.config, WORKLOAD_PLUGINS)
            self.watches = [kind for kind in self.watches if kind != PODGROUPS]
            return
        if PODGROUPS not in self.watches:  # the pod-group cycle and the plugins read PodGroups
            self.watches.append(PODGROUPS)

    async def _served_path(self, kind: str) -> str:
        """The collection path of a "group/version/plural" kind, once discovery answers (retried
        while the API server cannot be reached); MissingResource when the cluster does not serve
        it, since a plugin needs it and start-up cannot go on."""
        group_version, _, plural = kind.rpartition("/")
        if not group_version or not plural:
            raise MissingResource(f'a plugin watches {kind!r}, which is not "group/version/plural"')
        base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        backoff = Backoff()
        while True:
            try:
                response = await self.client.request("GET", base)
            except TransportError as exc:
                self.outage.failed(f"discovery {base}", exc)
                await asyncio.sleep(backoff.next())
                continue
            if response.status < 500 and response.status != 429:
                break
            self.outage.failed(f"discovery {base}", f"HTTP {response.status}")
            await asyncio.sleep(backoff.next())
        self.outage.recovered(f"discovery {base}")
        resources = (response.body or {}).get("resources") or () if response.status == 200 else ()
        if plural not in {resource.get("name") for resource in resources}:
            raise MissingResource(f"a plugin watches {kind}, which the cluster does not serve")
        return f"{base}/{plural}"

    async def _secure_serving(self) -> tuple[ServingCertificate | None, DelegatedAuth | None]:
        """HTTPS and delegated authentication/authorization, unless --plain-http."""
        if self.serving.plain_http:
            return None, None
        tls = ServingCertificate(self.serving.tls)
        self._spawn_later.append((tls.watch(), "serving certificate reloader"))
        authn = await self._review_client(self.serving.authentication_kubeconfig)
        authz = await self._review_client(self.serving.authorization_kubeconfig)
        return tls, DelegatedAuth(authn, authz, self.serving.auth)

    async def _review_client(self, kubeconfig: str) -> KubeClient:
        """A client of its own for one kind of review, to the cluster of ``kubeconfig`` or the
        scheduler's: as upstream's delegating authenticator and authorizer, with its own token
        bucket (QPS 200, burst 400) and connections, so whoever reaches the port cannot spend
        the budget that bindings and status writes are paced by."""
        if not kubeconfig or kubeconfig == self.kubeconfig:
            config = self.client.config
        else:
            config = await load_client_config(kubeconfig)
        client = KubeClient(config, qps=REVIEW_QPS, burst=REVIEW_BURST, max_connections=MAX_REVIEWS_IN_FLIGHT)
        self._review_clients.append(client)
        return client

    def _current_pod(self, pod: Pod) -> Pod | None:
        return self.pod_informer.store.get(pod.key)

    def _status_of(self, pod: Pod) -> Pod | None:
        """The pod a status write is computed against: a malformed pod is in no store."""
        return self.malformed_pods.get(pod.key) or self._current_pod(pod)

    def ready(self) -> bool:
        """What /readyz answers: built, every informer synced, not shutting down."""
        if not self._built.is_set():
            return False
        return self._handler_sync_check() is None and self._shutdown_check() is None

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until ``ready()``: True then; False after ``timeout`` seconds, or as soon as the
        app stops or begins shutting down without having become ready."""
        try:
            async with asyncio.timeout(timeout):
                if await self._unless_stopped(self._built.wait()):
                    await self._unless_stopped(self.informers.wait_synced())
        except TimeoutError:
            return False
        return self.ready()

    async def _unless_stopped(self, work: Awaitable[Any]) -> bool:
        """Await ``work`` unless the app stops or begins shutting down first; whether it finished."""
        job = asyncio.ensure_future(work)
        ends = [asyncio.ensure_future(event.wait()) for event in (self._stopped, self.shutting_down)]
        try:
            done, _ = await asyncio.wait({job, *ends}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in (job, *ends):
                future.cancel()
        if job not in done:
            return False
        job.result()  # an informer that died re-raises here
        return True

    def _handler_sync_check(self) -> str | None:
        pending = [name for name, done in self.informers.synced().items() if not done]
        return f"waiting for informers: {', '.join(pending)}" if pending else None

    def _shutdown_check(self) -> str | None:
        return "shutting down" if self.shutting_down.is_set() else None

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT (exit 0) or a lost lease (exit 1)."""
        try:
            return await self._run()
        finally:
            self._stopped.set()

    async def _run(self) -> int:
        try:
            await self._build()
        except ClientConfigError as exc:
            log.error("cannot reach the cluster: %s", exc)
            return 1
        except ProxyError as exc:  # a proxy variable of the environment that cannot be used
            log.error("cannot reach the cluster: %s", exc)
            return 2
        except MissingResource as exc:
            log.error("%s", exc)
            await self.client.close()
            return 2
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.shutting_down.set)
        try:
            await self.start()
            stop = asyncio.create_task(self.shutting_down.wait())
            work = asyncio.create_task(self._lead_and_schedule())
            done, _ = await asyncio.wait({stop, work}, return_when=asyncio.FIRST_COMPLETED)
            error = work.exception() if work in done else None
            if error is not None:
                raise error
            await self.shutdown(work)
        finally:
            await self.close()
        return self.exit_code

    async def load(self, timeout: float | None = None) -> bool:
        """Build everything and fill the cache and the queue from the informers' initial lists,
        serving and scheduling nothing (``pyscheduler explain``: read-only). False on timeout;
        ``close()`` afterwards."""
        await self._build()
        self.informers.start()
        return await self.informers.wait_synced(timeout)

    async def start(self) -> None:
        """Start the status server, the informers and the background loops (not scheduling)."""
        log.info(
            "pyscheduler %s starting as %s, profiles: %s",
            __version__,
            self.identity,
            ", ".join(self.frameworks),
        )
        assert self.server is not None, "start() runs after _build()"
        await self.server.start()
        if self.tune_gc:
            relax_garbage_collector()
        self.informers.start()
        self._spawn(self.queue.run(), "queue flusher")
        for name, recorder in self.recorders.items():
            self._spawn(recorder.run(), f"event recorder {name}")
        self._spawn(self.api_dispatcher.run(), "api dispatcher")
        self._spawn(self._expire_assumed_pods(), "assumed pod expiry")
        for coro, name in self._spawn_later:
            self._spawn(coro, name)
        self._spawn_later.clear()

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def _lead_and_schedule(self) -> None:
        await self.informers.wait_synced()
        if self.shadow is not None:  # deciding writes nothing: every replica shadows, leading or not
            self.shadow.start(self.pod_informer.store.list())
            self._spawn(self.shadow.run(), "shadow decisions")
        if self.tune_gc:
            tune_garbage_collector()
        log.info(
            "all informers synced; %d nodes, %d pods in the cache",
            self.cache.node_count(),
            self.cache.pod_count(),
        )
        if self.elector is None:
            await self._schedule()
            return
        try:
            await self.elector.run(self._on_started_leading)
        except LeadershipLost:
            log.error("leader election lost; stopping so that the pod restarts")
            self.exit_code = 1
            self.shutting_down.set()

    async def _on_started_leading(self) -> None:
        log.info("became the leader (%s); scheduling starts", self.identity)
        try:
            await self._schedule()
        except asyncio.CancelledError:
            # Shutting down while leading: the elector keeps renewing while bindings drain,
            # and releases the lease afterwards. A lost lease means stop at once.
            assert self.elector is not None  # it is the elector that calls this
            if not self.elector.lost.is_set():
                await self._drain_bindings()
            raise

    async def _schedule(self) -> None:
        """The scheduling loop, with the plugins' background work running beside it."""
        background = [
            asyncio.create_task(_background(plugin), name=f"plugin {plugin.name}")
            for fwk in self.frameworks.values()
            for plugin in fwk.plugins.values()
            if isinstance(plugin, BackgroundPlugin)
        ]
        assert self.scheduler is not None, "scheduling starts after _build()"
        try:
            await self.scheduler.run()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)

    async def _drain_bindings(self) -> None:
        assert self.scheduler is not None, "bindings are drained after _build()"
        if not await self.scheduler.wait_for_bindings(SHUTDOWN_GRACE_SECONDS):
            log.warning("some bindings were still in flight after %.0fs", SHUTDOWN_GRACE_SECONDS)

    async def shutdown(self, work: asyncio.Task[Any]) -> None:
        """Stop deciding at once, let bindings finish (bounded), release the lease."""
        log.info("shutting down")
        self.shutting_down.set()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await work
        if self.elector is None:
            await self._drain_bindings()
        with contextlib.suppress(Exception):
            await self.api_dispatcher.flush(timeout=2.0)
        for recorder in self.recorders.values():
            with contextlib.suppress(Exception):
                await recorder.flush(timeout=2.0)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.informers.stop()
        self.queue.close()
        if self.server is not None:
            await self.server.stop()
        for client in self._review_clients:
            await client.close()
        await close_all(self.extenders)
        await self.client.close()

    async def _expire_assumed_pods(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            for pod in self.cache.cleanup_expired_assumed_pods():
                log.warning("assumed pod %s expired: its binding was never confirmed", pod.key)


class _ProfileEvents:
    """Routes each event to the recorder of the pod's profile."""

    def __init__(self, recorders: Mapping[str, EventRecorder]) -> None:
        self.recorders = recorders
        self._first = next(iter(recorders.values()))

    def record(self, obj: Any, event_type: str, reason: str, action: str, note: str) -> None:
        name = getattr(obj, "scheduler_name", "")
        self.recorders.get(name, self._first).record(obj, event_type, reason, action, note)


async def _background(plugin: BackgroundPlugin) -> None:
    try:
        await plugin.run_in_background()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("the background work of plugin %s stopped with an error", plugin.name)


class MissingResource(Exception):
    """A kind a plugin needs is not served by the cluster (exit 2: nothing to retry)."""


class _Ignore:
    """Handler for kinds that plugins only read through their listers."""

    def on_add(self, obj: object) -> None:
        pass

    def on_update(self, old: object, new: object) -> None:
        pass

    def on_delete(self, obj: object) -> None:
        pass


def _own_namespace() -> str:
    """The namespace this pod runs in (downward API, then the service account), else default."""
    namespace = os.environ.get("POD_NAMESPACE")
    if namespace:
        return namespace
    with contextlib.suppress(OSError), open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
        return f.read().strip()
    return "default"


__all__ = ["MissingResource", "SchedulerApp"]
