"""Shapes: the JSON type each field the scheduler reads must have, checked with its field path.

The scheduler trusts nothing it is served (docs/architecture.md, Principles: "Never crash the loop
on bad input"). Before an object is used, the fields it reads are checked against a compact shape
(objects with named fields, lists, maps, strings, integers, booleans, quantities), so a wrong type
anywhere is reported as ``spec.containers[0].resources.requests[cpu]: invalid quantity "abc"``
instead of surfacing as an exception deep inside a plugin. Paths are written as upstream's field
paths are (``[i]`` for a list index, ``[key]`` for a map key).

Fields the scheduler does not read are not looked at (an unknown field is fine, as for any
Kubernetes client). A null field counts as absent, as Go's decoding has it; a null list element
or map value is an error (no API server sends one).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from scheduler.api.quantity import QuantityError, parse_quantity

Check = Callable[[Any], None]  # raises ShapeError

# Amounts beyond this cannot be added up over a node's pods in the node table's int64 columns
# (no node has 8 PiB of memory or nine trillion cores).
MAX_AMOUNT = 2**53
CPU = "cpu"


class ShapeError(ValueError):
    """A value that does not have the shape the scheduler reads it with.

    Raised where the problem is found; each enclosing object, list or map adds its part of the
    path on the way out (so a value that is fine costs no path building)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.parts: list[str] = []  # innermost first: ["[cpu]", "requests", "resources", "[0]", ...]

    @property
    def path(self) -> str:
        text = ""
        for part in reversed(self.parts):
            text += part if part.startswith("[") or not text else "." + part
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" if self.parts else self.problem


class MalformedObject(ValueError):
    """An object the scheduler cannot use; it is reported and skipped, never fatal.

    ``key`` names it for the log (``namespace/name``; ``<no name>`` where it has none).
    """

    def __init__(self, kind: str, key: str, reason: str) -> None:
        super().__init__(f"malformed {kind} {key}: {reason}")
        self.kind = kind
        self.key = key
        self.reason = reason


def describe(value: Any) -> str:
    """A value as an error message shows it: its JSON type, and a short rendering of scalars."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        text = repr(value)
        return f"number {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f'string "{shown}"'
    if isinstance(value, list):
        return "list"
    return "object"


# ------------------------------------------------------------------------------- scalars


def string(value: Any) -> None:
    if not isinstance(value, str):
        raise ShapeError(f"must be a string, got {describe(value)}")


def boolean(value: Any) -> None:
    if not isinstance(value, bool):
        raise ShapeError(f"must be a boolean, got {describe(value)}")


def integer(bits: int) -> Check:
    """A JSON integer that fits a signed ``bits``-bit Go integer (5.0 is not one, for Go)."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def check(value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ShapeError(f"must be an integer, got {describe(value)}")
        if not low <= value <= high:
            raise ShapeError(f"must be a {bits}-bit integer, got {describe(value)}")

    return check


INT32 = integer(32)
INT64 = integer(64)


def int_or_string(value: Any) -> None:
    if isinstance(value, str):
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(f"must be an integer or a string, got {describe(value)}")


def quantity_of(resource: str) -> Check:
    """A non-negative quantity of ``resource`` (CPU is counted in millicores) small enough to sum."""
    scale = 1000 if resource == CPU else 1

    def check(value: Any) -> None:
        problem = _quantity_problem(value, scale) if isinstance(value, str) else _number_problem(value, scale)
        if problem is not None:
            raise ShapeError(problem)

    return check


@lru_cache(maxsize=4096)
def _quantity_problem(value: str, scale: int) -> str | None:
    try:
        amount = parse_quantity(value)
    except QuantityError:
        return f'invalid quantity "{value}"'
    return _amount_problem(value, amount, scale)


def _number_problem(value: Any, scale: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"invalid quantity {describe(value)}"
    return _amount_problem(value, parse_quantity(value), scale)


def _amount_problem(value: Any, amount: Fraction, scale: int) -> str | None:
    if amount < 0:
        return f"invalid quantity {json.dumps(value)}: must not be negative"
    if amount * scale > MAX_AMOUNT:
        return f"invalid quantity {json.dumps(value)}: out of range"
    return None


QUANTITY = quantity_of("")
_QUANTITY_OF = {CPU: quantity_of(CPU)}


def quantities(value: Any) -> None:
    """A ResourceList: resource name -> quantity of it."""
    if not isinstance(value, dict):
        raise ShapeError(f"must be an object, got {describe(value)}")
    for name, amount in value.items():
        try:
            _QUANTITY_OF.get(name, QUANTITY)(amount)
        except ShapeError as exc:
            exc.parts.append(f"[{name}]")
            raise


# ------------------------------------------------------------------------------ composites


def fields(shape: Mapping[str, Check], *, required: tuple[str, ...] = ()) -> Check:
    """An object whose named fields have these shapes; ``required`` ones must be set (not null,
    not an empty string)."""
    items = tuple(shape.items())
    lookup = dict(shape).get

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise ShapeError(f"must be an object, got {describe(value)}")
        name = ""
        try:
            # walk whichever is shorter: the object's fields, or the ones the shape knows
            if len(value) < len(items):
                for name, item in value.items():
                    child = lookup(name)
                    if child is not None and item is not None:
                        child(item)
            else:
                for name, child in items:
                    item = value.get(name)
                    if item is not None:
                        child(item)
        except ShapeError as exc:
            exc.parts.append(name)
            raise
        for name in required:
            if value.get(name) in (None, ""):
                error = ShapeError("required value")
                error.parts.append(name)
                raise error

    return check


def list_of(item: Check) -> Check:
    def check(value: Any) -> None:
        if not isinstance(value, list):
            raise ShapeError(f"must be a list, got {describe(value)}")
        i = 0
        try:
            for i, element in enumerate(value):  # noqa: B007 (i names the failing element)
                if element is None:
                    raise ShapeError("must not be null")
                item(element)
        except ShapeError as exc:
            exc.parts.append(f"[{i}]")
            raise

    return check


def map_of(item: Check) -> Check:
    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise ShapeError(f"must be an object, got {describe(value)}")
        key = ""
        try:
            for key, element in value.items():  # noqa: B007 (key names the failing value)
                item(element)
        except ShapeError as exc:
            exc.parts.append(f"[{key}]")
            raise

    return check


STRINGS = list_of(string)
STRING_MAP = map_of(string)
