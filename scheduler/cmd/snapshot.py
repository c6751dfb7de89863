"""`pyscheduler snapshot -o cluster.json`: save a cluster's objects for `pyscheduler simulate`.

Exit codes: 0 written; 1 the cluster could not be read; 2 no usable kubeconfig, or the file
cannot be written.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from scheduler.client.config import ClientConfigError
from scheduler.client.kubeconfig.errors import KubeconfigError
from scheduler.client.rest import ApiError
from scheduler.simulate.snapshot import SnapshotError, read_cluster, write_snapshot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the snapshot")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then in-cluster)")


def main(args: argparse.Namespace) -> int:
    try:
        snapshot, skipped = asyncio.run(read_cluster(args.kubeconfig))
    except (ClientConfigError, KubeconfigError) as exc:
        print(f"snapshot: {exc}", file=sys.stderr)
        return 2
    except (ApiError, SnapshotError) as exc:
        print(f"snapshot: reading the cluster failed: {exc}", file=sys.stderr)
        return 1
    for line in skipped:
        print(f"snapshot: {line}", file=sys.stderr)
    try:
        write_snapshot(snapshot, args.output)
    except OSError as exc:
        print(f"snapshot: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    counts = ", ".join(f"{len(items)} {name}" for name, items in snapshot["objects"].items() if items)
    print(f"snapshot written to {args.output}: {counts}")
    return 0
