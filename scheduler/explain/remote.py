"""`pyscheduler explain --server URL`: ask a running scheduler's ``/debug/explain``.

The bearer token is ``--token`` or, without it, the kubeconfig's credentials (what the scheduler's
port checks with a TokenReview); the server's certificate is checked against
``--certificate-authority`` (else the system's CAs) unless ``--insecure-skip-tls-verify``.
"""

from __future__ import annotations

import ssl

import aiohttp
import orjson

from scheduler.client.config import ClientConfigError, load_client_config
from scheduler.explain.model import Explanation, explanation_from_dict

TIMEOUT = aiohttp.ClientTimeout(total=60)


class RemoteError(Exception):
    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


async def ask_server(
    server: str,
    namespace: str,
    name: str,
    *,
    profile: str = "",
    token: str = "",
    kubeconfig: str | None = None,
    certificate_authority: str = "",
    insecure: bool = False,
) -> Explanation:
    authorization = f"Bearer {token}" if token else await _kubeconfig_authorization(kubeconfig)
    headers = {"Authorization": authorization} if authorization else {}
    params = {"namespace": namespace, "name": name, **({"profile": profile} if profile else {})}
    url = server.rstrip("/") + "/debug/explain"
    try:
        async with (
            aiohttp.ClientSession(timeout=TIMEOUT) as http,
            http.get(
                url, params=params, headers=headers, ssl=_tls(certificate_authority, insecure)
            ) as response,
        ):
            body = await response.read()
            status = response.status
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise RemoteError(f"cannot reach {url}: {exc}") from exc
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):  # not our answer (a proxy's page, say)
        data = {"error": body.decode(errors="replace").strip()[:200]}
    if status != 200:
        message = data.get("error") or data.get("message") or f"HTTP {status}"
        raise RemoteError(f"{url} answered {status}: {message}", 2 if status == 400 else 1)
    not_ours = f"{url} answered something that is not an explanation"
    if "pod" not in data:
        raise RemoteError(not_ours)
    try:
        return explanation_from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteError(f"{not_ours} ({type(exc).__name__}: {exc})") from exc


async def _kubeconfig_authorization(kubeconfig: str | None) -> str | None:
    """The kubeconfig's Authorization header, if it has token-like credentials."""
    try:
        config = await load_client_config(kubeconfig)
    except ClientConfigError:
        return None
    return await config.credentials.authorization()


def _tls(certificate_authority: str, insecure: bool) -> ssl.SSLContext | bool:
    if insecure:
        return False
    if not certificate_authority:
        return True
    try:
        return ssl.create_default_context(cafile=certificate_authority)
    except (OSError, ssl.SSLError) as exc:
        raise RemoteError(f"--certificate-authority {certificate_authority}: {exc}", 2) from exc
