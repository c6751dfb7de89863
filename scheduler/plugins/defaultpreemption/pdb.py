"""PodDisruptionBudgets as preemption reads them: which victims would violate one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api import LabelSelector, Pod, SelectorError


@dataclass(slots=True, frozen=True)
class Budget:
    """The parts of a PDB preemption needs, compiled once per preemption attempt."""

    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def parse(cls, pdb: Mapping[str, Any]) -> Budget | None:
        """None for a PDB that can match no pod (no, empty or invalid selector), as upstream."""
        meta = pdb.get("metadata") or {}
        spec = pdb.get("spec") or {}
        status = pdb.get("status") or {}
        try:
            selector = LabelSelector.parse(spec.get("selector"))
        except SelectorError:
            return None
        if selector is None or selector.is_empty:
            return None
        return cls(
            namespace=meta.get("namespace") or "default",
            selector=selector,
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset(status.get("disruptedPods") or ()),
        )


def parse_budgets(pdbs: Iterable[Mapping[str, Any]]) -> list[Budget]:
    return [budget for budget in map(Budget.parse, pdbs) if budget is not None]


def split_by_violation(pods: Sequence[Pod], budgets: Sequence[Budget]) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating), each keeping the order of ``pods``.

    Every matching budget is charged one disruption per pod, in order; a pod whose eviction
    takes any matching budget below zero is violating. Pods the API server already counts as
    disrupted (``status.disruptedPods``) charge nothing.
    """
    allowed = [budget.disruptions_allowed for budget in budgets]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violates = False
        if pod.labels:
            for i, budget in enumerate(budgets):
                if budget.namespace != pod.namespace or not budget.selector.matches(pod.labels):
                    continue
                if pod.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violates = True
        (violating if violates else non_violating).append(pod)
    return violating, non_violating
