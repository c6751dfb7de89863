"""DefaultPreemption: when a pod fits nowhere, evict lower-priority pods to make room for it."""

from scheduler.plugins.defaultpreemption.plugin import DefaultPreemption

__all__ = ["DefaultPreemption"]
