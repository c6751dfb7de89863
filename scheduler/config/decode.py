"""Strict, error-collecting readers for the plain data parsed from YAML/JSON.

Upstream decodes the config file strictly (unknown or mistyped fields are
errors). These helpers do the same, but record the problem in `FieldErrors` and
return a fallback so decoding can go on and report every problem at once.
A `null` value counts as "not given", as it does for Go's pointer fields.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .durations import parse_duration
from .fielderrors import FieldErrors, child, index

__all__ = [
    "as_bool",
    "as_duration",
    "as_float",
    "as_int",
    "as_list",
    "as_mapping",
    "as_opt_int",
    "as_str",
    "as_str_list",
]

_EMPTY: Mapping[str, Any] = {}


def as_mapping(errs: FieldErrors, path: str, value: object, allowed: Collection[str]) -> Mapping[str, Any]:
    """`value` as an object whose keys are all in `allowed`; unknown keys are reported."""
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        errs.invalid(path, value, "must be an object")
        return _EMPTY
    for key in value:
        if not isinstance(key, str) or key not in allowed:
            errs.unknown_field(child(path, str(key)))
    return value


def as_opt_int(errs: FieldErrors, path: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errs.invalid(path, value, "must be an integer")
        return None
    return value


def as_int(errs: FieldErrors, path: str, value: object, default: int) -> int:
    got = as_opt_int(errs, path, value)
    return default if got is None else got


def as_float(errs: FieldErrors, path: str, value: object, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errs.invalid(path, value, "must be a number")
        return default
    return float(value)


def as_str(errs: FieldErrors, path: str, value: object, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        errs.invalid(path, value, "must be a string")
        return default
    return value


def as_bool(errs: FieldErrors, path: str, value: object, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        errs.invalid(path, value, "must be true or false")
        return default
    return value


def as_duration(errs: FieldErrors, path: str, value: object, default: float) -> float:
    """Seconds from a Go duration string such as "15s" or "1m30s"."""
    if value is None:
        return default
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError:
            pass
    errs.invalid(path, value, 'must be a duration such as "15s", "1m30s" or "100ms"')
    return default


def as_list(errs: FieldErrors, path: str, value: object) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.invalid(path, value, "must be a list")
        return []
    return value


def as_str_list(errs: FieldErrors, path: str, value: object) -> list[str]:
    out: list[str] = []
    for i, item in enumerate(as_list(errs, path, value)):
        if isinstance(item, str):
            out.append(item)
        else:
            errs.invalid(index(path, i), item, "must be a string")
    return out
