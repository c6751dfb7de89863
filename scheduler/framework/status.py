"""Plugin results: a code plus human-readable reasons.

Plugins return ``None`` for success (the common case costs nothing) or a :class:`Status`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    # An internal error: the pod is retried with backoff, nothing is wrong with it.
    ERROR = 1
    # The pod does not fit now; preemption may help.
    UNSCHEDULABLE = 2
    # The pod does not fit and preemption cannot change that (e.g. node selector mismatch).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # Permit: hold the pod until allowed or timed out.
    WAIT = 4
    # PreFilter/PreScore: nothing to do for this pod, skip the matching Filter/Score.
    # Bind: this plugin does not bind the pod, ask the next one.
    SKIP = 5
    # The pod waits for something outside the scheduler (not the pod's fault, not a node's).
    PENDING = 6


@dataclass(slots=True, frozen=True)
class Status:
    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: BaseException | None = field(default=None, compare=False)

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def from_error(cls, error: BaseException, plugin: str = "") -> Status:
        return cls(Code.ERROR, (str(error) or type(error).__name__,), plugin, error)

    @classmethod
    def skip(cls) -> Status:
        return _SKIP

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    @property
    def is_rejected(self) -> bool:
        """Unschedulable, unresolvable or pending: the pod cannot go there, no error occurred."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def as_error(self, context: str) -> Status:
        """This status as an Error whose message says where it happened, worded as upstream's
        wrapped errors (``running PreFilter plugin "X": <message>``)."""
        return Status(Code.ERROR, (f"{context}: {self.message()}",), self.plugin, self.error)

    def with_plugin(self, plugin: str) -> Status:
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin, self.error)


SUCCESS = Status(Code.SUCCESS)
_SKIP = Status(Code.SKIP)


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS
