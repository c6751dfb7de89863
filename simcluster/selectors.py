"""Label and field selectors in their query-string form (`app=web,tier in (a,b)`, `spec.nodeName=`).

Parsed once per request into small predicate objects that run per object on list and per
event on watch, so parsing cost never sits on the per-object path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simcluster.errors import bad_request


@dataclass(slots=True, frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return labels.get(self.key) not in self.values if self.key in labels else True
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            number, bound = int(value), int(self.values[0])
        except ValueError:
            return False
        return number > bound if op == "gt" else number < bound


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside `( … )` sets."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _parse_set(key: str, op: str, rest: str, selector: str) -> Requirement:
    rest = rest.strip()
    if not (rest.startswith("(") and rest.endswith(")")):
        raise bad_request(f"unable to parse requirement: found '{rest}', expected: '('")
    values = tuple(v.strip() for v in rest[1:-1].split(",") if v.strip())
    return Requirement(key, op, values)


def parse_label_selector(selector: str | None) -> tuple[Requirement, ...]:
    if not selector:
        return ()
    requirements = []
    for part in _split_top_level(selector):
        if part.startswith("!"):
            requirements.append(Requirement(part[1:].strip(), "!"))
            continue
        words = part.split(None, 1)
        if len(words) == 2 and words[1].startswith(("in ", "in(", "notin ", "notin(")):
            op, _, rest = words[1].partition("(")
            requirements.append(_parse_set(words[0], op.strip(), "(" + rest, selector))
            continue
        for token, op in (("==", "="), ("!=", "!="), ("=", "="), (">", "gt"), ("<", "lt")):
            if token in part:
                key, _, value = part.partition(token)
                requirements.append(Requirement(key.strip(), op, (value.strip(),)))
                break
        else:
            if any(c in part for c in " ()"):
                raise bad_request(f"unable to parse requirement: {part!r} in selector {selector!r}")
            requirements.append(Requirement(part, "exists"))
    return tuple(requirements)


def selector_requirements(selector: dict[str, Any]) -> tuple[Requirement, ...]:
    """A LabelSelector object (matchLabels, matchExpressions) as requirements."""
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        op, key, values = expr["operator"], expr["key"], ",".join(expr.get("values") or ())
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return parse_label_selector(",".join(parts))


def labels_match(requirements: tuple[Requirement, ...], obj: dict[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(r.matches(labels) for r in requirements)


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form of a dotted field path; missing fields read as "" like on the server."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
        if node is None:
            return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return node if isinstance(node, str) else str(node)


def _unescape(value: str) -> str:
    return value.replace("\\,", ",").replace("\\=", "=").replace("\\\\", "\\")


def parse_field_selector(selector: str | None) -> tuple[tuple[str, bool, str], ...]:
    """Terms as (path, equal?, value)."""
    if not selector:
        return ()
    terms = []
    for part in _split_top_level(selector):
        if "!=" in part:
            path, _, value = part.partition("!=")
            terms.append((path.strip(), False, _unescape(value.strip())))
        elif "=" in part:
            path, _, value = part.replace("==", "=", 1).partition("=")
            terms.append((path.strip(), True, _unescape(value.strip())))
        else:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{part}'")
    return tuple(terms)


FieldGetters = Mapping[str, Callable[[dict[str, Any]], str]]


def fields_match(
    terms: tuple[tuple[str, bool, str], ...], obj: dict[str, Any], getters: FieldGetters | None = None
) -> bool:
    if getters is None:
        return all((field_value(obj, path) == value) is equal for path, equal, value in terms)
    return all((getters[path](obj) == value) is equal for path, equal, value in terms)


def make_filter(
    label_selector: str | None,
    field_selector: str | None,
    namespace: str | None,
    getters: FieldGetters | None = None,
) -> Callable[[dict[str, Any]], bool] | None:
    """One predicate for a list or watch request, or None when everything matches.

    `getters` reads fields a kind computes (an Event's `source`) instead of by dotted path."""
    labels = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector)
    if not labels and not fields and not namespace:
        return None

    def predicate(obj: dict[str, Any]) -> bool:
        if namespace and obj["metadata"].get("namespace") != namespace:
            return False
        return labels_match(labels, obj) and fields_match(fields, obj, getters)

    return predicate
