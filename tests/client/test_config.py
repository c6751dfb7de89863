"""Where the client configuration comes from, and what a failure says."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler.client import ClientConfigError, load_client_config

Writer = Callable[..., Path]


@pytest.fixture(autouse=True)
def no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Isolate from the machine: no $KUBECONFIG, no service account, an empty home."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


async def test_an_explicit_kubeconfig_gives_its_server_and_token(tmp_path: Path, kubeconfig: Writer) -> None:
    path = kubeconfig(tmp_path / "kc", "https://10.0.0.1:6443", "abc")
    cfg = await load_client_config(str(path))
    assert cfg.server == "https://10.0.0.1:6443"
    assert await cfg.credentials.authorization() == "Bearer abc"


async def test_kubeconfig_env_is_used_when_no_file_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Writer
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "kc", "http://127.0.0.1:1234")))
    assert (await load_client_config(None)).server == "http://127.0.0.1:1234"


async def test_a_missing_explicit_kubeconfig_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ClientConfigError, match="does-not-exist"):
        await load_client_config(str(tmp_path / "does-not-exist"))


async def test_an_unusable_explicit_kubeconfig_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
    with pytest.raises(ClientConfigError, match="not usable"):
        await load_client_config(str(path))


async def test_without_any_source_the_error_lists_every_attempt() -> None:
    with pytest.raises(ClientConfigError) as info:
        await load_client_config(None)
    message = str(info.value)
    assert "$KUBECONFIG: not set" in message
    assert "in-cluster service account" in message
    assert ".kube/config: no such file" in message


async def test_home_kubeconfig_is_the_last_resort(tmp_path: Path, kubeconfig: Writer) -> None:
    kubeconfig(_mkdir(tmp_path / "home" / ".kube") / "config", "http://127.0.0.1:4321")
    assert (await load_client_config(None)).server == "http://127.0.0.1:4321"


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path
