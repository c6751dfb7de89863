"""The framework runtime: builds a profile's plugins from the config and runs extension points."""

from scheduler.runtime.framework import Framework, FrameworkError
from scheduler.runtime.waiting import WaitingPod, WaitingPodMap

__all__ = ["Framework", "FrameworkError", "WaitingPod", "WaitingPodMap"]
