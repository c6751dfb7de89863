"""`pyscheduler plugins`: every plugin this installation can use, where it comes from, the
extension points it implements and its args (with their defaults).

Exit codes: 0 listed; 2 a ``--plugin`` that cannot be loaded.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from typing import Any

import orjson

from scheduler.config.args import ARGS_TYPES
from scheduler.config.typedargs import encode_dataclass, json_name
from scheduler.plugins.loading import PluginLoadError, PluginSource, load_registry
from scheduler.runtime.framework import EXTENSION_METHODS

# extension point (config attribute) -> its name in a KubeSchedulerConfiguration
POINT_NAMES = {
    "pre_enqueue": "preEnqueue",
    "queue_sort": "queueSort",
    "pre_filter": "preFilter",
    "filter": "filter",
    "post_filter": "postFilter",
    "pre_score": "preScore",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "pre_bind": "preBind",
    "bind": "bind",
    "post_bind": "postBind",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin", dest="plugins", action="append", default=[], metavar="MODULE:CLASS", help="also this one"
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def describe(source: PluginSource) -> dict[str, Any]:
    points = [
        POINT_NAMES[point]
        for point, method in EXTENSION_METHODS.items()
        if callable(getattr(source.factory, method, None))
    ]
    entry: dict[str, Any] = {"name": source.name, "origin": source.origin, "extensionPoints": points}
    args = _args_schema(source)
    if args is not None:
        entry["args"] = args
    if source.watches:
        entry["watches"] = list(source.watches)
    return entry


def _args_schema(source: PluginSource) -> list[dict[str, Any]] | None:
    """Each args field: its wire name, type and default (None when the plugin takes no args)."""
    if source.args_type is not None:
        hints = typing.get_type_hints(source.args_type)
        defaults = _defaults(source.args_type)
        return [
            {
                "name": json_name(f),
                "type": _type_name(hints[f.name]),
                **({"default": defaults[json_name(f)]} if json_name(f) in defaults else {"required": True}),
            }
            for f in dataclasses.fields(source.args_type)
        ]
    built_in = ARGS_TYPES.get(source.name) if source.origin == "in-tree" else None
    if built_in is not None:
        defaults = built_in().to_dict()
        return [
            {"name": key, "default": value}
            for key, value in defaults.items()
            if key not in ("apiVersion", "kind")
        ]
    return None


def _defaults(args_type: type) -> dict[str, Any]:
    try:
        return encode_dataclass(args_type())
    except TypeError:  # some fields are required: list the defaults of the others
        out = {}
        for f in dataclasses.fields(args_type):
            if f.default is not dataclasses.MISSING:
                out[json_name(f)] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[json_name(f)] = f.default_factory()
        return out


def _type_name(hint: Any) -> str:
    text = getattr(hint, "__name__", None) if not typing.get_args(hint) else None
    return text or str(hint).replace("typing.", "")


def main(args: argparse.Namespace) -> int:
    try:
        sources = load_registry(args.plugins)
    except PluginLoadError as exc:
        print(f"pyscheduler: {exc}", file=sys.stderr)
        return 2
    described = [describe(source) for source in sources.values()]
    if args.output == "json":
        print(orjson.dumps(described, option=orjson.OPT_INDENT_2).decode())
        return 0
    for entry in described:
        print(f"{entry['name']}  ({entry['origin']})")
        print(f"    extension points: {', '.join(entry['extensionPoints'])}")
        for field in entry.get("args", ()):
            kind = f": {field['type']}" if "type" in field else ""
            value = (
                " (required)"
                if field.get("required")
                else f" = {orjson.dumps(field.get('default')).decode()}"
            )
            print(f"    args.{field['name']}{kind}{value}")
        if entry.get("watches"):
            print(f"    watches: {', '.join(entry['watches'])}")
    return 0
