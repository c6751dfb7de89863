"""The integration tests here run the scheduler as tests/integration does."""

from tests.support.cluster import start_scheduler

__all__ = ["start_scheduler"]
