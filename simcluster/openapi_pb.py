"""The OpenAPI v2 document as the protobuf message client-go asks for (gnostic's `openapi_v2.Document`).

client-go fetches `/openapi/v2` only as `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
(kubectl's and helm's client-side validation, `kubectl explain --output plaintext-openapiv2`).
The field numbers below are facts of that wire format; only the parts of Swagger 2.0 the
generated document uses are encoded. Values of `default`, `enum`, `example` and vendor
extensions travel as YAML text, as gnostic's `Any` carries them.
"""

from __future__ import annotations

import struct
from typing import Any

import yaml

Obj = dict[str, Any]

_SCHEMA_STRINGS = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13, "discriminator": 26}
_SCHEMA_DOUBLES = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_SCHEMA_BOOLS = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}
_SCHEMA_INTS = {
    "maxLength": 11,
    "minLength": 12,
    "maxItems": 14,
    "minItems": 15,
    "maxProperties": 17,
    "minProperties": 18,
}
_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _message(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, value: str) -> bytes:
    return _message(number, value.encode())


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(int(value))


def _bool(number: int, value: bool) -> bytes:
    return _int(number, 1) if value else b""


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _any(number: int, value: Any) -> bytes:
    """gnostic's Any: the value as YAML text (field 2)."""
    return _message(number, _text(2, yaml.safe_dump(value, default_flow_style=False)))


def _extensions(number: int, obj: Obj) -> bytes:
    return b"".join(_message(number, _text(1, k) + _any(2, v)) for k, v in obj.items() if k.startswith("x-"))


def schema(obj: Obj) -> bytes:
    out = bytearray()
    for key, value in obj.items():
        if key in _SCHEMA_STRINGS:
            out += _text(_SCHEMA_STRINGS[key], value)
        elif key in _SCHEMA_DOUBLES:
            out += _double(_SCHEMA_DOUBLES[key], value)
        elif key in _SCHEMA_BOOLS:
            out += _bool(_SCHEMA_BOOLS[key], value)
        elif key in _SCHEMA_INTS:
            out += _int(_SCHEMA_INTS[key], value)
        elif key == "default":
            out += _any(5, value)
        elif key == "example":
            out += _any(30, value)
        elif key == "required":
            out += b"".join(_text(19, v) for v in value)
        elif key == "enum":
            out += b"".join(_any(20, v) for v in value)
        elif key == "additionalProperties":
            item = _message(1, schema(value)) if isinstance(value, dict) else _int(2, 1 if value else 0)
            out += _message(21, item)
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            out += _message(22, b"".join(_text(1, t) for t in types))
        elif key == "items" and isinstance(value, dict):
            out += _message(23, _message(1, schema(value)))
        elif key == "allOf":
            out += b"".join(_message(24, schema(v)) for v in value)
        elif key == "properties":
            named = b"".join(_message(1, _text(1, k) + _message(2, schema(v))) for k, v in value.items())
            out += _message(25, named)
    out += _extensions(31, obj)
    return bytes(out)


def _parameter(param: Obj) -> bytes:
    if param["in"] == "body":
        body = _text(1, param.get("description", "")) if param.get("description") else b""
        body += _text(2, param["name"]) + _text(3, "body") + _bool(4, param.get("required", False))
        body += _message(5, schema(param["schema"]))
        return _message(1, _message(1, body))  # ParametersItem.parameter -> Parameter.body_parameter
    # query and path sub-schemas differ in where `type` and `uniqueItems` sit
    kind, type_field, unique_field = (3, 6, 20) if param["in"] == "query" else (4, 5, 19)
    sub = _bool(1, param.get("required", False)) + _text(2, param["in"]) + _text(4, param["name"])
    if param.get("description"):
        sub += _text(3, param["description"])
    sub += _text(type_field, param.get("type", "string")) + _bool(
        unique_field, param.get("uniqueItems", False)
    )
    return _message(1, _message(2, _message(kind, sub)))  # Parameter.non_body_parameter


def _operation(op: Obj) -> bytes:
    out = bytearray()
    out += b"".join(_text(1, t) for t in op.get("tags", ()))
    if op.get("description"):
        out += _text(3, op["description"])
    out += _text(5, op.get("operationId", ""))
    out += b"".join(_text(6, t) for t in op.get("produces", ()))
    out += b"".join(_text(7, t) for t in op.get("consumes", ()))
    out += b"".join(_message(8, _parameter(p)) for p in op.get("parameters", ()))
    responses = bytearray()
    for code, response in op.get("responses", {}).items():
        body = _text(1, response.get("description", ""))
        if "schema" in response:
            body += _message(2, _message(1, schema(response["schema"])))
        responses += _message(1, _text(1, code) + _message(2, _message(1, body)))
    out += _message(9, bytes(responses))
    out += b"".join(_text(10, s) for s in op.get("schemes", ()))
    out += _extensions(13, op)
    return bytes(out)


def document(doc: Obj) -> bytes:
    """Encode a Swagger 2.0 document (as `openapi.OpenAPI.v2_document` builds it)."""
    out = bytearray(_text(1, doc["swagger"]))
    info = doc.get("info") or {}
    out += _message(2, _text(1, info.get("title", "")) + _text(2, info.get("version", "")))
    paths = bytearray()
    for path, item in doc["paths"].items():
        ops = b"".join(_message(_METHODS[m], _operation(op)) for m, op in item.items() if m in _METHODS)
        paths += _message(2, _text(1, path) + _message(2, ops))
    out += _message(8, bytes(paths))
    definitions = b"".join(
        _message(1, _text(1, name) + _message(2, schema(value))) for name, value in doc["definitions"].items()
    )
    out += _message(9, definitions)
    return bytes(out)
