"""Args of out-of-tree plugins: a plain dataclass, decoded and checked like the built-in args.

A plugin declares ``args_type = MyArgs`` (a dataclass). Its ``pluginConfig[i].args`` are decoded
by the field types: field ``weight_by_label`` reads the key ``weightByLabel`` (or the name given
as ``field(metadata={"json": "..."})``); ``str``, ``int``, ``float``, ``bool``, ``list[T]``,
``tuple[T, ...]``, ``dict[str, T]``, ``T | None``, ``Literal[...]``, enums and nested dataclasses
are understood, ``Any`` takes the value as it is. Missing fields take their defaults, a field
without one is required; unknown keys and wrong types are errors naming the field
(``profiles[0].pluginConfig[2].args.weightByLabel.spot: must be an integer``). A
``validate(self) -> list[str]`` method on the dataclass adds its own checks, each message starting
with the field it is about (``"weightByLabel.spot: must be at most 100"``).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

from .fielderrors import FieldErrors, child, index


def json_name(field: dataclasses.Field[Any]) -> str:
    """The wire name of a dataclass field: its ``json`` metadata, else the camelCase name."""
    explicit = field.metadata.get("json")
    if explicit:
        return str(explicit)
    head, *rest = field.name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def decode_dataclass(errs: FieldErrors, path: str, cls: type, raw: object) -> Any:
    """An instance of the dataclass ``cls`` from ``raw`` (None: every field defaulted), or None
    when there were errors (all of them recorded in ``errs``)."""
    before = len(errs)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        errs.invalid(path, raw, "must be an object")
        return None
    hints = typing.get_type_hints(cls)
    fields = {json_name(f): f for f in dataclasses.fields(cls) if f.init}
    for key in raw:
        if key not in fields and key not in ("apiVersion", "kind"):
            errs.unknown_field(child(path, str(key)))
    values: dict[str, Any] = {}
    for name, f in fields.items():
        field_path = child(path, name)
        if name in raw:
            values[f.name] = _decode(errs, field_path, hints[f.name], raw[name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            errs.required(field_path)
    if len(errs) > before:
        return None
    instance = cls(**values)
    validate = getattr(cls, "validate", None)
    if callable(validate):
        for message in validate(instance) or ():
            field_name, _, text = str(message).partition(": ")
            errs.add(child(path, field_name) if text else path, text or field_name)
    return instance if len(errs) == before else None


def _decode(errs: FieldErrors, path: str, hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _decode(errs, path, options[0], value)
        for option in options:  # the first type the value fits
            trial = FieldErrors()
            decoded = _decode(trial, path, option, value)
            if not len(trial):
                return decoded
        errs.invalid(path, value, "must be one of " + ", ".join(_describe(a) for a in options))
        return None
    if origin is typing.Literal:
        if value not in args:
            allowed = ", ".join(repr(a) for a in args)
            errs.invalid(path, value, f"must be one of {allowed}")
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in hint)
            errs.invalid(path, value, f"must be one of {allowed}")
            return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode_dataclass(errs, path, hint, value)
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, list):
            errs.invalid(path, value, "must be a list")
            return [] if origin is not tuple else ()
        item = args[0] if args else Any
        items = [_decode(errs, index(path, i), item, v) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple or hint is tuple else items
    if origin is dict or hint is dict:
        if not isinstance(value, Mapping):
            errs.invalid(path, value, "must be an object")
            return {}
        item = args[1] if len(args) == 2 else Any
        return {str(k): _decode(errs, child(path, str(k)), item, v) for k, v in value.items()}
    return _scalar(errs, path, hint, value)


def _scalar(errs: FieldErrors, path: str, hint: Any, value: Any) -> Any:
    if hint is bool:
        if not isinstance(value, bool):
            errs.invalid(path, value, "must be a boolean")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            errs.invalid(path, value, "must be an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            errs.invalid(path, value, "must be a number")
            return value
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            errs.invalid(path, value, "must be a string")
        return value
    errs.add(path, f"the args type declares {_describe(hint)}, which pyscheduler cannot decode")
    return value


def _describe(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def encode_dataclass(args: Any) -> dict[str, Any]:
    """The wire form of a decoded args dataclass (what /configz shows)."""
    return {json_name(f): _encode(getattr(args, f.name)) for f in dataclasses.fields(args)}


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode_dataclass(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    return value
