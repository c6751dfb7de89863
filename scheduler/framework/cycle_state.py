"""Per-pod scratch space shared by the plugins of one scheduling cycle."""

from __future__ import annotations

import copy
from typing import Any


class CycleState:
    """Keyed data one plugin writes (usually in PreFilter/PreScore) and later reads.

    ``clone()`` is used by preemption's dry runs: values that define ``clone()`` are cloned,
    others are shallow-copied so a dry run never mutates the real cycle's data.
    """

    __slots__ = (
        "_data",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # PreBind plugins whose pre-flight said they have nothing to do for this pod
        self.skip_pre_bind_plugins: set[str] = set()
        # set for the sampled cycles whose per-plugin latencies are recorded
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        """The value under ``key``; KeyError when a plugin reads what was never written."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        other = CycleState()
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            other._data[key] = clone() if callable(clone) else copy.copy(value)
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        other.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        return other
