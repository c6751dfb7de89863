"""Helpers for testing plugins and the scheduler."""

from scheduler.testing.clock import FakeClock

__all__ = ["FakeClock"]
