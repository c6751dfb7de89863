"""The scheduler starts without importing kubernetes_asyncio (~0.5 s of CPU for its generated
API and models); only the local endpoint (simcluster) and the tests use it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import scheduler.app, scheduler.cli
unwanted = ("kubernetes_asyncio", "kubernetes", "simcluster")
print(json.dumps(sorted(name for name in sys.modules if name.startswith(unwanted))))
"""


def test_the_scheduler_does_not_import_kubernetes_asyncio() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout) == []
