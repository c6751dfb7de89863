"""Custom resources the way apiextensions-apiserver treats them: defaults, then schema validation.

Pruning is the unknown-field walk of `schema.py`; here the CRD's structural schema fills in
`default`s (nulls of non-nullable fields with a default are defaulted too) and checks types,
`required`, `enum`, bounds, lengths, `pattern`, `nullable`, `x-kubernetes-int-or-string` and
embedded resources. Errors read as the real server's field errors (kube-openapi's messages
wrapped in `field.Error`), collected into one 422 Invalid.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson

from simcluster.errors import ApiError
from simcluster.schema import Node

Obj = dict[str, Any]

# field.ErrorType -> the cause reason the Status carries
REASONS = {
    "Required value": "FieldValueRequired",
    "Invalid value": "FieldValueInvalid",
    "Unsupported value": "FieldValueNotSupported",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
}


@dataclass(slots=True, frozen=True)
class FieldError:
    """One `field.Error`: the path, its type ("Invalid value", ...), the bad value, a detail."""

    path: str
    type: str
    value: Any = None
    detail: str = ""
    show_value: bool = True

    def body(self) -> str:
        text = self.type
        if self.show_value:
            text += f": {go_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it: numbers and booleans plain, strings quoted, else JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return quote(value)
    return orjson.dumps(value).decode()


def _go_float(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)


def quote(text: str) -> str:
    """Go's strconv.Quote for the common cases (JSON string escaping)."""
    return orjson.dumps(text).decode()


def invalid(kind: str, group: str, name: str, errs: list[FieldError]) -> ApiError:
    """The 422 a real server answers for field errors: aggregated message and causes."""
    unique = list(dict.fromkeys(str(e) for e in errs))
    text = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    qualified = f"{kind}.{group}" if group else kind
    causes = [
        {"reason": REASONS.get(e.type, "FieldValueInvalid"), "message": e.body(), "field": e.path}
        for e in errs
    ]
    details: Obj = {"name": name, "kind": kind, "causes": causes}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}', details=details)


# ---- defaulting ---------------------------------------------------------------------------


def apply_defaults(node: Node, value: Any) -> None:
    """Fill in missing fields (and nulls of non-nullable fields) from the schema's defaults."""
    if node.props and isinstance(value, dict):
        for key, child in node.props.items():
            spec = child.spec
            if "default" in spec and (key not in value or (value[key] is None and not spec.get("nullable"))):
                value[key] = copy.deepcopy(spec["default"])
            elif key in value and value[key] is None and not spec.get("nullable") and child.spec:
                del value[key]  # nulls of non-nullable fields without a default are pruned
            if key in value and value[key] is not None and (child.props or child.items or child.values):
                apply_defaults(child, value[key])
        if node.values is not None and node.values.spec:
            for key, child_value in value.items():
                if key not in node.props:
                    apply_defaults(node.values, child_value)
    elif node.values is not None and isinstance(value, dict):
        for child_value in value.values():
            apply_defaults(node.values, child_value)
    elif node.items is not None and isinstance(value, list):
        for item in value:
            apply_defaults(node.items, item)


# ---- validation ---------------------------------------------------------------------------

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}


def validate(node: Node, value: Any) -> list[FieldError]:
    """Check a custom resource against its version's schema (metadata is checked elsewhere)."""
    errs: list[FieldError] = []
    _validate(node, value, "", errs, root=True)
    return errs


def _validate(node: Node, value: Any, path: str, errs: list[FieldError], root: bool = False) -> None:
    spec = node.spec
    if not spec and not root:
        return
    name = path or "."
    if value is None:
        if spec.get("nullable") or not spec.get("type"):
            return
        errs.append(_type_error(path, name, spec["type"], "null"))
        return
    if spec.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            errs.append(_type_error(path, name, "integer,string", _json_type(value)))
            return
    elif expected := spec.get("type"):
        actual = _json_type(value)
        ok = (
            actual == expected
            or (expected == "number" and actual == "integer")
            or (expected == "integer" and isinstance(value, float) and value.is_integer())
        )
        if not ok:
            errs.append(_type_error(path, name, expected, actual))
            return
    if "enum" in spec and value not in spec["enum"]:
        allowed = [v if isinstance(v, str) else orjson.dumps(v).decode() for v in spec["enum"]]
        errs.append(
            FieldError(
                path, "Unsupported value", value, "supported values: " + ", ".join(map(quote, allowed))
            )
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _bounds(spec, value, path, name, errs)
    elif isinstance(value, str):
        _string(spec, value, path, name, errs)
    elif isinstance(value, list):
        _array(node, spec, value, path, name, errs)
    elif isinstance(value, dict):
        _object(node, spec, value, path, name, errs, root)


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "object")


def _type_error(path: str, name: str, expected: str, actual: str) -> FieldError:
    return FieldError(
        path, "Invalid value", actual, f"{name} in body must be of type {expected}: {quote(actual)}"
    )


def _bounds(spec: Obj, value: float, path: str, name: str, errs: list[FieldError]) -> None:
    if "maximum" in spec:
        limit = spec["maximum"]
        if spec.get("exclusiveMaximum") and value >= limit:
            errs.append(
                FieldError(path, "Invalid value", value, f"{name} in body should be less than {_num(limit)}")
            )
        elif value > limit:
            errs.append(
                FieldError(
                    path,
                    "Invalid value",
                    value,
                    f"{name} in body should be less than or equal to {_num(limit)}",
                )
            )
    if "minimum" in spec:
        limit = spec["minimum"]
        if spec.get("exclusiveMinimum") and value <= limit:
            errs.append(
                FieldError(
                    path, "Invalid value", value, f"{name} in body should be greater than {_num(limit)}"
                )
            )
        elif value < limit:
            errs.append(
                FieldError(
                    path,
                    "Invalid value",
                    value,
                    f"{name} in body should be greater than or equal to {_num(limit)}",
                )
            )
    factor = spec.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        errs.append(
            FieldError(path, "Invalid value", value, f"{name} in body should be a multiple of {_num(factor)}")
        )


def _num(value: float) -> str:
    return _go_float(value) if isinstance(value, float) else str(value)


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _string(spec: Obj, value: str, path: str, name: str, errs: list[FieldError]) -> None:
    if "maxLength" in spec and len(value) > spec["maxLength"]:
        limit = spec["maxLength"]
        errs.append(
            FieldError(
                path,
                "Too long",
                detail=f"may not be more than {limit} {'byte' if limit == 1 else 'bytes'}",
                show_value=False,
            )
        )
    if "minLength" in spec and len(value) < spec["minLength"]:
        errs.append(
            FieldError(
                path,
                "Invalid value",
                value,
                f"{name} in body should be at least {spec['minLength']} chars long",
            )
        )
    pattern = spec.get("pattern")
    if pattern and not _regex(pattern).search(value):
        errs.append(FieldError(path, "Invalid value", value, f"{name} in body should match '{pattern}'"))


def _array(node: Node, spec: Obj, value: list[Any], path: str, name: str, errs: list[FieldError]) -> None:
    if "maxItems" in spec and len(value) > spec["maxItems"]:
        limit = spec["maxItems"]
        errs.append(
            FieldError(
                path, "Too many", len(value), f"must have at most {limit} {'item' if limit == 1 else 'items'}"
            )
        )
    if "minItems" in spec and len(value) < spec["minItems"]:
        errs.append(
            FieldError(
                path,
                "Invalid value",
                len(value),
                f"{name} in body should have at least {spec['minItems']} items",
            )
        )
    if spec.get("uniqueItems") and len({orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for v in value}) < len(
        value
    ):
        errs.append(FieldError(path, "Invalid value", value, f"{name} in body shouldn't contain duplicates"))
    if node.items is not None:
        for i, item in enumerate(value):
            _validate(node.items, item, f"{path}[{i}]", errs)


def _object(
    node: Node, spec: Obj, value: Obj, path: str, name: str, errs: list[FieldError], root: bool
) -> None:
    if "maxProperties" in spec and len(value) > spec["maxProperties"]:
        limit = spec["maxProperties"]
        errs.append(
            FieldError(
                path, "Too many", len(value), f"must have at most {limit} {'item' if limit == 1 else 'items'}"
            )
        )
    if "minProperties" in spec and len(value) < spec["minProperties"]:
        errs.append(
            FieldError(
                path,
                "Invalid value",
                len(value),
                f"{name} in body should have at least {spec['minProperties']} properties",
            )
        )
    for key in spec.get("required") or ():
        if key not in value:
            errs.append(FieldError(f"{path}.{key}" if path else key, "Required value", show_value=False))
    if node.embedded and not root:
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                errs.append(
                    FieldError(
                        f"{path}.{key}", "Required value", detail="must not be empty", show_value=False
                    )
                )
    props = node.props or {}
    for key, child in value.items():
        sub = props.get(key)
        if sub is None:
            sub = node.values
        if sub is not None and sub.spec and not (key == "metadata" and (root or node.embedded)):
            _validate(sub, child, f"{path}.{key}" if path else key, errs)
