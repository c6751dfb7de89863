"""The Workload API's gates: switchable, with upstream's dependencies, and the default plugins
they add."""

from __future__ import annotations

import pytest

from scheduler.config import default_config
from scheduler.features import FeatureGateError, FeatureGates
from scheduler.plugins.gangscheduling import PodGroupPodsCount


def multi_point(gates: str) -> list[tuple[str, int | None]]:
    config = default_config(features=FeatureGates.parse(gates))
    return [(ref.name, ref.weight) for ref in config.profiles[0].plugins.multi_point.enabled]


def test_the_gates_add_the_workload_plugins_after_the_defaults() -> None:
    base = multi_point("")
    assert multi_point("GenericWorkload=true") == base
    assert multi_point("GenericWorkload=true,GangScheduling=true") == [*base, ("GangScheduling", None)]
    both = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
    assert multi_point(both)[len(base) :] == [
        ("GangScheduling", None),
        ("TopologyPlacementGenerator", None),
        ("PodGroupPodsCount", 1),
    ]


@pytest.mark.parametrize("gate", ["GangScheduling", "TopologyAwareWorkloadScheduling"])
def test_a_workload_gate_needs_generic_workload(gate: str) -> None:
    with pytest.raises(FeatureGateError) as raised:
        FeatureGates.parse(f"{gate}=true")
    assert (
        str(raised.value)
        == f"{gate} is enabled, but depends on features that are disabled: [GenericWorkload]"
    )
    assert FeatureGates.parse(f"GenericWorkload=true,{gate}=true").enabled(gate)


def test_placement_scores_are_normalised_against_the_best() -> None:
    plugin = PodGroupPodsCount(None, None)  # type: ignore[arg-type]
    scores = [plugin.score_placement(None, count) for count in (3, 6, 0)]
    assert plugin.normalize_placement_scores(scores) is None
    assert scores == [50, 100, 0]
    status = plugin.normalize_placement_scores([0, 0])
    assert status is not None and "no pods from pod group" in status.message()


def test_workload_aware_preemption_is_known_and_implemented_off_only() -> None:
    gates = "GenericWorkload=true,GangScheduling=true"
    assert not FeatureGates.parse(f"{gates},WorkloadAwarePreemption=false").enabled("WorkloadAwarePreemption")
    with pytest.raises(FeatureGateError) as raised:
        FeatureGates.parse(f"{gates},WorkloadAwarePreemption=true")
    assert "WorkloadAwarePreemption: pyscheduler implements only its default" in str(raised.value)
