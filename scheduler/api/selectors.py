"""Label selectors and node selectors, compiled once and matched many times."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class SelectorError(ValueError):
    """A selector that the API server would have rejected."""


@dataclass(slots=True, frozen=True)
class Requirement:
    """One ``key <operator> values`` clause of a label or node selector."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()
    number: int = 0  # for Gt / Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        return number > self.number if op == "Gt" else number < self.number


_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPERATORS = _LABEL_OPERATORS | {"Gt", "Lt"}


def _requirement(expression: Mapping, operators: frozenset[str]) -> Requirement:
    key = expression.get("key")
    operator = expression.get("operator")
    values = expression.get("values") or []
    if not isinstance(key, str) or not key:
        raise SelectorError("key: Required value")
    if operator not in operators:
        raise SelectorError(f"operator: Unsupported value: {operator!r}")
    if operator in ("In", "NotIn") and not values:
        raise SelectorError(f"values: Required value: must be specified when `operator` is {operator!r}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"values: Forbidden: may not be specified when `operator` is {operator!r}")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(f"values: Required value: must be a single integer for {operator!r}")
        try:
            return Requirement(key, operator, number=int(values[0]))
        except ValueError as exc:
            raise SelectorError(f"values[0]: Invalid value: {values[0]!r}: must be an integer") from exc
    return Requirement(key, operator, frozenset(str(v) for v in values))


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """A metav1.LabelSelector. An empty selector matches everything."""

    requirements: tuple[Requirement, ...]

    @classmethod
    def parse(cls, selector: Mapping | None) -> LabelSelector | None:
        """Compile a selector; ``None`` stays ``None`` (callers decide what a missing one means)."""
        if selector is None:
            return None
        requirements = [
            Requirement(key, "In", frozenset({str(value)}))
            for key, value in (selector.get("matchLabels") or {}).items()
        ]
        requirements += [
            _requirement(expr, _LABEL_OPERATORS) for expr in selector.get("matchExpressions") or ()
        ]
        return cls(tuple(requirements))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    @property
    def is_empty(self) -> bool:
        return not self.requirements


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    """A term matches when all its label expressions and field expressions match."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    @classmethod
    def parse(cls, term: Mapping) -> NodeSelectorTerm:
        expressions = tuple(_requirement(e, _NODE_OPERATORS) for e in term.get("matchExpressions") or ())
        fields = []
        for expr in term.get("matchFields") or ():
            if expr.get("key") != "metadata.name":
                raise SelectorError(f"matchFields.key: Invalid value: {expr.get('key')!r}")
            fields.append(_requirement(expr, frozenset({"In", "NotIn"})))
        return cls(expressions, tuple(fields))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        # A term with nothing in it selects no node (upstream's nodeaffinity semantics).
        if not self.expressions and not self.fields:
            return False
        if not all(req.matches(labels) for req in self.expressions):
            return False
        name_fields = {"metadata.name": node_name}
        return all(req.matches(name_fields) for req in self.fields)


@dataclass(slots=True, frozen=True)
class NodeSelector:
    """Required node affinity: the terms are ORed."""

    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse(cls, selector: Mapping) -> NodeSelector:
        return cls(tuple(NodeSelectorTerm.parse(t) for t in selector.get("nodeSelectorTerms") or ()))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(term.matches(labels, node_name) for term in self.terms)


@dataclass(slots=True, frozen=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


def parse_preferred_terms(terms: Sequence[Mapping] | None) -> tuple[PreferredTerm, ...]:
    """preferredDuringSchedulingIgnoredDuringExecution; zero-weight terms are dropped as upstream does."""
    result = []
    for entry in terms or ():
        weight = int(entry.get("weight", 0))
        if weight:
            result.append(PreferredTerm(weight, NodeSelectorTerm.parse(entry.get("preference") or {})))
    return tuple(result)
