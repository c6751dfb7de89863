"""`pyscheduler sim-cluster`: serve a simulated cluster (``simcluster``) until SIGINT or SIGTERM.

Exit codes: 0 stopped by a signal; 1 the address cannot be listened on; 2 a bad node template or
access table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys

from simcluster.cluster import SimCluster
from simcluster.nodes import TemplateError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=3, help="number of default simulated nodes (default 3)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--kubeconfig-out", metavar="FILE", help="write a kubeconfig for this endpoint to FILE"
    )
    parser.add_argument("--node-template", metavar="FILE", help="YAML node groups; replaces --nodes")
    parser.add_argument(
        "--no-kubelet", action="store_true", help="leave bound pods Pending (no simulated kubelet)"
    )
    parser.add_argument(
        "--kubelet-delay", type=float, default=0.5, help="seconds before a bound pod runs (0.5)"
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks"
    )
    parser.add_argument("--history-size", type=int, default=20_000, help="watch events kept per resource")
    parser.add_argument(
        "--access",
        metavar="FILE",
        help="YAML tokens and rules of who may do what (default: everyone may do everything)",
    )


async def _serve(args: argparse.Namespace) -> int:
    try:
        sim = SimCluster(
            nodes=args.nodes,
            kubelet=not args.no_kubelet,
            node_template=args.node_template,
            port=args.port,
            host=args.host,
            kubelet_delay=args.kubelet_delay,
            bookmark_interval=args.bookmark_interval,
            history_size=args.history_size,
            access=args.access,
        )
    except TemplateError as err:
        print(f"sim-cluster: bad node template: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"sim-cluster: bad access table: {err}", file=sys.stderr)
        return 2
    try:
        await sim.start()
    except OSError as err:
        print(f"sim-cluster: cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 1
    # A dedicated process holding many long-lived dicts: move the start-up objects out of the
    # collector's view and collect young objects less often, or gen-2 sweeps stall the writes.
    gc.freeze()
    gc.set_threshold(50_000, 20, 50)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"sim-cluster listening on {sim.url} with {sim.store.count('nodes')} nodes", flush=True)
    if args.kubeconfig_out:
        path = sim.write_kubeconfig(args.kubeconfig_out)
        print(f"kubeconfig written to {path} (kubectl --kubeconfig {path} get nodes)", flush=True)
    try:
        await stop.wait()
    finally:
        await sim.stop()
    print("sim-cluster stopped", flush=True)
    return 0


def main(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))
