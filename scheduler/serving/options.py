"""The serving flags of ``pyscheduler run``, named as kube-scheduler's."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from scheduler.config.durations import parse_duration
from scheduler.serving.auth import DEFAULT_ALWAYS_ALLOW_PATHS, AuthOptions
from scheduler.serving.tls import TLSOptions

DEFAULT_PORT = 10251


@dataclass(slots=True)
class ServingOptions:
    bind_address: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    plain_http: bool = False  # no TLS and no authentication: local use only
    tls: TLSOptions = field(default_factory=TLSOptions)
    auth: AuthOptions = field(default_factory=AuthOptions)
    authentication_kubeconfig: str = ""  # "" means the scheduler's own connection
    authorization_kubeconfig: str = ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("serving (/healthz, /livez, /readyz, /metrics, /configz)")
    group.add_argument("--bind-address", default="0.0.0.0", help="address to listen on")
    group.add_argument(
        "--port", "--secure-port", dest="port", type=int, default=DEFAULT_PORT, help="port (0: any free one)"
    )
    group.add_argument(
        "--plain-http",
        action="store_true",
        help="serve plain HTTP without authentication (local use and the demo only)",
    )
    group.add_argument(
        "--tls-cert-file", default="", help="serving certificate (PEM); self-signed without it"
    )
    group.add_argument("--tls-private-key-file", default="", help="key of --tls-cert-file (PEM)")
    group.add_argument(
        "--tls-min-version", default="VersionTLS12", help="VersionTLS12 (default) or VersionTLS13"
    )
    group.add_argument("--client-ca-file", default="", help="CA bundle that signs client certificates")
    group.add_argument(
        "--authentication-kubeconfig", default="", help="kubeconfig for TokenReviews (default: --kubeconfig)"
    )
    group.add_argument(
        "--authorization-kubeconfig",
        default="",
        help="kubeconfig for SubjectAccessReviews (default: --kubeconfig)",
    )
    group.add_argument(
        "--authorization-always-allow-paths",
        default=",".join(DEFAULT_ALWAYS_ALLOW_PATHS),
        help="paths served without authorization (comma-separated, a trailing * matches a prefix)",
    )
    for flag, what in (
        ("--authentication-token-webhook-cache-ttl", "TokenReview answers"),
        ("--authorization-webhook-cache-authorized-ttl", "allowed SubjectAccessReview answers"),
        ("--authorization-webhook-cache-unauthorized-ttl", "denied SubjectAccessReview answers"),
    ):
        group.add_argument(flag, default="10s", type=_duration, help=f"how long {what} are cached")


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def from_args(args: argparse.Namespace) -> ServingOptions:
    paths = tuple(p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip())
    return ServingOptions(
        bind_address=args.bind_address,
        port=args.port,
        plain_http=args.plain_http,
        tls=TLSOptions(
            args.tls_cert_file, args.tls_private_key_file, args.client_ca_file, args.tls_min_version
        ),
        auth=AuthOptions(
            always_allow_paths=paths,
            token_cache_ttl=args.authentication_token_webhook_cache_ttl,
            allow_cache_ttl=args.authorization_webhook_cache_authorized_ttl,
            deny_cache_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        ),
        authentication_kubeconfig=args.authentication_kubeconfig,
        authorization_kubeconfig=args.authorization_kubeconfig,
    )
