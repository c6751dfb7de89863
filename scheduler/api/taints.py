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
        """One shared instance per distinct toleration (most pods carry the same defaults, e.g.
        not-ready and unreachable): a lookup instead of building a frozen object per pod."""
        fields = (
            str(toleration.get("key", "") or ""),
            str(toleration.get("operator", "") or "Equal"),
            str(toleration.get("value", "") or ""),
            str(toleration.get("effect", "") or ""),
        )
        known = _TOLERATIONS.get(fields)
        if known is None:
            known = cls(*fields)
            if len(_TOLERATIONS) < _MAX_SHARED_TOLERATIONS:
                _TOLERATIONS[fields] = known
        return known

    def tolerates(self, taint: Taint) -> bool:
        """Empty effect tolerates every effect; empty key with Exists tolerates every key."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == taint.value


_MAX_SHARED_TOLERATIONS = 4096  # beyond that (keys made per pod), new ones are not kept
_TOLERATIONS: dict[tuple[str, str, str, str], Toleration] = {}


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
