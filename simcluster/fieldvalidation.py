"""Server-side field validation (`fieldValidation=Strict|Warn|Ignore`) and the decode step of writes.

A real server decodes a body into its schema: built-in kinds drop fields their Go types lack,
custom resources are pruned to their structural schema and defaulted. Unknown and duplicate
fields are "strict decoding errors": Strict fails the request (400 on create/update, 422 on
patch), Warn (the default when the parameter is absent) returns them as `Warning` headers,
Ignore drops them silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from simcluster import errors
from simcluster.errors import ApiError
from simcluster.resources import ResourceType
from simcluster.schema import Node, custom_node, duplicate_fields, model_node, unknown_fields
from simcluster.structural import FieldError, apply_defaults, invalid

DIRECTIVES = ("Ignore", "Strict", "Warn")


@dataclass(slots=True)
class Validation:
    """One request's directive, the warnings it collects and strict errors found in its raw body."""

    directive: str = "Warn"
    warnings: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)

    @classmethod
    def from_request(cls, value: str | None, options_kind: str, raw: bytes | None, body: Any) -> Validation:
        """Read the query parameter (empty means Warn) and look for duplicate keys in the body."""
        directive = value or "Warn"
        if directive not in DIRECTIVES:
            allowed = 'supported values: "", "Ignore", "Strict", "Warn"'
            cause = FieldError("fieldValidation", "Unsupported value", directive, allowed)
            raise invalid(options_kind, "meta.k8s.io", "", [cause])
        found = []
        if directive != "Ignore" and raw and body is not None:
            found = [f'duplicate field "{p}"' for p in duplicate_fields(raw, body)]
        return cls(directive, [], found)


_custom_nodes: dict[int, tuple[Any, Node]] = {}


def node_for(rt: ResourceType) -> Node:
    """The compiled schema of a kind: its model's for built-ins, its CRD version's otherwise."""
    if not rt.crd:
        return model_node(rt.model_name)
    cached = _custom_nodes.get(id(rt.schema))
    if cached is None or cached[0] is not rt.schema:
        cached = _custom_nodes[id(rt.schema)] = (rt.schema, custom_node(rt.schema))
    return cached[1]


def decode(
    rt: ResourceType,
    obj: Any,
    validation: Validation | None,
    *,
    patched: str | None = None,
    apply: bool = False,
    storage: ResourceType | None = None,
) -> None:
    """Drop (and report) unknown fields of a private request object, then apply CRD defaults.

    `validation` None is a trusted in-process write: built-ins are stored as given. `patched`
    is how the failing patch is quoted in a patch's 422; `apply` words errors as server-side
    apply does (undeclared fields always fail it); `storage` is the kind's storage version.
    """
    if not isinstance(obj, dict) or (validation is None and not rt.crd):
        return
    node = node_for(rt)
    unknown = [f'unknown field "{p}"' for p in unknown_fields(node, obj)]
    if apply and unknown:
        lines = ["." + u.split('"')[1] + ": field not declared in schema" for u in unknown]
        why = lines[0] if len(lines) == 1 else "errors:\n  " + "\n  ".join(lines)
        # an error with no Status reason, as the field manager's plain error reaches clients
        raise ApiError(500, "", f"failed to create typed patch object ({_gvk(rt)}): {why}")
    if validation is not None:
        strict = validation.found + unknown
        if strict and validation.directive == "Strict":
            raise _strict_error(rt, strict, patched)
        if strict and validation.directive == "Warn":
            validation.warnings.extend(strict)
    if rt.crd:
        apply_defaults(node, obj)
        if storage is not None and storage is not rt:
            # the real server also defaults on reading from storage; writing through another
            # version, the storage version's defaults are applied now instead
            apply_defaults(node_for(storage), obj)


def _gvk(rt: ResourceType) -> str:
    return f"{rt.group_version}, Kind={rt.kind}" if rt.group else f"/{rt.version}, Kind={rt.kind}"


def _strict_error(rt: ResourceType, strict: list[str], patched: str | None) -> ApiError:
    text = "strict decoding error: " + ", ".join(strict)
    if patched is None:
        return errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {text}'
        )
    detail = f"Invalid value: {orjson.dumps(patched).decode()}: {text}"
    return ApiError(
        422,
        "Invalid",
        f' "" is invalid: patch: {detail}',
        details={"causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]},
    )


def go_map(value: Any) -> str:
    """A decoded JSON value as Go's `%+v` prints it (how a strategic merge patch is quoted)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_map(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_map(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
