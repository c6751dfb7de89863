"""The import contracts of pyproject.toml ([tool.importlinter], run by `make lint`): the real tree
keeps them, and a copy of it with one wrong import added breaks exactly the contracts that forbid
that import, named in lint-imports' report with the import."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONTRACTS = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the packages under ``root``, with the contracts of its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "400"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_tree_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout
    for name in CONTRACTS.values():
        assert f"{name} KEPT" in result.stdout


@pytest.mark.parametrize(
    ("broken", "module", "wrong_import", "reported"),
    [
        # the cache sits below the pod's cycle
        (["layers"], "scheduler/cache/cache.py", "import scheduler.schedule_one", "scheduler.schedule_one"),
        (
            ["local-endpoint", "local-endpoint-importers"],
            "scheduler/schedule_one.py",
            "import simcluster",
            "simcluster",
        ),
        # the engine may import the local endpoint, `pyscheduler snapshot` may not reach it
        (
            ["local-endpoint"],
            "scheduler/cmd/snapshot.py",
            "import scheduler.simulate.engine",
            "scheduler.simulate.engine",
        ),
        # simulate serves one, but through its engine only
        (
            ["local-endpoint-importers"],
            "scheduler/cmd/simulate.py",
            "import simcluster.store",
            "simcluster.store",
        ),
        # metrics is below the plugins' layer, but no plugin may import it
        (["plugins"], "scheduler/plugins/nodename.py", "import scheduler.metrics", "scheduler.metrics"),
    ],
)
def test_a_wrong_import_breaks_the_contracts_that_forbid_it(
    tmp_path: Path, broken: list[str], module: str, wrong_import: str, reported: str
) -> None:
    for package in ("scheduler", "simcluster"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{wrong_import}  # the wrong import\n")

    result = lint_imports(tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS) - len(broken)} kept, {len(broken)} broken." in result.stdout
    for contract_id, name in CONTRACTS.items():
        assert f"{name} {'BROKEN' if contract_id in broken else 'KEPT'}" in result.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    assert re.search(rf"^-\s+{re.escape(importer)} -> {re.escape(reported)} \(l\.\d+\)$", result.stdout, re.M)
