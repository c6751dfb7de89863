"""The fixtures of tests/support/gang.py: local endpoints, and the scheduler with the Workload
API's gates on."""

from tests.support.gang import new_cluster, start_scheduler

__all__ = ["new_cluster", "start_scheduler"]
