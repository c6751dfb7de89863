"""`pyscheduler explain POD`: why a pod is pending, or where it would go, and what would help.

Stand-alone (default): reads the cluster read-only (the informers' initial lists), builds the
profiles from ``--config`` (upstream's defaults without one) and evaluates the pod with the real
framework. With ``--server URL`` a running scheduler answers from its own cache
(``/debug/explain``). Exit codes: 0 answered, 1 the pod cannot be explained (not found, not
pending, another scheduler's) or the cluster/server cannot be reached, 2 bad flags or config.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import orjson

from scheduler import logs
from scheduler.app import MissingResource, SchedulerApp
from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.cmd.flags import add_plugin_arguments
from scheduler.explain.evaluate import explain_pod
from scheduler.explain.lookup import ExplainRefused, pending_pod
from scheduler.explain.model import Explanation
from scheduler.explain.remote import RemoteError, ask_server
from scheduler.explain.render import render
from scheduler.serving.options import ServingOptions
from scheduler.startup import StartupError, scheduler_setup

LIST_TIMEOUT = 60.0  # seconds for the initial lists


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", metavar="POD", help="the pod's name")
    parser.add_argument(
        "-n",
        "--namespace",
        default="",
        help="the pod's namespace (default: the kubeconfig context's, as kubectl, else default)",
    )
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="table (default) or json"
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then in-cluster)")
    parser.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's defaults)")
    parser.add_argument("--profile", default="", help="evaluate with this profile (any pod, any scheduler)")
    add_plugin_arguments(parser)
    remote = parser.add_argument_group("asking a running scheduler (--server)")
    remote.add_argument(
        "--server", default="", metavar="URL", help="the scheduler's serving URL (https://host:10251)"
    )
    remote.add_argument("--token", default="", help="bearer token (default: the kubeconfig's)")
    trust = remote.add_mutually_exclusive_group()
    trust.add_argument(
        "--certificate-authority", default="", metavar="FILE", help="CA that signs its certificate"
    )
    trust.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="do not verify the scheduler's certificate"
    )


def main(args: argparse.Namespace) -> int:
    logs.configure(0, "text")
    return asyncio.run(run(args))


async def run(args: argparse.Namespace) -> int:
    """The whole command in a running event loop (tests call it directly)."""
    args.namespace = args.namespace or await _context_namespace(args.kubeconfig)
    if args.server:
        return await _remote(args)
    try:
        setup = scheduler_setup(args.config, args.plugins, args.feature_gates)
    except StartupError as exc:
        print(
            f"pyscheduler explain: invalid configuration {args.config or '(defaults)'}: {exc}",
            file=sys.stderr,
        )
        return 2
    setup.config.leader_election.leader_elect = False
    app = SchedulerApp(
        setup.config,
        kubeconfig=args.kubeconfig,
        serving=ServingOptions(plain_http=True),
        registry=setup.registry,
        watches=setup.watches,
        features=setup.features,
    )
    return await _standalone(app, args)


async def _standalone(app: SchedulerApp, args: argparse.Namespace) -> int:
    try:
        synced = await app.load(LIST_TIMEOUT)
    except ClientConfigError as exc:
        return _fail(f"cannot reach the cluster: {exc}")
    except MissingResource as exc:  # a plugin watches a kind the cluster does not serve
        await app.client.close()  # as `pyscheduler run`: nothing else was started
        return _fail(str(exc), 2)
    try:
        if not synced:
            return _fail(f"the cluster's objects were not listed within {LIST_TIMEOUT:.0f}s")
        assert app.scheduler is not None, "load() builds the scheduler"
        key = f"{args.namespace}/{args.pod}"
        pod, fwk = pending_pod(app.pod_informer.store.get(key), key, app.frameworks, args.profile)
        explanation = await explain_pod(app.scheduler, fwk, pod)
    except ExplainRefused as refused:
        return _fail(str(refused), 2 if refused.status == 400 else 1)
    finally:
        await app.close()
    _print(explanation, args.output)
    return 0


async def _remote(args: argparse.Namespace) -> int:
    try:
        explanation = await ask_server(
            args.server,
            args.namespace,
            args.pod,
            profile=args.profile,
            token=args.token,
            kubeconfig=args.kubeconfig,
            certificate_authority=args.certificate_authority,
            insecure=args.insecure_skip_tls_verify,
        )
    except RemoteError as exc:
        return _fail(str(exc), exc.exit_code)
    _print(explanation, args.output)
    return 0


async def _context_namespace(kubeconfig: str | None) -> str:
    """The namespace of the kubeconfig's current context (a pod's own in cluster), else default;
    a kubeconfig that cannot be loaded is reported by the step that needs it."""
    try:
        config = await load_client_config(kubeconfig)
    except ClientConfigError:
        return "default"
    return config.namespace or "default"


def _print(explanation: Explanation, output: str) -> None:
    if output == "json":
        sys.stdout.write(orjson.dumps(explanation.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render(explanation))


def _fail(message: str, code: int = 1) -> int:
    print(f"pyscheduler explain: {message}", file=sys.stderr)
    return code
