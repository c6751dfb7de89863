"""`pyscheduler run`: its flags, the checks made before anything starts, and the exit code.

Exit codes: 0 after SIGTERM or SIGINT; 1 when no client configuration is usable or the lease was
lost (the pod restarts); 2 bad flags, configuration or serving certificates, a proxy variable
that cannot be used, a kind a plugin watches that the cluster does not serve, or a configuration
that would act as the cluster's default scheduler (the message names the flag or field).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from scheduler import logs
from scheduler.app import SchedulerApp
from scheduler.cmd.flags import add_plugin_arguments
from scheduler.config import ConfigError, default_config, load_config
from scheduler.features import FeatureGateError, FeatureGates
from scheduler.plugins.loading import PluginLoadError, declared_args, factories, load_registry
from scheduler.policy import check_profiles, refuse_default_scheduler, refuse_shadow, watched_kinds
from scheduler.runtime import FrameworkError
from scheduler.serving import TLSConfigError
from scheduler.serving import options as serving_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="KubeSchedulerConfiguration file (default: built-in defaults)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then in-cluster)")
    parser.add_argument(
        "--leader-elect",
        type=_parse_bool,
        default=None,
        metavar="true|false",
        help="hold a Lease so only one replica schedules (overrides the config file)",
    )
    add_plugin_arguments(parser)
    parser.add_argument(
        "--allow-default-scheduler-name",
        action="store_true",
        help="let a profile be named default-scheduler, or use the Lease kube-system/kube-scheduler "
        "(only where no kube-scheduler runs)",
    )
    parser.add_argument(
        "--shadow",
        default="",
        metavar="SCHEDULER_NAME",
        help="also decide, never acting, where the first profile would put the pods of this other "
        "scheduler, and compare with where it binds them (/debug/shadow); default-scheduler is "
        "allowed, since shadow mode never binds",
    )
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=2, help="log verbosity (0-10)")
    parser.add_argument(
        "--logging-format",
        choices=logs.FORMATS,
        default="text",
        help="text (default) or json, one object per line",
    )
    serving_options.add_arguments(parser)


def _parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "t", "true", "yes"):
        return True
    if value in ("0", "f", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text!r}")


def main(args: argparse.Namespace) -> int:
    logs.configure(args.verbosity, args.logging_format)
    try:
        features = FeatureGates.parse(args.feature_gates)
    except FeatureGateError as exc:
        print(
            f'pyscheduler: invalid argument "{args.feature_gates}" for "--feature-gates" flag: {exc}',
            file=sys.stderr,
        )
        return 2
    try:
        sources = load_registry(args.plugins)
    except PluginLoadError as exc:
        print(f"pyscheduler: {exc}", file=sys.stderr)
        return 2
    plugin_args = declared_args(sources)
    try:
        config = (
            load_config(args.config, plugin_args, features)
            if args.config
            else default_config(plugin_args, features)
        )
    except ConfigError as exc:
        print(f"pyscheduler: invalid configuration {args.config}: {exc}", file=sys.stderr)
        return 2
    if args.leader_elect is not None:
        config.leader_election.leader_elect = args.leader_elect
    refusal = refuse_default_scheduler(config) if not args.allow_default_scheduler_name else None
    refusal = refusal or refuse_shadow(config, args.shadow)
    if refusal:
        print(f"pyscheduler: {refusal}", file=sys.stderr)
        return 2
    registry = factories(sources)
    try:
        check_profiles(config, registry, features)
    except FrameworkError as exc:
        print(f"pyscheduler: invalid configuration {args.config or '(defaults)'}: {exc}", file=sys.stderr)
        return 2
    serving = serving_options.from_args(args)
    try:
        serving.tls.validate()
    except TLSConfigError as exc:
        print(f"pyscheduler: {exc}", file=sys.stderr)
        return 2
    app = SchedulerApp(
        config,
        kubeconfig=args.kubeconfig,
        serving=serving,
        registry=registry,
        watches=watched_kinds(config, sources),
        features=features,
        tune_gc=True,
        shadow=args.shadow,
    )
    return asyncio.run(app.run())
