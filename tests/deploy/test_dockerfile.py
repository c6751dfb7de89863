"""The Dockerfile's PLUGINS build argument, read as docker reads it (no docker here): declared in the
build stage, installed into the scheduler's virtualenv after pyscheduler and before pip is
removed, with the example package in the build context."""

from __future__ import annotations

import re

from shipping import ROOT

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[int, str, str]]:
    """(stage index, instruction, arguments) in order, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    stage = -1
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stage += 1
        found.append((stage, word.upper(), rest.strip()))
    return found


def position(predicate) -> int:
    matches = [i for i, step in enumerate(instructions()) if predicate(*step)]
    assert len(matches) == 1, matches
    return matches[0]


def test_plugins_are_installed_in_the_build_stage_between_pyscheduler_and_the_pip_removal() -> None:
    steps = instructions()
    declared = position(lambda stage, word, rest: word == "ARG" and rest == 'PLUGINS=""')
    own = position(lambda stage, word, rest: word == "RUN" and "pip install --no-deps ." in rest)
    plugins = position(lambda stage, word, rest: word == "RUN" and "pip install $PLUGINS" in rest)
    removal = position(lambda stage, word, rest: word == "RUN" and "site-packages/pip" in rest)
    assert steps[declared][0] == steps[plugins][0] == 0  # the build stage, copied whole to the runtime
    assert own < declared < plugins < removal
    assert steps[plugins][2].startswith('if [ -n "$PLUGINS" ]; then /opt/pyscheduler/bin/pip install')


def test_the_example_package_is_in_the_build_context_at_the_path_the_docs_give() -> None:
    copied = position(
        lambda stage, word, rest: word == "COPY" and rest == "examples/plugins ./examples/plugins"
    )
    plugins = position(lambda stage, word, rest: word == "RUN" and "pip install $PLUGINS" in rest)
    assert copied < plugins
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "!examples/plugins/" in ignored
    assert "--build-arg PLUGINS=./examples/plugins/pyscheduler-example-plugins" in DOCKERFILE.read_text()
    assert (ROOT / "examples" / "plugins" / "pyscheduler-example-plugins" / "pyproject.toml").is_file()
