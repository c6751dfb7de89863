"""The fixtures of tests/support/cluster.py: a local endpoint, and the scheduler started on it."""

from tests.support.cluster import sim, start_scheduler

__all__ = ["sim", "start_scheduler"]
