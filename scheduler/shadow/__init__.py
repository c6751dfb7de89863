"""Shadow mode: decide where pyscheduler would put another scheduler's pods, and compare."""

from scheduler.shadow.mode import RESULTS, ShadowMode, ShadowPodEvents

__all__ = ["RESULTS", "ShadowMode", "ShadowPodEvents"]
