"""The fixtures of tests/support/coscheduling.py: a local endpoint with the PodGroup CRD, and the
scheduler with Coscheduling's profile."""

from tests.support.coscheduling import scheduler, sim

__all__ = ["scheduler", "sim"]
