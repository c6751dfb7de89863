"""Command line: `pyscheduler run | sim-cluster | demo | plugins | feature-gates | explain |
snapshot | simulate | podgroup-controller | version`.

Each subcommand lives in its own module of ``scheduler.cmd`` exposing ``add_arguments(parser)``
and ``main(args) -> int``; the module is imported only when its subcommand runs, so
``pyscheduler version`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from scheduler import __version__

# subcommand -> (module, help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("scheduler.cmd.run", "run the scheduler against a cluster"),
    "sim-cluster": (
        "scheduler.cmd.sim_cluster",
        "serve a local Kubernetes API endpoint with simulated nodes",
    ),
    "demo": ("scheduler.cmd.demo", "run the scheduler against a local simulated cluster and show placements"),
    "plugins": ("scheduler.cmd.plugins", "list the plugins this installation can use, with their args"),
    "feature-gates": ("scheduler.cmd.feature_gates", "list the feature gates and their defaults"),
    "explain": ("scheduler.cmd.explain", "why a pod is pending or where it would go, and what would help"),
    "snapshot": ("scheduler.cmd.snapshot", "save a cluster's objects for `simulate` (read-only)"),
    "simulate": ("scheduler.cmd.simulate", "where the scheduler would put new pods, and how many more fit"),
    "podgroup-controller": (
        "scheduler.cmd.podgroup_controller",
        "keep the status of scheduler-plugins' PodGroups (a kopf operator)",
    ),
}
# The subcommands that run the local API endpoint: they need the optional extra `sim` (the
# simcluster package and kubernetes_asyncio), which the runtime image leaves out.
NEEDS_SIM = {"sim-cluster", "demo", "simulate"}
SIM_MODULES = ("simcluster", "kubernetes_asyncio")


def sim_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in SIM_MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="pyscheduler")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub.add_parser("version", help="print the version and exit")
    chosen = argv[0] if argv else None
    if chosen in NEEDS_SIM and not sim_installed():
        print(
            f"pyscheduler {chosen} needs the optional extra 'sim' (the local API endpoint), "
            "which is not installed: pip install 'pyscheduler[sim]'",
            file=sys.stderr,
        )
        return 2
    modules = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        subparser = sub.add_parser(name, help=help_text)
        if name == chosen:
            modules[name] = importlib.import_module(module_name)
            modules[name].add_arguments(subparser)
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"pyscheduler {__version__}")
        return 0
    return int(modules[args.command].main(args) or 0)
