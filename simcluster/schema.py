"""Schemas of the served kinds, compiled once into trees the write path walks quickly.

Built-in kinds take their structure at run time from the generated models kubernetes_asyncio
ships (`openapi_types`, `attribute_map`, the setters' "must not be `None`" checks and the
getters' docstrings); custom resources from their CRD's `openAPIV3Schema`. Both compile to
`Node` trees: the unknown-field walk (field validation, pruning) reads `props`/`items`/`values`,
CRD validation and defaulting also read `spec`, the node's JSON schema.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kubernetes_asyncio.client import models

Obj = dict[str, Any]

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")
_REQUIRED = re.compile(r"Invalid value for `(\w+)`, must not be `None`")
SCALARS = frozenset({"str", "int", "float", "bool", "datetime", "date", "object", "bytearray"})


@dataclass(slots=True, frozen=True)
class Field:
    """One property of a generated model: its JSON name, python type string and documentation."""

    name: str
    type: str
    description: str
    required: bool


@cache
def model_fields(model: str) -> tuple[Field, ...]:
    """The properties of a kubernetes_asyncio model class, in its declaration order."""
    cls = getattr(models, model)
    source = ""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None) if module is not None else None
    if path:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    required = set(_REQUIRED.findall(source))
    fields = []
    for attr, type_name in cls.openapi_types.items():
        prop = getattr(cls, attr, None)
        fields.append(Field(cls.attribute_map[attr], type_name, _description(prop), attr in required))
    return tuple(fields)


def _description(prop: Any) -> str:
    """The field description a generated getter carries as its docstring's second paragraph."""
    doc = getattr(prop, "__doc__", None) or ""
    parts = [p.strip() for p in doc.split("\n\n")]
    if len(parts) < 3:
        return ""
    return parts[1].replace("  # noqa: E501", "").strip()


def is_model(type_name: str) -> bool:
    return type_name not in SCALARS and hasattr(models, type_name)


# ---- compiled trees -----------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Node:
    """What a value at one place in an object may contain.

    `props` lists an object's known fields (None: not an object with fields), `values` is the
    node of a map's values, `items` of a list's items; `any` keeps everything below (free-form
    or `x-kubernetes-preserve-unknown-fields`); `walk` says whether anything below can be
    unknown, so scalars cost nothing. `spec` is the JSON schema of a CRD node.
    """

    props: dict[str, Node] | None = None
    items: Node | None = None
    values: Node | None = None
    any: bool = False
    walk: bool = False
    spec: Obj = field(default_factory=dict)
    embedded: bool = False


LEAF = Node()
ANY = Node(any=True)


@cache
def model_node(model: str) -> Node:
    """The tree of a built-in model, shared by every kind that embeds it (recursion included)."""
    props: dict[str, Node] = {}
    node = Node(props=props, walk=True)
    _model_nodes[model] = node
    for f in model_fields(model):
        props[f.name] = _type_node(f.type)
    return node


_model_nodes: dict[str, Node] = {}


def _type_node(type_name: str) -> Node:
    if type_name == "object":
        return ANY
    if type_name in SCALARS:
        return LEAF
    if m := _LIST.match(type_name):
        inner = _type_node(m.group(1))
        return Node(items=inner, walk=True) if inner.walk else LEAF
    if m := _DICT.match(type_name):
        inner = _type_node(m.group(1))
        return Node(values=inner, walk=True) if inner.walk else LEAF
    if type_name in _model_nodes:
        return _model_nodes[type_name]
    return model_node(type_name) if hasattr(models, type_name) else ANY


def custom_node(schema: Obj | None, *, root: bool = True) -> Node:
    """The tree of a CRD version's openAPIV3Schema; the root and embedded resources get metadata."""
    schema = schema or {}
    node = Node(spec=schema, walk=True)
    node.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if schema.get("x-kubernetes-int-or-string"):
        node.walk = False
        return node
    properties = schema.get("properties")
    if properties or root or node.embedded or schema.get("type") == "object":
        node.props = {k: custom_node(v, root=False) for k, v in (properties or {}).items()}
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        node.values = custom_node(additional, root=False)
        node.props = None if not properties else node.props
    elif additional is True:
        preserve = True
    if isinstance(schema.get("items"), dict):
        node.items = custom_node(schema["items"], root=False)
    if root or node.embedded:
        assert node.props is not None
        node.props.setdefault("apiVersion", Node(spec={"type": "string"}))
        node.props.setdefault("kind", Node(spec={"type": "string"}))
        node.props["metadata"] = model_node("V1ObjectMeta")
    node.any = preserve and not node.props and node.values is None
    if preserve and node.props is not None:
        node.values = node.values or ANY  # unknown fields stay beside the known ones
    if node.props is None and node.items is None and node.values is None and not node.any:
        node.walk = schema.get("type") in ("object", "array") or not schema.get("type")
    return node


# ---- unknown fields -----------------------------------------------------------------------


def unknown_fields(node: Node, value: Any, prune: bool = True) -> list[str]:
    """Paths of fields the schema does not know, worded like Go's strict JSON decoder; with
    `prune` they are also removed (the value must be private to the request)."""
    found: list[str] = []
    _unknown(node, value, "", found, prune)
    return found


def _unknown(node: Node, value: Any, path: str, found: list[str], prune: bool) -> None:
    if node.any:
        return
    kind = type(value)
    if kind is dict:
        props = node.props
        if props is not None:
            drop = None
            for key, child in value.items():
                sub = props.get(key)
                if sub is None:
                    if node.values is not None:
                        sub = node.values
                    else:
                        found.append(f"{path}.{key}" if path else key)
                        if prune:
                            drop = [*(drop or ()), key]
                        continue
                if sub.walk and child is not None:
                    _unknown(sub, child, f"{path}.{key}" if path else key, found, prune)
            for key in drop or ():
                del value[key]
        elif node.values is not None and node.values.walk:
            for key, child in value.items():
                if child is not None:
                    _unknown(node.values, child, f"{path}.{key}" if path else key, found, prune)
        elif node.values is None and node.items is None and node.spec:
            # an object node without properties keeps no fields (CRD pruning)
            for key in list(value):
                found.append(f"{path}.{key}" if path else key)
                if prune:
                    del value[key]
    elif kind is list and node.items is not None and node.items.walk:
        for i, item in enumerate(value):
            if item is not None:
                _unknown(node.items, item, f"{path}[{i}]", found, prune)


_KEY = re.compile(rb'"\s*:')


def count_keys(value: Any) -> int:
    """Keys of all objects in a decoded JSON value (to spot duplicate keys cheaply)."""
    kind = type(value)
    if kind is dict:
        return len(value) + sum(count_keys(v) for v in value.values() if type(v) in (dict, list))
    if kind is list:
        return sum(count_keys(v) for v in value if type(v) in (dict, list))
    return 0


class _Pairs(dict[str, Any]):
    """A decoded object that remembers which of its keys appeared more than once."""

    __slots__ = ("repeated",)
    repeated: list[str]


def _pairs(items: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(items)
    obj.repeated = [k for i, (k, _) in enumerate(items) if any(k == o for o, _ in items[:i])]
    return obj


def duplicate_fields(raw: bytes, decoded: Any) -> list[str]:
    """Paths of keys a JSON body repeats in one object, as Go's strict decoder names them.

    orjson keeps the last of duplicate keys silently; the key tokens in the raw text only
    outnumber the decoded keys when some repeat (or a string holds a `":`), and only then is
    the body parsed again key by key.
    """
    if len(_KEY.findall(raw)) == count_keys(decoded):
        return []
    try:
        tree = json.loads(raw, object_pairs_hook=_pairs)
    except ValueError:
        return []
    found: list[str] = []

    def visit(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key in getattr(value, "repeated", ()):
                found.append(f"{path}.{key}" if path else key)
            for key, child in value.items():
                visit(child, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for i, child in enumerate(value):
                visit(child, f"{path}[{i}]")

    visit(tree, "")
    return list(dict.fromkeys(found))
