"""``load_kubeconfig``: the ClientConfig of a context of the merged kubeconfig files, every field
checked as client-go checks it (TLS files and data, tokens, basic auth, exec plugins)."""

from __future__ import annotations

import base64
import os
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from scheduler.client.kubeconfig.clientconfig import ClientConfig
from scheduler.client.kubeconfig.credentials import (
    TOKEN_FILE_PERIOD,
    BasicAuth,
    BearerToken,
    Clock,
    Credentials,
    TokenFile,
)
from scheduler.client.kubeconfig.entries import Entry, Merged, file_list, merge_files, type_name
from scheduler.client.kubeconfig.errors import CredentialError, KubeconfigError, reason
from scheduler.client.kubeconfig.execplugin import EXEC_API_VERSIONS, EXEC_CLUSTER_EXTENSION, ExecPlugin
from scheduler.client.kubeconfig.tls import read_pem
from scheduler.client.transport import Proxy

_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
_IMPERSONATION_FIELDS = ("as", "as-uid", "as-groups", "as-user-extra")


async def load_kubeconfig(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    context: str | None = None,
    clock: Clock = time.time,
    token_file_period: float = TOKEN_FILE_PERIOD,
) -> ClientConfig:
    """The ClientConfig of the current context (or ``context``) of the merged kubeconfig files.

    ``paths`` is one file or a list (a ``$KUBECONFIG`` string is split on ``os.pathsep``);
    files of the list that do not exist are skipped, as clientcmd does. An exec plugin is run
    once here, so a broken one fails the load. Raises ``KubeconfigError``.
    """
    merged = merge_files(file_list(paths))
    if context is None:
        if merged.current_context is None:
            raise KubeconfigError(f"{merged.label}: no current-context is set")
        context, where = merged.current_context
        chosen = merged.contexts.get(context)
        if chosen is None:
            raise KubeconfigError(f'{where}: current-context "{context}" is not a context in {merged.label}')
    else:
        chosen = merged.contexts.get(context)
        if chosen is None:
            raise KubeconfigError(f'context "{context}" is not defined in {merged.label}')
    cluster = _referenced(merged, chosen, "cluster", merged.clusters)
    user = _referenced(merged, chosen, "user", merged.users)
    config = _client_config(cluster, user, clock=clock, token_file_period=token_file_period)
    config = replace(config, namespace=chosen.string("namespace") or "")
    if isinstance(config.credentials, ExecPlugin):
        try:
            await config.credentials.authorization()
        except CredentialError as exc:
            raise KubeconfigError(str(exc)) from exc
    config.ssl_context()  # reads the CA and the client certificate now, to fail here if unusable
    return config


def _referenced(merged: Merged, context: Entry, key: str, table: dict[str, Entry]) -> Entry:
    name = context.string(key)
    if name is None:
        raise context.error(f"no {key} is set")
    entry = table.get(name)
    if entry is None:
        raise context.error(f'{key} "{name}" is not defined in {merged.label}')
    return entry


def _client_config(cluster: Entry, user: Entry, *, clock: Clock, token_file_period: float) -> ClientConfig:
    ca_file = cluster.string("certificate-authority")
    ca_data = cluster.data_field("certificate-authority-data")
    insecure = cluster.flag("insecure-skip-tls-verify")
    server_name = cluster.string("tls-server-name")
    if ca_file and ca_data is not None:
        raise cluster.error("certificate-authority and certificate-authority-data are both set; set one")
    if ca_file:
        ca_file = cluster.resolve(ca_file)
        _check_readable(cluster, "certificate-authority", ca_file)
    if insecure and (ca_file or ca_data is not None):
        raise cluster.error(
            "insecure-skip-tls-verify cannot be combined with certificate-authority(-data), as in client-go"
        )

    cert_file = user.string("client-certificate")
    cert_data = user.data_field("client-certificate-data")
    key_file = user.string("client-key")
    key_data = user.data_field("client-key-data")
    for file_key, file_value, data_value in (
        ("client-certificate", cert_file, cert_data),
        ("client-key", key_file, key_data),
    ):
        if file_value and data_value is not None:
            raise user.error(f"{file_key} and {file_key}-data are both set; set one")
    has_cert = bool(cert_file) or cert_data is not None
    has_key = bool(key_file) or key_data is not None
    if has_cert and not has_key:
        raise user.error("client-certificate(-data) is set without client-key(-data)")
    if has_key and not has_cert:
        raise user.error("client-key(-data) is set without client-certificate(-data)")
    if cert_file:
        cert_file = user.resolve(cert_file)
        _check_readable(user, "client-certificate", cert_file)
    if key_file:
        key_file = user.resolve(key_file)
        _check_readable(user, "client-key", key_file)

    server = cluster.string("server")
    if server is None:
        raise cluster.error("no server is set")
    if "://" not in server:  # client-go's DefaultServerURL: https when anything asks for TLS
        tls_wanted = ca_file or ca_data is not None or has_cert or insecure or server_name
        server = ("https://" if tls_wanted else "http://") + server
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise cluster.error(f"server {server!r} is not an http:// or https:// URL")
    proxy_url = cluster.string("proxy-url")
    if proxy_url:
        try:
            Proxy.parse(proxy_url)
        except ValueError as exc:
            raise cluster.error(f"proxy-url: {exc}") from exc

    credentials = _credentials(
        cluster,
        user,
        server=server,
        has_cert=has_cert,
        clock=clock,
        token_file_period=token_file_period,
    )
    return ClientConfig(
        server=server,
        certificate_authority=ca_file,
        certificate_authority_data=ca_data,
        client_certificate=cert_file,
        client_certificate_data=cert_data,
        client_key=key_file,
        client_key_data=key_data,
        insecure_skip_tls_verify=insecure,
        tls_server_name=server_name,
        proxy_url=proxy_url,
        disable_compression=cluster.flag("disable-compression"),
        credentials=credentials,
        cluster_origin=cluster.origin,
        user_origin=user.origin,
    )


def _credentials(
    cluster: Entry, user: Entry, *, server: str, has_cert: bool, clock: Clock, token_file_period: float
) -> Credentials:
    provider = user.data.get("auth-provider")
    if provider is not None:
        name = provider.get("name") if isinstance(provider, dict) else None
        raise user.error(
            f'auth-provider "{name or "?"}" is not supported (client-go removed its in-tree auth '
            "providers); use an exec credential plugin instead (users[].user.exec)"
        )
    for key in _IMPERSONATION_FIELDS:
        if user.data.get(key):
            raise user.error(f"{key} (impersonation) is not supported")
    token = user.string("token")
    token_file = user.string("tokenFile")
    username, password = user.string("username"), user.string("password")
    if (token or token_file) and (username or password):
        raise user.error("username/password and a token are both set; only one is allowed")
    exec_plugin = _exec_plugin(cluster, user, server=server, clock=clock)  # validated even if unused
    if token_file:
        path = user.resolve(token_file)
        source = TokenFile(path, token=token, period=token_file_period, clock=clock)
        if token is None:
            try:
                source.current()
            except CredentialError as exc:
                raise user.error(f"tokenFile: {exc}") from exc
        return source
    if token:
        return BearerToken(token)
    if username or password:
        return BasicAuth(username or "", password or "")
    if exec_plugin is not None and not has_cert:  # as in client-go, other credentials win over exec
        return exec_plugin
    return Credentials()


def _exec_plugin(cluster: Entry, user: Entry, *, server: str, clock: Clock) -> ExecPlugin | None:
    spec = user.data.get("exec")
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise user.error(f"exec must be a mapping, not {type_name(spec)}")
    entry = Entry("user", user.name, spec, user.file)

    def problem(message: str) -> KubeconfigError:
        return user.error(f"exec: {message}")

    command = entry.string("command")
    if command is None:
        raise problem("no command is set")
    if os.sep in command:  # a path, not a name to look up on $PATH: relative to the kubeconfig
        command = entry.resolve(command)
    args = spec.get("args") or []
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise problem("args must be a list of strings")
    env: list[tuple[str, str]] = []
    env_items = spec.get("env") or []
    if not isinstance(env_items, list):
        raise problem("env must be a list of {name, value}")
    for index, item in enumerate(env_items):
        name = item.get("name") if isinstance(item, dict) else None
        value = item.get("value", "") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise problem(f"env[{index}] has no name")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise problem(f"env[{index}] ({name}): value must be a string, not {type_name(value)}")
        env.append((name, value))
    api_version = entry.string("apiVersion")
    if api_version is None:
        raise problem("no apiVersion is set")
    if api_version not in EXEC_API_VERSIONS:
        raise problem(
            f"apiVersion {api_version!r} is not supported; use one of {', '.join(EXEC_API_VERSIONS)}"
        )
    mode = entry.string("interactiveMode")
    if mode is None:
        if api_version != "client.authentication.k8s.io/v1beta1":
            raise problem(f"interactiveMode must be set for apiVersion {api_version} (Never or IfAvailable)")
        mode = "IfAvailable"
    if mode not in _INTERACTIVE_MODES:
        raise problem(f"interactiveMode {mode!r} is not one of {', '.join(_INTERACTIVE_MODES)}")
    if mode == "Always":
        raise problem(
            "interactiveMode Always needs a terminal, and the scheduler never runs a credential "
            "plugin interactively; use Never or IfAvailable"
        )
    hint = entry.string("installHint") or ""
    cluster_info = _exec_cluster_info(cluster, server) if entry.flag("provideClusterInfo") else None
    return ExecPlugin(
        command,
        args,
        env,
        api_version=api_version,
        install_hint=hint,
        cluster=cluster_info,
        label=f"{user.origin}: exec plugin",
        clock=clock,
    )


def _exec_cluster_info(cluster: Entry, server: str) -> dict[str, Any]:
    """ExecCredential.spec.cluster (provideClusterInfo): client-go's fields, CA always as data."""
    info: dict[str, Any] = {"server": server}
    if name := cluster.string("tls-server-name"):
        info["tls-server-name"] = name
    if cluster.flag("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    ca = cluster.data_field("certificate-authority-data")
    ca_file = cluster.string("certificate-authority")
    if ca is None and ca_file:
        ca = read_pem(cluster.resolve(ca_file), cluster.origin, "certificate-authority")
    if ca is not None:
        info["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    if proxy := cluster.string("proxy-url"):
        info["proxy-url"] = proxy
    if cluster.flag("disable-compression"):
        info["disable-compression"] = True
    extensions = cluster.data.get("extensions") or []
    if isinstance(extensions, list):
        for item in extensions:
            if isinstance(item, dict) and item.get("name") == EXEC_CLUSTER_EXTENSION:
                info["config"] = item.get("extension")
    return info


def _check_readable(entry: Entry, key: str, path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise entry.error(f"cannot read {key} {path}: {reason(exc)}") from exc
