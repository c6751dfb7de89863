"""Label selectors and node selectors, compiled once and matched many times."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class SelectorError(ValueError):
    """A selector that the API server would have rejected.

    ``messages`` keeps each problem apart so callers can prefix their own path; the text joins
    them as Go's error aggregates do (duplicates once, several in brackets).
    """

    def __init__(self, *messages: str) -> None:
        unique = tuple(dict.fromkeys(messages))
        super().__init__(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
        self.messages = messages


_GO_DECIMAL = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``, which Gt/Lt use: None where Go fails (Python's
    ``int`` would also take ``1_000``, spaces and values beyond int64)."""
    if not _GO_DECIMAL.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


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
        number = None if value is None else parse_int64(value)
        if number is None:
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
        number = parse_int64(str(values[0]))
        if number is None:
            # upstream's words (labels.NewRequirement), as a PreScore error shows them
            raise SelectorError(
                f"values[0]: Invalid value: {json.dumps(str(values[0]))}: "
                "for 'Gt', 'Lt' operators, the value must be an integer"
            )
        return Requirement(key, operator, number=number)
    return Requirement(key, operator, frozenset(str(v) for v in values))


def _field_requirement(expression: Mapping) -> Requirement:
    """A ``matchFields`` clause: In or NotIn with exactly one value (a node name), as upstream's
    field selectors take it."""
    requirement = _requirement(expression, frozenset({"In", "NotIn"}))
    values = [str(v) for v in expression.get("values") or ()]
    if len(values) != 1:
        shown = json.dumps(values, separators=(",", ":"))
        raise SelectorError(f"values: Invalid value: {shown}: must have one element")
    return requirement


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
        """Every invalid requirement is reported, each under its ``matchExpressions[i]`` or
        ``matchFields[i]`` path, as upstream collects them."""
        errors: list[str] = []
        expressions = []
        for i, expr in enumerate(term.get("matchExpressions") or ()):
            try:
                expressions.append(_requirement(expr, _NODE_OPERATORS))
            except SelectorError as exc:
                errors += (f"matchExpressions[{i}].{m}" for m in exc.messages)
        fields = []
        for i, expr in enumerate(term.get("matchFields") or ()):
            try:
                if expr.get("key") != "metadata.name":
                    raise SelectorError(f"key: Invalid value: {expr.get('key')!r}")
                fields.append(_field_requirement(expr))
            except SelectorError as exc:
                errors += (f"matchFields[{i}].{m}" for m in exc.messages)
        if errors:
            raise SelectorError(*errors)
        return cls(tuple(expressions), tuple(fields))

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
    """preferredDuringSchedulingIgnoredDuringExecution. As upstream, zero-weight and empty terms
    are dropped unparsed, and the errors of all the others are reported under ``[i]`` paths."""
    result = []
    errors: list[str] = []
    for i, entry in enumerate(terms or ()):
        weight = int(entry.get("weight", 0))
        preference = entry.get("preference") or {}
        if not weight or not (preference.get("matchExpressions") or preference.get("matchFields")):
            continue
        try:
            result.append(PreferredTerm(weight, NodeSelectorTerm.parse(preference)))
        except SelectorError as exc:
            errors += (f"[{i}].{m}" for m in exc.messages)
    if errors:
        raise SelectorError(*errors)
    return tuple(result)
