"""Finding the API server and the credentials to talk to it.

The order follows kube-scheduler's ``--kubeconfig`` handling, plus the usual developer
conveniences: an explicit kubeconfig file, else ``$KUBECONFIG``, else the in-cluster service
account, else ``~/.kube/config``. kubernetes_asyncio does the actual auth work (tokens, exec
plugins, client certificates, TLS); this module only picks the source and explains failures.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.kube_config import KubeConfigLoader


class ClientConfigError(Exception):
    """No usable client configuration; the message names every source that was tried."""


async def load_client_config(kubeconfig: str | None) -> Configuration:
    """Return a fresh Configuration for the first source that works (see module docstring)."""
    attempts: list[str] = []
    if kubeconfig:
        return await _from_kubeconfig(kubeconfig, f"--kubeconfig {kubeconfig}", attempts, required=True)
    env = os.environ.get("KUBECONFIG", "")
    if env:
        cfg = await _from_kubeconfig(env, f"$KUBECONFIG={env}", attempts, required=False)
        if cfg is not None:
            return cfg
    else:
        attempts.append("$KUBECONFIG: not set")
    cfg = Configuration()
    try:
        kconfig.load_incluster_config(client_configuration=cfg)
        return cfg
    except (kconfig.ConfigException, OSError) as exc:
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
) -> Configuration | None:
    existing = [p for p in paths.split(os.pathsep) if p and Path(p).expanduser().is_file()]
    if not existing:
        attempts.append(f"{label}: no such file")
        if required:
            raise ClientConfigError(f"kubeconfig {paths} does not exist")
        return None
    cfg = Configuration()
    try:
        loader = await kconfig.load_kube_config(
            config_file=os.pathsep.join(existing), client_configuration=cfg, persist_config=False
        )
    except Exception as exc:  # the loader raises ConfigException, yaml, OS and key errors alike
        attempts.append(f"{label}: {exc}")
        if required:
            raise ClientConfigError(f"kubeconfig {paths} is not usable: {exc}") from exc
        return None
    _refresh_exec_tokens(loader, cfg)
    return cfg


def _refresh_exec_tokens(loader: KubeConfigLoader, cfg: Configuration) -> None:
    """Re-run an exec credential plugin when its token expires.

    kubernetes_asyncio runs the plugin once at load time; its ``refresh_api_key_hook`` is
    consulted before every request, and the loader itself skips the plugin while the token is
    still fresh. Plugins that give no expiry are never re-run (the loader would run them on
    every request).
    """
    if not hasattr(loader, "exec_plugin_expiry"):
        return

    async def refresh(configuration: Configuration) -> None:
        await loader.load_from_exec_plugin()
        configuration.api_key["BearerToken"] = loader.token

    cfg.refresh_api_key_hook = refresh
