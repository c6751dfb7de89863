"""`pyscheduler podgroup-controller`: flags, the kubeconfig, and the operator's lifetime."""

from __future__ import annotations

import argparse
import asyncio
import sys

from scheduler import logs
from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.client.kubeconfig import KubeconfigError
from scheduler.client.rest import KubeClient
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
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=2, help="log verbosity (0-10)")
    parser.add_argument(
        "--logging-format", choices=logs.FORMATS, default="text", help="text (default) or json"
    )


def main(args: argparse.Namespace) -> int:
    logs.configure(args.verbosity, args.logging_format)
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    try:
        config = await load_client_config(args.kubeconfig)
    except (ClientConfigError, KubeconfigError) as exc:
        print(f"pyscheduler podgroup-controller: {exc}", file=sys.stderr)
        return 2
    async with KubeClient(config) as client:
        await operator.run(
            config,
            Reconciler(client),
            namespaces=args.namespaces,
            liveness_endpoint=args.liveness_endpoint,
        )
    return 0
