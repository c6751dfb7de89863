"""Finding the API server and the credentials to talk to it.

The order follows kube-scheduler's ``--kubeconfig`` handling, plus the usual developer
conveniences: an explicit kubeconfig file, else ``$KUBECONFIG``, else the in-cluster service
account, else ``~/.kube/config``. ``scheduler.client.kubeconfig`` reads each source the way
client-go does (tokens, token files, exec plugins, client certificates, TLS); this module only
picks the source and explains failures.
"""

from __future__ import annotations

import os
from pathlib import Path

from scheduler.client.kubeconfig.clientconfig import ClientConfig
from scheduler.client.kubeconfig.errors import KubeconfigError
from scheduler.client.kubeconfig.incluster import SERVICE_ACCOUNT_DIR, in_cluster_config
from scheduler.client.kubeconfig.loading import load_kubeconfig


class ClientConfigError(Exception):
    """No usable client configuration; the message names every source that was tried."""


async def load_client_config(
    kubeconfig: str | None, *, service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR
) -> ClientConfig:
    """Return a ClientConfig for the first source that works (see module docstring)."""
    attempts: list[str] = []
    if kubeconfig:
        cfg = await _from_kubeconfig(kubeconfig, f"--kubeconfig {kubeconfig}", attempts, required=True)
        assert cfg is not None
        return cfg
    env = os.environ.get("KUBECONFIG", "")
    if env:
        cfg = await _from_kubeconfig(env, f"$KUBECONFIG={env}", attempts, required=False)
        if cfg is not None:
            return cfg
    else:
        attempts.append("$KUBECONFIG: not set")
    try:
        return in_cluster_config(service_account_dir)
    except KubeconfigError as exc:
        attempts.append(f"in-cluster service account: {exc}")
    home = Path("~/.kube/config").expanduser()
    if home.is_file():
        cfg = await _from_kubeconfig(str(home), str(home), attempts, required=False)
        if cfg is not None:
            return cfg
    else:
        attempts.append(f"{home}: no such file")
    raise ClientConfigError("no Kubernetes client configuration found; tried " + "; ".join(attempts))


async def _from_kubeconfig(
    paths: str, label: str, attempts: list[str], *, required: bool
) -> ClientConfig | None:
    existing = [
        str(Path(p).expanduser()) for p in paths.split(os.pathsep) if p and Path(p).expanduser().is_file()
    ]
    if not existing:
        attempts.append(f"{label}: no such file")
        if required:
            raise ClientConfigError(f"kubeconfig {paths} does not exist")
        return None
    try:
        return await load_kubeconfig(existing)
    except KubeconfigError as exc:
        attempts.append(f"{label}: {exc}")
        if required:
            raise ClientConfigError(f"kubeconfig {paths} is not usable: {exc}") from exc
        return None
