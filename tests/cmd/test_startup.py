"""The start-up sequence run, explain and simulate share: each failing step is named, the
command's own adjustments see the loaded configuration before the profiles are built."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.config import SchedulerConfiguration
from scheduler.startup import StartupError, scheduler_setup

UNKNOWN_PLUGIN = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
    "- schedulerName: pyscheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: NoSuchPlugin}]\n"
)


def step_failing(path: str | None, plugins: list[str], gates: str) -> tuple[str, str]:
    with pytest.raises(StartupError) as failed:
        scheduler_setup(path, plugins, gates)
    return failed.value.step, str(failed.value)


def test_each_failing_step_is_named(tmp_path: Path) -> None:
    step, message = step_failing(None, [], "NoSuchGate=true")
    assert step == "feature-gates" and "NoSuchGate" in message
    assert step_failing(None, ["no_such_module_here:Plugin"], "")[0] == "plugins"
    step, message = step_failing(str(tmp_path / "missing.yaml"), [], "")
    assert step == "config" and "no such file" in message
    config = tmp_path / "unknown.yaml"
    config.write_text(UNKNOWN_PLUGIN)
    step, message = step_failing(str(config), [], "")
    assert step == "profiles" and "NoSuchPlugin" in message


def test_the_gates_shape_the_defaults_and_the_adjustment_comes_before_the_profiles(tmp_path: Path) -> None:
    setup = scheduler_setup(None, [], "GenericWorkload=true,GangScheduling=true")
    assert "GangScheduling" in setup.config.profiles[0].plugins.enabled_names()
    assert setup.features.enabled("GangScheduling")

    seen: list[str] = []

    def refuse(config: SchedulerConfiguration) -> None:
        seen.append(config.profiles[0].scheduler_name)
        raise StartupError("adjust", "refused")

    config = tmp_path / "unknown.yaml"
    config.write_text(UNKNOWN_PLUGIN)
    with pytest.raises(StartupError) as failed:
        scheduler_setup(str(config), [], "", refuse)
    assert (failed.value.step, seen) == ("adjust", ["pyscheduler"])
