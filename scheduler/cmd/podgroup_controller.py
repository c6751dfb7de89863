"""`pyscheduler podgroup-controller`: flags, the kubeconfig, and the operator's lifetime.

Exit codes: 0 the operator stopped; 2 no usable kubeconfig, or a proxy that cannot be used.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys

from scheduler import logs
from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.client.kubeconfig.errors import KubeconfigError
from scheduler.client.rest import KubeClient
from scheduler.client.transport import ProxyError
from scheduler.podgroup_controller import operator
from scheduler.podgroup_controller.reconciler import Reconciler


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then in-cluster)")
    parser.add_argument(
        "--namespace",
        dest="namespaces",
        action="append",
        default=[],
        help="only the PodGroups of this namespace (repeatable; default: every namespace)",
    )
    parser.add_argument(
        "--liveness-endpoint",
        default=None,
        metavar="URL",
        help="serve kopf's liveness probe, e.g. http://0.0.0.0:8080/healthz",
    )
    parser.add_argument(
        "--resync-period",
        type=_positive_seconds,
        default=operator.RESYNC_SECONDS,
        metavar="SECONDS",
        help="reconcile every group not yet final this often, events or not (default: 300)",
    )
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=2, help="log verbosity (0-10)")
    parser.add_argument(
        "--logging-format", choices=logs.FORMATS, default="text", help="text (default) or json"
    )


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"must be a number greater than 0: {text!r}")
    return seconds


def main(args: argparse.Namespace) -> int:
    logs.configure(args.verbosity, args.logging_format)
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    try:
        config = await load_client_config(args.kubeconfig)
    except (ClientConfigError, KubeconfigError) as exc:
        print(f"pyscheduler podgroup-controller: {exc}", file=sys.stderr)
        return 2
    try:
        async with KubeClient(config) as client:
            await operator.run(
                config,
                Reconciler(client),
                namespaces=args.namespaces,
                liveness_endpoint=args.liveness_endpoint,
                resync_seconds=args.resync_period,
            )
    except ProxyError as exc:  # a proxy that the client or kopf cannot use
        print(f"pyscheduler podgroup-controller: {exc}", file=sys.stderr)
        return 2
    return 0
