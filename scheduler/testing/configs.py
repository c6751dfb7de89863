"""KubeSchedulerConfiguration documents (plain dicts) that several tests and benchmarks start from."""

from __future__ import annotations

from typing import Any


def no_default_spread_config() -> dict[str, Any]:
    """One ``pyscheduler`` profile whose PodTopologySpread has no system default constraints.

    Those defaults make every pod unsignable (as upstream), so a profile that batches alike pods,
    or a measurement without spreading, lists none. A fresh document on each call."""
    spread_args = {"defaultingType": "List", "defaultConstraints": []}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "pyscheduler",
                "pluginConfig": [{"name": "PodTopologySpread", "args": spread_args}],
            }
        ],
    }
