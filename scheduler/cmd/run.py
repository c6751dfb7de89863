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
from scheduler.config import SchedulerConfiguration
from scheduler.policy import refuse_default_scheduler, refuse_shadow
from scheduler.serving import TLSConfigError
from scheduler.serving import options as serving_options
from scheduler.startup import StartupError, scheduler_setup


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

    def adjust(config: SchedulerConfiguration) -> None:
        if args.leader_elect is not None:
            config.leader_election.leader_elect = args.leader_elect
        refusal = refuse_default_scheduler(config) if not args.allow_default_scheduler_name else None
        refusal = refusal or refuse_shadow(config, args.shadow)
        if refusal:
            raise StartupError("adjust", refusal)

    try:
        setup = scheduler_setup(args.config, args.plugins, args.feature_gates, adjust)
    except StartupError as exc:
        print(f"pyscheduler: {_startup_message(exc, args)}", file=sys.stderr)
        return 2
    serving = serving_options.from_args(args)
    try:
        serving.tls.validate()
    except TLSConfigError as exc:
        print(f"pyscheduler: {exc}", file=sys.stderr)
        return 2
    app = SchedulerApp(
        setup.config,
        kubeconfig=args.kubeconfig,
        serving=serving,
        registry=setup.registry,
        watches=setup.watches,
        features=setup.features,
        tune_gc=True,
        shadow=args.shadow,
    )
    return asyncio.run(app.run())


def _startup_message(error: StartupError, args: argparse.Namespace) -> str:
    """Worded as kube-scheduler words a bad flag; the configuration's errors name the file."""
    if error.step == "feature-gates":
        return f'invalid argument "{args.feature_gates}" for "--feature-gates" flag: {error}'
    if error.step in ("config", "profiles"):
        return f"invalid configuration {args.config or '(defaults)'}: {error}"
    return str(error)  # a plugin that cannot be loaded, a refusal: the message says it all
