"""`pyscheduler simulate`: where the real scheduler would put new pods, and how many more fit.

Exit codes: 0 the simulation ran (pods left pending are a result, not a failure); 1 it could
not run to its end (the cluster could not be read, the scheduler failed, pods stayed undecided
past --timeout); 2 bad flags or files (the message names the file and the problem).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from scheduler.app import SchedulerApp
from scheduler.client.config import ClientConfigError
from scheduler.client.kubeconfig.errors import KubeconfigError
from scheduler.client.rest import ApiError
from scheduler.cmd.flags import add_plugin_arguments
from scheduler.simulate import html, manifests, report
from scheduler.simulate.engine import Outcome, Simulation, SimulationError
from scheduler.simulate.nodes import NodeTemplate, TemplateError, like_node, new_node_names, template_of
from scheduler.simulate.snapshot import SnapshotError, read_cluster, read_snapshot
from scheduler.simulate.workloads import ManifestError, expand
from scheduler.startup import SchedulerSetup, StartupError, scheduler_setup


class UsageError(Exception):
    """Bad flags or files: exit 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="FILE", help="a file `pyscheduler snapshot` wrote")
    source.add_argument(
        "--from-cluster", action="store_true", help="snapshot the live cluster first (read-only)"
    )
    parser.add_argument(
        "--kubeconfig", help="with --from-cluster: kubeconfig file (default: $KUBECONFIG, then in-cluster)"
    )
    parser.add_argument("--config", help="KubeSchedulerConfiguration file (default: built-in defaults)")
    add_plugin_arguments(parser)
    parser.add_argument(
        "--add",
        action="append",
        default=[],
        metavar="PATH",
        help="manifests to add: a YAML/JSON file, a directory of them, or - for stdin; repeatable. "
        "Workloads (Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob, DaemonSet) become their pods; "
        "Services, PDBs, PriorityClasses, PodGroups, Workloads, claims, volumes, namespaces, "
        "DRA slices and classes, CRDs are applied; anything else is listed as ignored",
    )
    parser.add_argument(
        "--drain",
        action="append",
        default=[],
        metavar="NODE",
        help="cordon NODE and evict its pods; repeatable",
    )
    parser.add_argument(
        "--drain-selector", metavar="SELECTOR", help="drain every node this label selector selects"
    )
    parser.add_argument(
        "--remove-node",
        action="append",
        default=[],
        metavar="NODE",
        help="delete NODE and its pods; repeatable",
    )
    parser.add_argument("--add-nodes", type=int, default=0, metavar="N", help="add N nodes like the template")
    template = parser.add_mutually_exclusive_group()
    template.add_argument(
        "--node-template",
        metavar="FILE",
        help="a Node manifest new nodes copy (and the ResourceSlices of its devices, if any)",
    )
    template.add_argument("--like", metavar="NODE", help="new nodes copy this node of the cluster")
    parser.add_argument(
        "--fit",
        action="store_true",
        help="the fewest nodes like the template that place every pending pod (kept in the report)",
    )
    parser.add_argument(
        "--fit-max",
        type=int,
        metavar="N",
        help="with --fit: try at most N nodes (default: one per pending pod)",
    )
    parser.add_argument("--capacity", metavar="FILE", help="a Pod: how many more copies of it fit")
    parser.add_argument(
        "--capacity-limit", type=int, default=1000, metavar="N", help="stop counting at N copies (1000)"
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--seed", type=int, default=0, help="breaks ties between equal nodes (0)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for decisions (120)")


def _setup(args: argparse.Namespace) -> SchedulerSetup:
    try:
        return scheduler_setup(args.config, args.plugins, args.feature_gates)
    except StartupError as exc:
        raise UsageError(f"invalid configuration {args.config or '(defaults)'}: {exc}") from exc


def _capacity_pod(path: str, scheduler_name: str) -> dict[str, Any]:
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d is not None]
    except OSError as exc:
        raise UsageError(f"--capacity {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"--capacity {path}: not YAML: {exc}") from exc
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != "Pod":
        raise UsageError(f"--capacity {path}: exactly one Pod expected")
    return expand(docs[0], f"--capacity {path}", scheduler_name).pods[0]


def _template(args: argparse.Namespace, objects: Mapping[str, Any]) -> NodeTemplate | None:
    """The node new ones copy, with its devices: --node-template's file (a Node and its
    ResourceSlices) or --like's node (and its slices in the cluster); None without either."""
    if args.node_template:
        where = f"--node-template {args.node_template}"
        try:
            docs = manifests.documents(Path(args.node_template).read_text(), args.node_template)
        except OSError as exc:
            raise UsageError(f"{where}: {exc.strerror or exc}") from exc
        return template_of(docs, where)
    if args.like:
        for node in objects.get("nodes") or ():
            if isinstance(node, dict) and (node.get("metadata") or {}).get("name") == args.like:
                return like_node(node, objects.get("resourceslices") or (), f"--like {args.like}")
        raise UsageError(f"--like {args.like}: no such node in the cluster")
    return None


def _check_flags(args: argparse.Namespace) -> None:
    if args.capacity_limit < 1:
        raise UsageError("--capacity-limit: at least 1")
    if args.kubeconfig and not args.from_cluster:
        raise UsageError("--kubeconfig: only with --from-cluster (a snapshot file needs no cluster)")
    if args.add_nodes < 0:
        raise UsageError("--add-nodes: not negative")
    if (args.add_nodes or args.fit) and not (args.node_template or args.like):
        raise UsageError(
            f"{'--fit' if args.fit else '--add-nodes'}: needs --node-template FILE or --like NODE"
        )
    if args.fit_max is not None and (args.fit_max < 1 or not args.fit):
        raise UsageError("--fit-max: at least 1, with --fit")
    if args.add.count("-") > 1:
        raise UsageError("--add -: stdin can be read once")


async def run(args: argparse.Namespace) -> Outcome:
    """Parse everything first (exit 2 before any work), then simulate."""
    setup = _setup(args)
    config = setup.config
    scheduler_name = config.profiles[0].scheduler_name
    _check_flags(args)
    found = manifests.Manifests()
    for path in args.add:
        found.extend(manifests.load(path, scheduler_name))
    pod = _capacity_pod(args.capacity, scheduler_name) if args.capacity else None
    if args.snapshot:
        objects = read_snapshot(args.snapshot)
    else:
        try:
            snapshot, skipped = await read_cluster(args.kubeconfig)
        except (ApiError, SnapshotError) as exc:
            raise SimulationError(f"reading the cluster failed: {exc}") from exc
        for line in skipped:
            print(f"simulate: {line}", file=sys.stderr)
        objects = snapshot["objects"]
    template = _template(args, objects)
    known = {
        str((n.get("metadata") or {}).get("name")) for n in objects.get("nodes") or () if isinstance(n, dict)
    }
    for flag, names in (("--drain", args.drain), ("--remove-node", args.remove_node)):
        for name in names:
            if name not in known:
                raise UsageError(f"{flag} {name}: no such node in the cluster")
    new_nodes, new_slices = [], []
    if template is not None and args.add_nodes:
        names = new_node_names(template.name, args.add_nodes, known)
        new_nodes = [template.node_named(name) for name in names]
        new_slices = [s for name in names for s in template.slices_for(name)]
    async with Simulation(
        objects,
        config,
        app=SchedulerApp,
        seed=args.seed,
        timeout=args.timeout,
        registry=setup.registry,
        watches=setup.watches,
        features=setup.features,
        applied=found.in_order(),
        new_nodes=new_nodes,
        new_slices=new_slices,
    ) as sim:
        sim.outcome.ignored = sorted(set(found.ignored))
        if args.remove_node:
            await sim.remove_nodes(args.remove_node)
        drained = list(args.drain) + (sim.nodes_matching(args.drain_selector) if args.drain_selector else [])
        if drained:
            await sim.drain(list(dict.fromkeys(drained)))
        outcome = await sim.add(found.workloads + sim.daemon_sets(found.daemonsets, scheduler_name))
        if args.fit and template is not None:
            await sim.fit(template, args.fit_max)
        if pod is not None:
            await sim.capacity(pod, args.capacity_limit)
    return outcome


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.ERROR, format="%(levelname).1s %(name)s: %(message)s")
    try:
        outcome = asyncio.run(run(args))
    except (
        UsageError,
        ManifestError,
        TemplateError,
        SnapshotError,
        ClientConfigError,
        KubeconfigError,
    ) as exc:
        print(f"simulate: {exc}", file=sys.stderr)
        return 2
    except (SimulationError, ApiError) as exc:
        print(f"simulate: {exc}", file=sys.stderr)
        return 1
    doc = report.to_json(outcome)
    print(json.dumps(doc, indent=2) if args.output == "json" else report.to_text(outcome))
    if args.html:
        try:
            Path(args.html).write_text(html.render(doc))
        except OSError as exc:
            print(f"simulate: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0
