"""The Coscheduling plugin's ``pluginConfig`` args, with the defaults of scheduler-plugins v0.35."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.config.fielderrors import FieldErrors
from scheduler.config.typedargs import decode_dataclass


@dataclass
class CoschedulingArgs:
    # how long a placed member waits at Permit for the rest of its group, unless the PodGroup
    # sets spec.scheduleTimeoutSeconds
    permit_waiting_time_seconds: int = 60
    # after a member fits nowhere, how long the group is refused at PreFilter (0: not at all)
    pod_group_backoff_seconds: int = 0
    # a failing member releases its group only when more than this share (percent) of minMember
    # is still unplaced: a group nearly complete keeps what it holds and tries its next pods
    pod_group_reject_percentage: int = 10

    def validate(self) -> list[str]:
        errors = []
        if self.permit_waiting_time_seconds < 0:
            errors.append(
                f"permitWaitingTimeSeconds: Invalid value: {self.permit_waiting_time_seconds}: "
                "must be greater than 0"
            )
        if self.pod_group_backoff_seconds < 0:
            errors.append(
                f"podGroupBackoffSeconds: Invalid value: {self.pod_group_backoff_seconds}: "
                "must be greater than 0"
            )
        if not 0 <= self.pod_group_reject_percentage <= 100:
            errors.append(
                f"podGroupRejectPercentage: Invalid value: {self.pod_group_reject_percentage}: "
                "must be between 0 and 100"
            )
        return errors


def decode_args(args: CoschedulingArgs | Mapping[str, Any] | None) -> CoschedulingArgs:
    """The args as given, or decoded from a plain ``pluginConfig`` mapping (a configuration
    loaded without the plugins' args types); ValueError lists every wrong field."""
    if isinstance(args, CoschedulingArgs):
        return args
    errs = FieldErrors()
    decoded = decode_dataclass(errs, "args", CoschedulingArgs, args)
    if decoded is None or errs:
        raise ValueError("; ".join(f"{path}: {message}" for path, message in errs.items))
    return decoded
