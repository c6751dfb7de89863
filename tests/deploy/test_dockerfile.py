"""The Dockerfile read as docker reads it, for machines without docker (test_container.py builds and
runs it): classic-builder syntax only, one BASE_IMAGE for every stage, the build host's pip settings
in the build stage only, and the PLUGINS build argument installed into the scheduler's virtualenv
after pyscheduler and before pip is removed, with the example package in the build context."""

from __future__ import annotations

import re

from tests.support.shipping import ROOT

DOCKERFILE = ROOT / "Dockerfile"
RUNTIME = "(runtime)"  # the last stage, which has no name


def instructions() -> list[tuple[str, str, str]]:
    """(stage name, instruction, arguments) in order, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    stage = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stage = rest.partition(" AS ")[2].strip() or RUNTIME
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
    removal = position(lambda stage, word, rest: word == "RUN" and "rm -rf pip " in rest)
    assert {steps[i][0] for i in (own, declared, plugins, removal)} == {"build"}
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
    assert "make image PLUGINS=./examples/plugins/pyscheduler-example-plugins" in DOCKERFILE.read_text()
    assert (ROOT / "examples" / "plugins" / "pyscheduler-example-plugins" / "pyproject.toml").is_file()


def test_only_classic_builder_syntax() -> None:
    """No `# syntax=` line (BuildKit would fetch that frontend image), no BuildKit-only flags."""
    assert not re.search(r"^#\s*syntax\s*=", DOCKERFILE.read_text(), re.MULTILINE | re.IGNORECASE)
    for _, word, rest in instructions():
        assert not re.search(r"--(mount|link|chmod|parents|exclude|checksum)\b", rest), (word, rest)
        assert "<<" not in rest, (word, rest)  # heredocs


def test_every_stage_starts_from_the_base_image_argument() -> None:
    steps = instructions()
    assert steps[0] == ("", "ARG", "BASE_IMAGE=python:3.12-slim-bookworm")
    froms = [rest for _, word, rest in steps if word == "FROM"]
    assert froms == ["${BASE_IMAGE} AS requirements", "${BASE_IMAGE} AS build", "${BASE_IMAGE}"]


def test_the_host_pip_settings_reach_the_build_stage_only() -> None:
    copies = [(stage, rest) for stage, word, rest in instructions() if word == "COPY"]
    assert ("build", "image/pip/ /build/pip/") in copies
    runtime = [rest for stage, rest in copies if stage == RUNTIME]
    assert runtime == ["--from=build /opt/pyscheduler /opt/pyscheduler"]
    env = next(rest for _, word, rest in instructions() if word == "ENV" and "PIP_CONFIG_FILE" in rest)
    assert "PIP_CONFIG_FILE=/build/pip/pip.conf" in env
    assert "!image/pip/" in (ROOT / ".dockerignore").read_text().splitlines()
    ignored = (ROOT / "image" / "pip" / ".gitignore").read_text().splitlines()
    assert ignored[-2:] == ["*", "!.gitignore"]


def test_dependencies_are_installed_from_a_copied_requirements_file_before_the_sources() -> None:
    """docker's cache compares the copied file's contents: pyproject.toml edits that leave the
    dependencies alone (markers, tool settings) reuse the dependencies' layer."""
    requirements = position(
        lambda stage, word, rest: (
            stage == "build" and word == "COPY" and rest.startswith("--from=requirements")
        )
    )
    install = position(lambda stage, word, rest: word == "RUN" and "-r /tmp/requirements.txt" in rest)
    sources = position(lambda stage, word, rest: word == "COPY" and rest == "scheduler ./scheduler")
    assert requirements < install < sources
    assert not [
        rest for stage, word, rest in instructions()[:install] if stage == "build" and "pyproject" in rest
    ]
