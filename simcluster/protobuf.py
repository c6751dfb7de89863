"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) decoded to JSON dicts.

client-go's typed clients (kubectl `create <kind>`, `drain`, `auth can-i`, `describe`) send
their bodies as protobuf and never fall back to JSON, so the endpoint must read them. A body
is the envelope `k8s\\x00` + a `runtime.Unknown` message {typeMeta, raw, contentEncoding,
contentType}; `raw` is the object's own message, decoded here with the field table of
`protowire.py` into the dict the same object sent as JSON would give.

Go's protobuf marshaller writes every non-pointer field, zero or not, while its JSON
encoder leaves out `omitempty` zeros: so zero scalars are dropped unless the table marks the
field as kept (pointers and fields without `omitempty`), and a zero `Time` reads as absent.
A field the table does not know is skipped when it carries nothing (a zero, or a message of
zeros: Go writes empty structs out) and is a 400 otherwise, so data is never silently lost.
"""

from __future__ import annotations

import base64
import struct
from datetime import UTC, datetime
from typing import Any

from simcluster.errors import ApiError, bad_request
from simcluster.protowire import MESSAGES, ROOTS, Field

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
Obj = dict[str, Any]


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 64 bits")


def fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (number, wire type, value) triples of one message; LEN values stay bytes."""
    out = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise WireError(f"field {number}: length {size} past the end of the message")
            value, pos = data[pos : pos + size], pos + size
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise WireError(f"field {number}: unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int, bits: int) -> int:
    value &= (1 << 64) - 1
    if value >= 1 << 63:
        value -= 1 << 64
    if bits == 32:
        value = (value + (1 << 31)) % (1 << 32) - (1 << 31)
    return value


def _time(data: bytes, micro: bool) -> str | None:
    seconds = nanos = 0
    for number, _, value in fields(data):
        if number == 1:
            seconds = _signed(value, 64)
        elif number == 2:
            nanos = _signed(value, 32)
    if seconds == 0 and nanos == 0:
        return None  # Go's zero Time, which JSON writes as null
    stamp = datetime.fromtimestamp(seconds, UTC)
    if micro:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(data: bytes) -> int | str:
    kind, number_value, text = 0, 0, ""
    for number, _, value in fields(data):
        if number == 1:
            kind = value
        elif number == 2:
            number_value = _signed(value, 32)
        elif number == 3:
            text = value.decode()
    return text if kind == 1 else number_value


def _scalar(kind: str, wire: int, value: Any, where: str) -> Any:
    if kind in ("s", "b"):
        if wire != 2:
            raise WireError(f"{where}: expected a length-delimited value")
        return value.decode() if kind == "s" else base64.b64encode(value).decode()
    if kind in ("i32", "i64", "bool"):
        if wire != 0:
            raise WireError(f"{where}: expected a varint")
        if kind == "bool":
            return bool(value)
        return _signed(value, 32 if kind == "i32" else 64)
    if kind == "f64":
        if wire != 1:
            raise WireError(f"{where}: expected a 64-bit value")
        return struct.unpack("<d", value)[0]
    raise AssertionError(kind)


def _packed(kind: str, data: bytes) -> list[Any]:
    out, pos = [], 0
    while pos < len(data):
        value, pos = _varint(data, pos)
        out.append(_signed(value, 32 if kind == "i32" else 64) if kind != "bool" else bool(value))
    return out


def _value(f: Field, wire: int, value: Any, where: str) -> Any:
    kind = f.type
    if kind in ("Time", "MicroTime"):
        return _time(value, kind == "MicroTime")
    if kind == "Quantity":
        return next((v.decode() for n, _, v in fields(value) if n == 1), "")
    if kind == "IntOrString":
        return _int_or_string(value)
    if kind == "ExtraValue":  # a []string wrapped in a message
        return [v.decode() for n, _, v in fields(value) if n == 1]
    if kind in MESSAGES:
        if wire != 2:
            raise WireError(f"{where}: expected an embedded message")
        return decode_message(kind, value, where)
    return _scalar(kind, wire, value, where)


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False) and not isinstance(value, dict)


def _carries_nothing(wire: int, value: Any) -> bool:
    """A zero value, or a message holding only zero values (as Go writes an empty struct)."""
    if wire == 0:
        return value == 0
    if wire != 2:
        return not any(value)
    try:
        return all(_carries_nothing(w, v) for _, w, v in fields(value))
    except WireError:
        return False


def decode_message(name: str, data: bytes, where: str = "") -> Obj:
    """One message of the table as its JSON dict."""
    table = MESSAGES[name]
    out: Obj = {}
    for number, wire, value in fields(data):
        f = table.get(number)
        path = f"{where}.{f.name}" if f and where else (f.name if f else where)
        if f is None:
            if _carries_nothing(wire, value):
                continue  # a zero the table does not know: nothing is lost
            raise bad_request(
                f"unable to decode protobuf body: field {number} of {name} (at {where or 'the object'}) "
                "is not known to this endpoint; send the object as JSON"
            )
        if f.map:
            entry = {n: v for n, _, v in fields(value)}
            key = entry.get(1, b"").decode()
            item = _value(f, 2 if f.type in MESSAGES or f.type in ("s", "b") else 0, entry.get(2, b""), path)
            out.setdefault(f.name, {})[key] = item
            continue
        if f.repeated and wire == 2 and f.type in ("i32", "i64", "bool"):
            out.setdefault(f.name, []).extend(_packed(f.type, value))
            continue
        item = _value(f, wire, value, path)
        if f.repeated:
            out.setdefault(f.name, []).append(item)
        elif f.inline:
            out.update(item)
        elif item is None or (not f.keep and _is_zero(item)):
            out.pop(f.name, None)
        else:
            out[f.name] = item
    return out


def decode(body: bytes) -> Obj:
    """A request body in Kubernetes' protobuf envelope as the object's JSON dict (400 if unreadable)."""
    if not body.startswith(MAGIC):
        raise bad_request("error decoding body: protobuf body is missing the 'k8s\\x00' prefix")
    try:
        envelope = {n: v for n, _, v in fields(body[len(MAGIC) :])}
        type_meta = {n: v.decode() for n, _, v in fields(envelope.get(1, b""))}
        api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
        encoding = envelope.get(3, b"").decode()
        if encoding:
            raise bad_request(f"error decoding body: unsupported content encoding {encoding!r}")
        root = ROOTS.get(kind)
        if root is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the protobuf form of {kind or 'this object'} ({api_version}) is not supported by this "
                "endpoint; send it as application/json",
            )
        obj = decode_message(root, envelope.get(2, b""))
    except (WireError, UnicodeDecodeError) as err:
        raise bad_request(f"error decoding body: invalid protobuf: {err}") from err
    return {"kind": kind, "apiVersion": api_version, **obj}
