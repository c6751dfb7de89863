"""Table columns of custom resources, from their CRD version's `additionalPrinterColumns`.

Cells are read with the JSONPath subset printer columns use in practice: `.a.b`, `[0]`, `[*]`
and `[?(@.type=="Ready")]` filters. Without printer columns a CRD prints NAME and AGE.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simcluster.resources import ResourceType
    from simcluster.tables import Column

Obj = dict[str, Any]
_TOKEN = re.compile(r"""\.([^.\[]+)|\[(\d+|\*)\]|\[\?\(@\.([\w.]+)\s*==\s*["']?([^"')]*)["']?\)\]""")
_TYPES = {"integer": "integer", "number": "number", "boolean": "boolean", "date": "date"}


def evaluate(obj: Any, path: str) -> list[Any]:
    """Every value `path` selects in `obj` (empty when nothing matches)."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    values = [obj]
    for m in _TOKEN.finditer(path):
        key, index, filter_key, filter_value = m.groups()
        found: list[Any] = []
        for value in values:
            if key is not None and isinstance(value, dict) and key in value:
                found.append(value[key])
            elif index == "*" and isinstance(value, list):
                found.extend(value)
            elif index is not None and index != "*" and isinstance(value, list) and int(index) < len(value):
                found.append(value[int(index)])
            elif filter_key is not None and isinstance(value, list):
                found.extend(item for item in value if str(_dig(item, filter_key)) == filter_value)
        values = found
    return values


def _dig(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def custom_columns(rt: ResourceType) -> list[Column]:
    from simcluster.tables import AGE, NAME, human_duration

    if not rt.printer_columns:
        return [NAME, AGE]
    columns: list[Column] = [NAME]
    for spec in rt.printer_columns:
        kind = _TYPES.get(spec.get("type", "string"), "string")
        columns.append(
            (
                spec["name"],
                kind,
                int(spec.get("priority") or 0),
                _cell(spec["jsonPath"], kind, human_duration),
            )
        )
    return columns


def _cell(path: str, kind: str, duration: Any) -> Any:
    def cell(obj: Obj) -> Any:
        values = evaluate(obj, path)
        if not values:
            return None
        if kind == "date" and isinstance(values[0], str):
            return _age(values[0], duration)
        if len(values) == 1:
            return values[0]
        return ",".join(str(v) for v in values)

    return cell


def _age(stamp: str, duration: Any) -> str:
    import time
    from calendar import timegm

    try:
        created = timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return stamp
    return duration(time.time() - created)
