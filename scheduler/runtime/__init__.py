"""The framework runtime: builds a profile's plugins from the config and runs extension points."""

from scheduler.runtime.framework import CycleError, Framework, FrameworkError, Rejections
from scheduler.runtime.waiting import WaitingPod

__all__ = ["CycleError", "Framework", "FrameworkError", "Rejections", "WaitingPod"]
