"""The wheel (what the image installs and `pip install` gets): every module and data file of
`scheduler` and `simcluster`, nothing else, and no package-data pattern that matches nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("scheduler", "simcluster")


def package_files() -> set[str]:
    """The files under the packages, as the wheel names them (bytecode caches aside)."""
    return {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_every_package_data_pattern_matches_a_file() -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    stale = [
        f"{package}: {pattern}"
        for package, patterns in package_data.items()
        for pattern in patterns
        if not any((ROOT / package).glob(pattern))
    ]
    assert stale == []


def test_the_wheel_holds_every_file_of_the_packages(tmp_path: Path) -> None:
    # built from a copy with what the image's build stage copies, so the checkout stays clean
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-index", "--no-deps"]
    command += ["--no-build-isolation", "--wheel-dir", str(tmp_path / "wheel"), str(source)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    (wheel,) = (tmp_path / "wheel").glob("pyscheduler-*.whl")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in name}
    assert shipped == package_files()
