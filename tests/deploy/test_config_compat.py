"""The configuration files shipped by the chart and by deploy/ are accepted by the scheduler's
own loader (strict decode, defaults, validation), so an install cannot fail at start-up on its
own config."""

from __future__ import annotations

import pytest

from scheduler.config import load_config, parse_config
from tests.support.shipping import CHART, DEPLOY, scheduler_config

CI_VALUES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))


def test_deploy_config_loads_with_leader_election_on_its_own_lease() -> None:
    config = load_config(DEPLOY / "config.yaml")
    assert [p.scheduler_name for p in config.profiles] == ["pyscheduler"]
    election = config.leader_election
    assert (election.leader_elect, election.resource_lock) == (True, "leases")
    assert (election.resource_name, election.resource_namespace) == ("pyscheduler", "pyscheduler")


@pytest.mark.helm
@pytest.mark.parametrize("values", CI_VALUES)
def test_chart_config_loads_for_each_values_set(render, values: str) -> None:
    rendered = scheduler_config(render(values=[values], namespace="platform"))
    config = parse_config(rendered)
    assert [p.scheduler_name for p in config.profiles] == [p["schedulerName"] for p in rendered["profiles"]]
    assert config.leader_election.resource_namespace == "platform"
    assert config.leader_election.leader_elect is rendered["leaderElection"]["leaderElect"]


@pytest.mark.helm
def test_chart_without_preemption_disables_default_preemption_in_every_loaded_profile(render) -> None:
    rendered = scheduler_config(render(values=["preemption-off-values.yaml"]))
    for profile in parse_config(rendered).profiles:
        assert "DefaultPreemption" in [p.name for p in profile.plugins.post_filter.disabled]
