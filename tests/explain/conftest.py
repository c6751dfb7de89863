"""The fixtures of tests/support: a small mixed cluster (explain.py), and the scheduler started on a
cluster (cluster.py)."""

from tests.support.cluster import start_scheduler
from tests.support.explain import cluster

__all__ = ["cluster", "start_scheduler"]
