"""Helpers for testing scheduling plugins (and the scheduler): builders of pods, nodes and storage
objects, a fake Handle, API client and clock, and a harness that runs a plugin or a profile on a
synthetic cluster. Part of the plugin API (docs/plugins.md), like ``scheduler.framework``."""

from scheduler.testing.builders import (
    Cluster,
    FakeClient,
    FakeHandle,
    FakeLister,
    FakeSnapshot,
    RecordedEvent,
    Request,
    deployment_dict,
    expand_verdicts,
    make_node,
    make_pod,
    node_dict,
    per_node_and_batch_filter,
    per_node_and_batch_score,
    pod_dict,
    required_pod_affinity,
    table_of,
)
from scheduler.testing.clock import FakeClock
from scheduler.testing.harness import (
    PermitOutcome,
    PluginOutcome,
    ProfileOutcome,
    run_permit,
    run_plugin,
    run_profile,
)
from scheduler.testing.inmemory import InMemoryCluster, InMemoryLister

__all__ = [
    "Cluster",
    "FakeClient",
    "FakeClock",
    "FakeHandle",
    "FakeLister",
    "FakeSnapshot",
    "InMemoryCluster",
    "InMemoryLister",
    "PermitOutcome",
    "PluginOutcome",
    "ProfileOutcome",
    "RecordedEvent",
    "Request",
    "deployment_dict",
    "expand_verdicts",
    "make_node",
    "make_pod",
    "node_dict",
    "per_node_and_batch_filter",
    "per_node_and_batch_score",
    "pod_dict",
    "required_pod_affinity",
    "run_permit",
    "run_plugin",
    "run_profile",
    "table_of",
]
