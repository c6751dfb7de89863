"""Field checks shared by the resource.k8s.io validations, worded as the API server words them.

Each check raises ``FieldInvalid`` with the field's path and the message after it; the caller
reports the first one found.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scheduler.api.quantity import QuantityError, canonical_quantity
from scheduler.config.extenders import qualified_name_errors

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class FieldInvalid(Exception):
    """One field error: the path and the server's wording after it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def label(value: Any, path: str) -> None:
    if not value:
        raise FieldInvalid(path, "Required value")
    label_format(value, path)


def label_format(value: Any, path: str) -> None:
    """A DNS label (as a map key, the error names the map: ``value`` is the key)."""
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.match(value):
        raise FieldInvalid(
            path,
            f"Invalid value: {json.dumps(value)}: a lowercase RFC 1123 label must consist of lower case "
            "alphanumeric characters or '-', and must start and end with an alphanumeric character",
        )


def subdomain(value: Any, path: str) -> None:
    if not value:
        raise FieldInvalid(path, "Required value")
    if not isinstance(value, str) or len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise FieldInvalid(
            path,
            f"Invalid value: {json.dumps(value)}: a lowercase RFC 1123 subdomain must consist of lower "
            "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )


def qualified_name(value: Any, path: str) -> None:
    """A qualified name such as a condition type (``[prefix/]name``)."""
    problems = qualified_name_errors(value) if isinstance(value, str) else ["must be a string"]
    if problems:
        raise FieldInvalid(path, f"Invalid value: {json.dumps(value)}: {problems[0]}")


def items(value: Any, path: str, most: int = -1) -> list[Any]:
    """A list (None: empty), of at most ``most`` entries when that is not negative."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldInvalid(path, f"Invalid value: {json.dumps(value)}: must be a list")
    if 0 <= most < len(value):
        raise FieldInvalid(path, f"Too many: {len(value)}: must have at most {most} items")
    return value


def mapping(value: Any, path: str, most: int = -1) -> dict[str, Any]:
    """A map (None: empty), of at most ``most`` entries when that is not negative."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldInvalid(path, f"Invalid value: {json.dumps(value)}: must be an object")
    if 0 <= most < len(value):
        raise FieldInvalid(path, f"Too many: {len(value)}: must have at most {most} items")
    return value


def quantity(value: Any, path: str) -> str:
    """A quantity, in the canonical form the server stores it in."""
    try:
        return canonical_quantity(value)
    except (QuantityError, TypeError):
        raise FieldInvalid(
            path,
            f"Invalid value: {json.dumps(value)}: quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ) from None


def duplicates(keys: list[Any], path: str) -> None:
    """Each key once: the second of two is the error (``path[i]``)."""
    seen: set[Any] = set()
    for i, key in enumerate(keys):
        if key in seen:
            raise FieldInvalid(f"{path}[{i}]", f"Duplicate value: {json.dumps(key)}")
        seen.add(key)
