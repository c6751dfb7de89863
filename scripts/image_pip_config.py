"""The build host's pip settings for the image's build stage: ``python3 scripts/image_pip_config.py DIR``.

pip inside ``docker build`` must reach the same package index as pip on the host: behind a
mirror, a proxy or a TLS-inspecting gateway, pip's defaults do not work. This reads what the
host's pip uses (``pip config list``: its configuration files and ``PIP_*`` variables) and writes
DIR/pip.conf with the network settings only (index and extra index URLs, find-links URLs,
trusted hosts, proxy, timeout, retries), plus DIR/ca.crt, the CA bundle the host trusts, which
that pip.conf names as ``cert``. Local paths and ``file:`` URLs are left out (they do not exist
inside the build), and so is everything else (constraints, caches, ...). Both files describe
this machine: the Dockerfile copies them into the build stage only, and git ignores them.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

# Where the Dockerfile copies DIR inside the build stage.
BUILD_DIR = "/build/pip"
# Settings whose values are one or more URLs, separated by white space.
URL_LISTS = ("index-url", "extra-index-url", "find-links")
PASSED = (*URL_LISTS, "trusted-host", "proxy", "timeout", "default-timeout", "retries")
# The system bundle of Debian and Ubuntu, which includes the CAs a host adds with
# update-ca-certificates; pip's own certifi bundle does not.
SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Handled apart (cert: the bundle is copied) or set by the Dockerfile itself: not reported.
QUIET = ("cert", "disable-pip-version-check", "no-cache-dir")
# The sections `pip install` reads, and their precedence: PIP_* variables (`:env:`) over the
# [install] section over [global] (pip merges the files themselves before listing them).
SECTIONS = {"global": 0, "install": 1, ":env:": 2}


def parse_config_list(text: str) -> dict[str, str]:
    """``pip config list`` lines (``global.index-url='https://...'``, ``:env:.timeout='60'``) as
    {name: value}, each name's value from the section that wins for ``pip install``."""
    found: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        section, dot, name = key.rpartition(".")
        if not sep or not dot or section not in SECTIONS:
            continue
        rank = SECTIONS[section]
        if name not in found or found[name][0] <= rank:
            found[name] = (rank, ast.literal_eval(value) if value[:1] in "'\"" else value)
    return {name: value for name, (_, value) in found.items()}


def reachable_from_a_build(item: str) -> bool:
    """A remote URL, not a path of this machine or a ``file:`` URL."""
    return "://" in item and not item.startswith("file:")


def network_settings(settings: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The settings passed to the build, and a note for each one left out."""
    passed: dict[str, str] = {}
    left_out: list[str] = []
    for name, value in settings.items():
        if name not in PASSED:
            if name not in QUIET:
                left_out.append(f"{name} (not a network setting)")
            continue
        items = value.split() if name in URL_LISTS else [value]
        kept = [item for item in items if name not in URL_LISTS or reachable_from_a_build(item)]
        left_out += [f"{name}={item} (a path on this machine)" for item in items if item not in kept]
        if kept:
            passed[name] = " ".join(kept)
    return passed, left_out


def trusted_bundle(
    settings: Mapping[str, str], env: Mapping[str, str], system_bundle: Path | None
) -> Path | None:
    """The CA bundle pip on the host verifies with: its ``cert`` setting, else SSL_CERT_FILE,
    else the system bundle where there is one."""
    for candidate in (settings.get("cert"), env.get("SSL_CERT_FILE"), system_bundle and str(system_bundle)):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def render(passed: Mapping[str, str], with_bundle: bool) -> str:
    settings = {**passed, **({"cert": f"{BUILD_DIR}/ca.crt"} if with_bundle else {})}
    return "".join(["[global]\n", *(f"{name} = {value}\n" for name, value in settings.items())])


def host_config_list() -> str:
    """What the host's pip reports; empty when the host has no pip."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return ""
    return result.stdout if result.returncode == 0 else ""


def write(
    directory: Path, config_list: str, env: Mapping[str, str], system_bundle: Path | None = SYSTEM_BUNDLE
) -> Iterable[str]:
    """Writes DIR/pip.conf (and DIR/ca.crt); returns the notes to print."""
    settings = parse_config_list(config_list)
    passed, left_out = network_settings(settings)
    bundle = trusted_bundle(settings, env, system_bundle)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.crt").unlink(missing_ok=True)
    if bundle is not None:
        shutil.copyfile(bundle, directory / "ca.crt")
    (directory / "pip.conf").write_text(render(passed, bundle is not None))
    notes = [f"pip settings for the build: {', '.join(passed) or 'none (pip defaults)'}"]
    notes.append(f"CA bundle: {bundle}" if bundle else "CA bundle: pip's own")
    if left_out:
        notes.append(f"left out: {'; '.join(left_out)}")
    return notes


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: image_pip_config.py DIR", file=sys.stderr)
        return 2
    for note in write(Path(argv[0]), host_config_list(), os.environ):
        print(f"image-pip-config: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
