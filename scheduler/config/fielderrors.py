"""Field-path errors, collected the way upstream's field.ErrorList is.

A bad config file should be fixed in one edit, not one error per restart, so
decoding and validation append to a shared `FieldErrors` and raise a single
`ConfigError` naming every problem with its full path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["ConfigError", "FieldErrors", "child", "index", "show"]


def child(path: str, name: str) -> str:
    """`profiles[0]` + `plugins` -> `profiles[0].plugins`."""
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    """`profiles` + 0 -> `profiles[0]`."""
    return f"{path}[{i}]"


def show(value: object) -> str:
    """Render a value the way upstream's messages do (strings quoted, bools lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple, Mapping)):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=False)
    return str(value)


class ConfigError(Exception):
    """A configuration that cannot be used; names every offending field.

    `field`/`message` are the first problem; `errors` holds all of them.
    """

    def __init__(self, field: str, message: str, *, more: Iterable[tuple[str, str]] = ()) -> None:
        self.errors: list[tuple[str, str]] = [(field, message), *more]
        self.field = field
        self.message = message
        super().__init__(str(self))

    @classmethod
    def from_errors(cls, errors: Iterable[tuple[str, str]]) -> ConfigError:
        first, *rest = list(errors)
        return cls(first[0], first[1], more=rest)

    def __str__(self) -> str:
        return "; ".join(f"{f}: {m}" if f else m for f, m in self.errors)


@dataclass(slots=True)
class FieldErrors:
    """An ordered list of (field path, message); helpers mirror upstream's error kinds."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        self.items.append((path, message))

    def invalid(self, path: str, value: object, detail: str) -> None:
        self.add(path, f"Invalid value: {show(value)}: {detail}")

    def required(self, path: str, detail: str = "") -> None:
        self.add(path, f"Required value: {detail}" if detail else "Required value")

    def duplicate(self, path: str, value: object) -> None:
        self.add(path, f"Duplicate value: {show(value)}")

    def forbidden(self, path: str, detail: str) -> None:
        self.add(path, f"Forbidden: {detail}")

    def unknown_value(self, path: str, value: object) -> None:
        self.add(path, f"unknown value {show(value)}")

    def unknown_field(self, path: str) -> None:
        self.add(path, "unknown field")

    def __len__(self) -> int:
        return len(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ConfigError.from_errors(self.items)
