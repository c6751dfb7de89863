"""docs/plugins.md: its tutorial is run as a reader would run it, and it names every extension point.

The tutorial's blocks are marked with an HTML comment just before them:

- ``<!-- tutorial: file PATH -->``: the block is written to PATH (in a fresh directory);
- ``<!-- tutorial: run -->``: the block runs in bash (``set -euo pipefail``), in that directory;
- ``<!-- tutorial: output -->``: each line must appear in the output of the run just before it;
- ``<!-- tutorial: background [until=FILE] -->``: the block starts in the background (the
  reader's second terminal) and runs until the tutorial ends; ``until`` waits for FILE to appear.

pip installs into a directory of its own (put on PYTHONPATH) from a config file, without an index
or build isolation, so the reader's ``pip install ./pkg`` touches neither the virtualenv nor the
network.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from scheduler.framework import interface, placement

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "plugins.md"
MARKED = re.compile(r"<!-- tutorial: (\w+)([^>]*?) -->\n```[\w-]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Step:
    kind: str  # file | run | output | background
    option: str  # the file's path, or background's "until=FILE"
    text: str


def steps() -> list[Step]:
    return [Step(kind, option.strip(), text) for kind, option, text in MARKED.findall(DOC.read_text())]


def test_the_tutorial_writes_tests_packages_installs_enables_and_runs_a_plugin() -> None:
    kinds = [step.kind for step in steps()]
    assert kinds.count("file") >= 5 and kinds.count("run") >= 3 and kinds.count("background") == 2
    assert all(kind in ("file", "run", "output", "background") for kind in kinds), kinds


@pytest.mark.slow
def test_the_tutorial_runs(tmp_path: Path) -> None:
    work = tmp_path / "tutorial"
    work.mkdir()
    pip_conf = tmp_path / "pip.conf"
    site = tmp_path / "site"
    pip_conf.write_text(
        f"[global]\nno-index = true\n[install]\ntarget = {site}\nno-deps = true\nno-build-isolation = false\n"
    )
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PIP_CONFIG_FILE": str(pip_conf),
        "PYTHONPATH": str(site),
    }
    background: list[tuple[subprocess.Popen[bytes], Path]] = []
    last_output = ""
    try:
        for number, step in enumerate(steps()):
            if step.kind == "file":
                path = work / step.option
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(step.text)
            elif step.kind == "run":
                result = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", step.text],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
                last_output = result.stdout + result.stderr
                assert result.returncode == 0, f"{step.text}\n{last_output}\n{logs(background)}"
            elif step.kind == "output":
                for line in step.text.splitlines():
                    assert line in last_output, f"expected {line!r} in:\n{last_output}"
            else:
                log = tmp_path / f"background-{number}.log"
                with log.open("wb") as out:
                    command = ["bash", "-euo", "pipefail", "-c", f"exec {step.text}"]
                    process = subprocess.Popen(
                        command, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT
                    )
                background.append((process, log))
                until = step.option.removeprefix("until=") if step.option.startswith("until=") else ""
                if until:
                    wait_for(work / until, process, log)
    finally:
        for process, _ in background:
            process.terminate()
        for process, _ in background:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for(path: Path, process: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size):
        assert process.poll() is None, f"the background command exited:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{path.name} did not appear within {timeout}s"
        time.sleep(0.05)


def logs(background: list[tuple[subprocess.Popen[bytes], Path]]) -> str:
    return "\n".join(f"--- {log.name} ---\n{log.read_text()[-3000:]}" for _, log in background)


def test_every_extension_point_protocol_is_documented() -> None:
    text = DOC.read_text()
    protocols = {
        name: getattr(module, name)
        for module in (interface, placement)
        for name in dir(module)
        if name.endswith(("Plugin", "Normalizer", "Extensions")) and name != "Plugin"
    }
    methods = {
        method
        for protocol in protocols.values()
        for method in vars(protocol)
        if not method.startswith("_") and callable(vars(protocol)[method])
    }
    assert methods >= {
        "filter",
        "score_nodes",
        "permit",
        "run_in_background",
        "events_to_register",
        "generate_placements",
    }
    missing = sorted(m for m in methods if f"`{m}(" not in text and f"`async {m}(" not in text)
    assert not missing, f"docs/plugins.md does not show the signature of {missing}"
