"""The runtime's compiled expressions as data: a serialized program is a google.protobuf.Any
holding a ``cel.expr.CheckedExpr`` (or, unchecked, a ``ParsedExpr``), read and rewritten here in
the protobuf wire format (no protobuf library is needed for these few messages).

``scheduler.dra.cost`` instruments comprehensions through it; ``literal_errors`` finds the
regex literals cel-go refuses when it compiles (``matches``) or plans (``find``, ``findAll``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

Field = tuple[int, int, int | bytes]  # number, wire type, value
VARINT, BYTES = 0, 2
_FIXED = {1: 8, 5: 4}  # wire type -> size

# cel.expr.Expr and the messages inside it
ID, CONST, IDENT, SELECT, CALL, LIST, STRUCT, COMPREHENSION = 2, 3, 4, 5, 6, 7, 8, 9
SELECT_OPERAND = 1
CALL_TARGET, CALL_FUNCTION, CALL_ARGS = 1, 2, 3
LIST_ELEMENTS = 1
STRUCT_NAME, STRUCT_ENTRIES = 1, 2
ENTRY_KEY, ENTRY_VALUE = 3, 4
RANGE, ACCU_INIT, CONDITION, STEP, RESULT = 2, 4, 5, 6, 7
CONST_INT64, CONST_STRING = 3, 6
# the Exprs each kind of node holds
NESTED = {
    SELECT: (SELECT_OPERAND,),
    CALL: (CALL_TARGET, CALL_ARGS),
    LIST: (LIST_ELEMENTS,),
    COMPREHENSION: (RANGE, ACCU_INIT, CONDITION, STEP, RESULT),
}
_ANY_TYPE_URL, _ANY_VALUE = 1, 2
_CHECKED_EXPR, _PARSED_EXPR = 4, 2  # where CheckedExpr / ParsedExpr hold their Expr
_CHECKED_SOURCE, _PARSED_SOURCE = 5, 3
_LINE_OFFSETS, _POSITIONS = 3, 4  # SourceInfo
_MAP_KEY, _MAP_VALUE = 1, 2


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | 0x80 if value else low)
        if not value:
            return bytes(out)


def fields(data: bytes) -> list[Field]:
    found: list[Field] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        elif wire == BYTES:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        else:
            size = _FIXED[wire]
            value, pos = data[pos : pos + size], pos + size
        found.append((number, wire, value))
    return found


def encode(parts: list[Field]) -> bytes:
    out = bytearray()
    for number, wire, value in parts:
        out += _encode_varint(number << 3 | wire)
        if isinstance(value, int):
            out += _encode_varint(value)
        elif wire == BYTES:
            out += _encode_varint(len(value)) + value
        else:
            out += value
    return bytes(out)


def children(parts: list[Field], numbers: tuple[int, ...]) -> Iterator[bytes]:
    for number, wire, value in parts:
        if number in numbers and wire == BYTES and isinstance(value, bytes):
            yield value


@dataclass(slots=True)
class Program:
    """A serialized program taken apart: its Expr (to read or replace) and its source info."""

    wrapper: list[Field]
    body: list[Field]
    expr_field: int
    source_field: int

    @classmethod
    def parse(cls, serialized: bytes) -> Program:
        wrapper = fields(serialized)
        type_url = next(v for n, _, v in wrapper if n == _ANY_TYPE_URL)
        parsed = isinstance(type_url, bytes) and type_url.endswith(b".ParsedExpr")
        body = next(v for n, _, v in wrapper if n == _ANY_VALUE)
        assert isinstance(body, bytes)
        return cls(
            wrapper,
            fields(body),
            _PARSED_EXPR if parsed else _CHECKED_EXPR,
            _PARSED_SOURCE if parsed else _CHECKED_SOURCE,
        )

    @property
    def expr(self) -> bytes:
        return next(children(self.body, (self.expr_field,)))

    def with_expr(self, expr: bytes) -> bytes:
        body = [(n, w, expr if n == self.expr_field else v) for n, w, v in self.body]
        return encode([(n, w, encode(body) if n == _ANY_VALUE else v) for n, w, v in self.wrapper])

    def location(self, node: int) -> tuple[int, int]:
        """(line, column), both from 1, of a node, as cel-go reports them."""
        source = next(children(self.body, (self.source_field,)), b"")
        offset, starts = 0, [0]
        for number, _, value in fields(source):
            if number == _LINE_OFFSETS and isinstance(value, bytes):
                pos = 0
                while pos < len(value):
                    line_end, pos = _varint(value, pos)
                    starts.append(line_end)
            elif number == _POSITIONS and isinstance(value, bytes):
                entry = {n: v for n, _, v in fields(value)}
                if entry.get(_MAP_KEY) == node:
                    offset = int(entry.get(_MAP_VALUE, 0))
        line = max(i for i, start in enumerate(starts) if start <= offset)
        return line + 1, offset - starts[line] + 1


def node_id(expr: bytes) -> int:
    return next((v for n, _, v in fields(expr) if n == ID and isinstance(v, int)), 0)


def string_literal(expr: bytes) -> str | None:
    """The value of a string constant node, else None."""
    for number, _, value in fields(expr):
        if number == CONST and isinstance(value, bytes):
            for inner, _, text in fields(value):
                if inner == CONST_STRING and isinstance(text, bytes):
                    return text.decode()
    return None


def calls(expr: bytes) -> Iterator[tuple[str, list[bytes]]]:
    """Every call below ``expr``: its function and arguments (a member call's target apart)."""
    for number, _, value in fields(expr):
        if not isinstance(value, bytes) or number not in (*NESTED, STRUCT):
            continue
        parts = fields(value)
        if number == CALL:
            function = next((v for n, _, v in parts if n == CALL_FUNCTION and isinstance(v, bytes)), b"")
            yield function.decode(), list(children(parts, (CALL_ARGS,)))
        if number == STRUCT:
            for entry in children(parts, (STRUCT_ENTRIES,)):
                for inner in children(fields(entry), (ENTRY_KEY, ENTRY_VALUE)):
                    yield from calls(inner)
            continue
        for inner in children(parts, NESTED[number]):
            yield from calls(inner)


def literal_errors(
    program: Program, check: Callable[[str], str | None]
) -> Iterator[tuple[str, int, str | None]]:
    """(function, node id, problem) for each string literal given as the first argument of a
    call, ``check`` telling what is wrong with it (None: nothing)."""
    for function, args in calls(program.expr):
        if args:
            literal = string_literal(args[0])
            if literal is not None:
                yield function, node_id(args[0]), check(literal)
