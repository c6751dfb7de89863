"""Taints and tolerations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, taint: Mapping) -> Taint:
        return cls(str(taint.get("key", "")), str(taint.get("value", "") or ""), str(taint.get("effect", "")))


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    @classmethod
    def parse(cls, toleration: Mapping) -> Toleration:
        return cls(
            str(toleration.get("key", "") or ""),
            str(toleration.get("operator", "") or "Equal"),
            str(toleration.get("value", "") or ""),
            str(toleration.get("effect", "") or ""),
        )

    def tolerates(self, taint: Taint) -> bool:
        """Empty effect tolerates every effect; empty key with Exists tolerates every key."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == taint.value


def untolerated(
    taints: Iterable[Taint], tolerations: Iterable[Toleration], effects: Iterable[str]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates, or None."""
    wanted = set(effects)
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.effect in wanted and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
