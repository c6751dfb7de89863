"""Without the optional extra `sim`, the subcommands that run the local API endpoint refuse with one
line naming the install command and exit 2; the others do not need it."""

from __future__ import annotations

import sys

import pytest

from scheduler import cli


@pytest.fixture
def without(monkeypatch):
    """Hide a module as if it were not installed (a None entry in sys.modules makes importing it
    fail and find_spec answer None)."""

    def hide(name: str) -> None:
        monkeypatch.setitem(sys.modules, name, None)

    return hide


@pytest.mark.parametrize("missing", cli.SIM_MODULES)
@pytest.mark.parametrize("command", sorted(cli.NEEDS_SIM))
def test_a_sim_command_without_the_extra_exits_2_naming_the_install(without, capsys, command, missing):
    without(missing)
    assert cli.main([command, "--help"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"pyscheduler {command} needs the optional extra 'sim'")
    assert "pip install 'pyscheduler[sim]'" in err


def test_other_commands_run_without_the_extra(without, capsys):
    for name in cli.SIM_MODULES:
        without(name)
    assert cli.main(["feature-gates"]) == 0
    assert "OpportunisticBatching" in capsys.readouterr().out


def test_with_the_extra_a_sim_command_gets_its_own_arguments(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["sim-cluster", "--help"])
    assert exited.value.code == 0
    assert "--kubeconfig-out" in capsys.readouterr().out
