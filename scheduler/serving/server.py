"""The scheduler's one port: probes (/healthz, /livez, /readyz), /metrics, /configz, debug paths.

HTTPS by default (``tls``), with every request authenticated and authorized through the API
server (``auth``, see :mod:`scheduler.serving.auth`); ``--plain-http`` serves plain HTTP without
either, for local use. Probe output follows kube-apiserver's health handlers, so operators read
it the same way: ``ok`` when every check passes, and with ``?verbose`` (always, on failure) one line
per check (``[+]ping ok``, ``[-]sched-handler-sync failed: reason withheld``) and a final
``readyz check passed`` / ``readyz check failed``. Reasons stay out of the response (probes are
open to anyone) and go to the log; ``?exclude=name`` skips a check.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from scheduler.serving.auth import DelegatedAuth
from scheduler.serving.tls import ServingCertificate, peer_identity

if TYPE_CHECKING:
    from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

# A named check: the function returns None when healthy, else a short reason (logged, not served).
Check = tuple[str, Callable[[], str | None]]
# A GET handler of an extra path
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DEFAULT_PORT = 10251
_TEXT = "text/plain"
_HEADERS = {"X-Content-Type-Options": "nosniff"}


def _ping() -> str | None:
    return None


def _with_ping(checks: Sequence[Check]) -> list[Check]:
    """Every probe starts with ``ping`` (the process answers at all), as kube-apiserver's do."""
    return list(checks) if any(name == "ping" for name, _ in checks) else [("ping", _ping), *checks]


class StatusServer:
    """One aiohttp server for probes, metrics and the effective configuration.

    ``health_checks`` back /healthz and /livez, ``ready_checks`` back /readyz; each list is
    prefixed by ``ping`` unless it already has a check of that name.
    Checks run on every probe, so they must be cheap and must not block.
    """

    __slots__ = ("_app", "_auth", "_configz", "_host", "_metrics", "_port", "_probes", "_runner", "_tls")

    def __init__(
        self,
        bind_address: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        *,
        metrics: SchedulerMetrics | None = None,
        configz: Callable[[], Mapping[str, Any]] | None = None,
        health_checks: Sequence[Check] = (),
        ready_checks: Sequence[Check] = (),
        tls: ServingCertificate | None = None,
        auth: DelegatedAuth | None = None,
        routes: Mapping[str, Handler] | None = None,
    ) -> None:
        """``routes``: more GET paths (the debug ones), guarded as /metrics is."""
        self._host = bind_address
        self._port = port
        self._tls = tls
        self._auth = auth
        self._metrics = metrics
        self._configz = configz
        health = _with_ping(health_checks)
        self._probes: dict[str, list[Check]] = {
            "healthz": health,
            "livez": list(health),
            "readyz": _with_ping(ready_checks),
        }
        for probe, checks in self._probes.items():
            names = [name for name, _ in checks]
            if len(set(names)) != len(names):
                raise ValueError(f"duplicate check names for /{probe}: {names}")
        self._runner: web.AppRunner | None = None
        self._app = self._build_app(routes or {})

    @property
    def port(self) -> int:
        """The bound port (the chosen one when constructed with port 0), once started."""
        if self._runner is None:
            return self._port
        for address in self._runner.addresses:
            if isinstance(address, tuple) and len(address) >= 2:
                return int(address[1])
        return self._port

    @property
    def url(self) -> str:
        host = self._host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}"

    async def start(self) -> None:
        if self._runner is not None:
            return
        runner = web.AppRunner(self._app, access_log=None, handle_signals=False)
        await runner.setup()
        context = self._tls.context if self._tls is not None else None
        try:
            await web.TCPSite(runner, self._host, self._port, ssl_context=context).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        log.info("serving /healthz, /livez, /readyz, /metrics and /configz on %s", self.url)
        if self._tls is None and self._host not in ("127.0.0.1", "::1", "localhost"):
            log.warning(
                "plain HTTP without authentication on %s: anyone who can reach it reads /metrics", self.url
            )

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # ---------------------------------------------------------------------------------- routes

    def _build_app(self, routes: Mapping[str, Handler]) -> web.Application:
        app = web.Application(middlewares=[self._authenticate] if self._auth is not None else [])
        for path, handler in routes.items():
            app.router.add_get(path, handler)
        for probe in self._probes:
            app.router.add_get(f"/{probe}", self._probe_handler(probe))
            app.router.add_get(f"/{probe}/{{check}}", self._single_check_handler(probe))
        app.router.add_get("/metrics", self._serve_metrics)
        app.router.add_get("/configz", self._serve_configz)
        return app

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        assert self._auth is not None
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        decision = await self._auth.decide(
            request.method, request.path, request.headers.get("Authorization"), peer_identity(ssl_object)
        )
        if decision.status != 200:
            return _status_response(decision.status, decision.message)
        return await handler(request)

    def _probe_handler(self, probe: str) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.Response:
            return self.evaluate(probe, request.query.getall("exclude", []), "verbose" in request.query)

        return handle

    def _single_check_handler(self, probe: str) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.Response:
            name = request.match_info["check"]
            for check_name, check in self._probes[probe]:
                if check_name == name:
                    reason = _run(check_name, check)
                    if reason is None:
                        return web.Response(text="ok", content_type=_TEXT, headers=_HEADERS)
                    return web.Response(
                        status=503,
                        text=f"internal server error: {reason}\n",
                        content_type=_TEXT,
                        headers=_HEADERS,
                    )
            raise web.HTTPNotFound(text=f"no check named {name!r} in /{probe}\n")

        return handle

    def evaluate(self, probe: str, exclude: Sequence[str] = (), verbose: bool = False) -> web.Response:
        """Run one probe's checks and render the kube-apiserver style answer (200 or 503)."""
        excluded = set(exclude)
        lines: list[str] = []
        failed: list[str] = []
        for name, check in self._probes[probe]:
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok")
                continue
            reason = _run(name, check)
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                lines.append(f"[-]{name} failed: reason withheld")
                failed.append(f"{name}: {reason}")
        if excluded:
            quoted = ",".join(f'"{name}"' for name in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        if failed:
            log.info("/%s check failed: %s", probe, "; ".join(failed))
            body = "\n".join([*lines, f"{probe} check failed"]) + "\n"
            return web.Response(status=503, text=body, content_type=_TEXT, headers=_HEADERS)
        body = "\n".join([*lines, f"{probe} check passed"]) + "\n" if verbose else "ok"
        return web.Response(text=body, content_type=_TEXT, headers=_HEADERS)

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        if self._metrics is None:
            raise web.HTTPNotFound(text="metrics are disabled\n")
        body, content_type = self._metrics.render(request.headers.get("Accept"))
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _serve_configz(self, request: web.Request) -> web.Response:
        if self._configz is None:
            raise web.HTTPNotFound(text="configz is disabled\n")
        # Same envelope as kube-scheduler's /configz: the configuration under "componentconfig".
        body = orjson.dumps({"componentconfig": self._configz()}, option=orjson.OPT_NON_STR_KEYS)
        return web.Response(body=body, content_type="application/json")


def _status_response(code: int, message: str) -> web.Response:
    """A ``kind: Status`` failure, as the API server answers 401, 403 and 429 (with a
    Retry-After, as its in-flight limit sends)."""
    reason = {401: "Unauthorized", 403: "Forbidden", 429: "TooManyRequests"}.get(code, "Failure")
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    headers = {"Retry-After": "1"} if code == 429 else None
    return web.Response(
        status=code, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def _run(name: str, check: Callable[[], str | None]) -> str | None:
    """A check that raises counts as failed, with the exception as its reason."""
    try:
        return check()
    except Exception as error:
        log.warning("health check %s raised: %r", name, error)
        return f"check raised {error!r}"
