"""Feature gates: kube-scheduler's ``--feature-gates``, with v1.36's stages and defaults.

Only the gates that change what the scheduler decides are known here. pyscheduler implements
some of them both ways (``switchable``); the others it implements at their v1.36 default only,
and asking for the other value is refused at start-up with a message saying so, just as a gate
locked to its default upstream refuses to change. A few defaults are only partly implemented
(``gap``, shown by ``pyscheduler feature-gates``): what they leave out is refused with a reason
naming the feature, never decided wrongly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

ALPHA = "ALPHA"
BETA = "BETA"
GA = ""  # upstream prints no stage for GA gates

OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"


@dataclass(frozen=True, slots=True)
class Gate:
    default: bool
    stage: str
    locked: bool = False  # upstream's LockToDefault
    switchable: bool = False  # pyscheduler implements both values
    # what of the gate's default pyscheduler does not do yet ("" = all of it); the table says so
    gap: str = ""


KNOWN: dict[str, Gate] = {
    "ClearingNominatedNodeNameAfterBinding": Gate(True, BETA),
    "DRAAdminAccess": Gate(True, GA, locked=True),
    "DRAConsumableCapacity": Gate(True, BETA),
    "DRADeviceBindingConditions": Gate(True, BETA),
    DRA_DEVICE_TAINT_RULES: Gate(False, BETA, switchable=True),
    "DRADeviceTaints": Gate(True, BETA),
    "DRAExtendedResource": Gate(True, BETA),
    "DRANodeAllocatableResources": Gate(False, ALPHA),
    "DRAPartitionableDevices": Gate(True, BETA),
    "DRAPrioritizedList": Gate(True, GA),
    "DRASchedulerFilterTimeout": Gate(True, BETA),
    "DynamicResourceAllocation": Gate(True, GA, locked=True),
    GANG_SCHEDULING: Gate(False, ALPHA, switchable=True),
    GENERIC_WORKLOAD: Gate(False, ALPHA, switchable=True),
    "InPlacePodLevelResourcesVerticalScaling": Gate(True, BETA),
    "InPlacePodVerticalScaling": Gate(True, GA, locked=True),
    "MatchLabelKeysInPodAffinity": Gate(True, GA, locked=True),
    "NodeDeclaredFeatures": Gate(True, BETA),
    "NominatedNodeNameForExpectation": Gate(True, BETA),
    OPPORTUNISTIC_BATCHING: Gate(True, BETA, switchable=True),
    "PodLevelResources": Gate(True, BETA),
    "PodObservedGenerationTracking": Gate(True, GA, locked=True),
    "PodSchedulingReadiness": Gate(True, GA, locked=True),
    "SchedulerAsyncAPICalls": Gate(False, BETA),
    "SchedulerPopFromBackoffQ": Gate(True, BETA),
    "SchedulerQueueingHints": Gate(True, GA, locked=True),
    "StorageCapacityScoring": Gate(False, ALPHA),
    "TaintTolerationComparisonOperators": Gate(False, ALPHA),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: Gate(False, ALPHA, switchable=True),
    "VolumeAttributesClass": Gate(True, GA, locked=True),
    # off only: preemption runs per member of a pod group, with pyscheduler's gang guards
    WORKLOAD_AWARE_PREEMPTION: Gate(False, ALPHA),
}


# A gate that is on needs these on too (upstream's feature dependencies, as far as KNOWN goes).
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    GANG_SCHEDULING: (GENERIC_WORKLOAD,),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: (GENERIC_WORKLOAD,),
    WORKLOAD_AWARE_PREEMPTION: (GANG_SCHEDULING,),
}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value that cannot be honoured; the message says why."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates in force: the defaults, with ``overrides`` (only switchable gates differ)."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        return self.overrides.get(name, KNOWN[name].default)

    @classmethod
    def parse(cls, text: str, known: Mapping[str, Gate] = KNOWN) -> FeatureGates:
        """``Name=true,Other=false`` as kube-scheduler's flag takes it."""
        overrides: dict[str, bool] = {}
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {name}")
            value = _parse_bool(raw.strip())
            if value is None:
                raise FeatureGateError(
                    f"invalid value of {name}={raw.strip()}, err: strconv.ParseBool: "
                    f'parsing "{raw.strip()}": invalid syntax'
                )
            gate = known.get(name)
            if gate is None:
                raise FeatureGateError(f"unrecognized feature gate: {name}")
            if gate.locked and value != gate.default:
                raise FeatureGateError(
                    f"cannot set feature gate {name} to {go_bool(value)}, "
                    f"feature is locked to {go_bool(gate.default)}"
                )
            if not gate.switchable and value != gate.default:
                raise FeatureGateError(
                    f"feature gate {name}: pyscheduler implements only its default "
                    f"({name}={go_bool(gate.default)})"
                )
            overrides[name] = value
        gates = cls(overrides)
        for name, needs in sorted(DEPENDENCIES.items()):
            off = [need for need in needs if not gates.enabled(need)]
            if gates.enabled(name) and off:
                raise FeatureGateError(
                    f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
                )
        return gates

    def describe(self) -> dict[str, bool]:
        """Every known gate and its value, for /configz and the start-up log."""
        return {name: self.enabled(name) for name in sorted(KNOWN)}


DEFAULT_FEATURES = FeatureGates()


def _parse_bool(text: str) -> bool | None:
    """Go's strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def go_bool(value: bool) -> str:
    """A bool as Go prints it (``true``/``false``), as upstream's messages and tables show gates."""
    return "true" if value else "false"
