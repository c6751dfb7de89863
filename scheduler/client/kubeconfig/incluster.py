"""The pod's own service account, as client-go's InClusterConfig reads it."""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Mapping
from pathlib import Path

from scheduler.client.kubeconfig.clientconfig import ClientConfig
from scheduler.client.kubeconfig.credentials import TOKEN_FILE_PERIOD, Clock, TokenFile
from scheduler.client.kubeconfig.errors import CredentialError, KubeconfigError, NotInClusterError, reason

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_cluster_config(
    directory: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
    *,
    environ: Mapping[str, str] | None = None,
    clock: Clock = time.time,
    token_file_period: float = TOKEN_FILE_PERIOD,
) -> ClientConfig:
    """The pod's service account: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
    ``directory``/token (re-read periodically) and ``directory``/ca.crt.

    As in client-go, a ca.crt that cannot be loaded is logged and the system's CAs are used.
    """
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise NotInClusterError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set")
    directory = Path(directory)
    token = TokenFile(directory / "token", period=token_file_period, clock=clock)
    try:
        token.current()
    except CredentialError as exc:
        raise KubeconfigError(str(exc)) from exc
    ca: str | None = str(directory / "ca.crt")
    try:
        ssl.create_default_context(cafile=ca)
    except (OSError, ValueError) as exc:
        log.error("expected to load the root CA from %s, but: %s", ca, reason(exc))
        ca = None
    host = f"[{host}]" if ":" in host else host
    origin = f"the service account in {directory}"
    try:
        namespace = (directory / "namespace").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        namespace = ""
    return ClientConfig(
        server=f"https://{host}:{port}",
        certificate_authority=ca,
        credentials=token,
        cluster_origin=origin,
        user_origin=origin,
        namespace=namespace,
    )
