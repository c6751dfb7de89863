"""The runtime cost budget of a device selector, as upstream's CEL programs enforce it.

cel-go tracks the cost of every evaluation and stops one that passes the limit (for DRA,
CELSelectorExpressionMaxCost = 1,000,000) with ``operation cancelled: actual cost limit
exceeded``. The C++ runtime tracks nothing, so a compiled expression is instrumented instead:
its checked AST (the runtime's serialized ``cel.expr.CheckedExpr``) gets, around every
comprehension's loop condition, a call of ``@dra_cost(n, condition)``, where ``n`` is the cost
of one iteration (its condition and step, nested comprehensions' bodies left to their own
calls). The call charges ``n`` to the evaluation's budget and passes the condition through, so
each iteration actually run is paid for, and an evaluation stops once the budget is spent.
The rest of the expression is paid once per evaluation. Costs follow cel-go's tracker: 1 per
identifier, field selection and function call, 10 per list and 30 per map built, constants free.

Only expressions with comprehensions can run long (everything else is bounded by the
expression's size), so only they are instrumented; an evaluation of one pays a Python call per
iteration (~1 µs here).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

COST_FUNCTION = "@dra_cost"
EXCEEDED = "operation cancelled: actual cost limit exceeded"
LIST_COST = 10  # cel-go's common.ListCreateBaseCost
MAP_COST = 30  # cel-go's common.MapCreateBaseCost
STRUCT_COST = 40  # cel-go's common.StructCreateBaseCost

# cel.expr.Expr's fields, and those of the messages inside it
_ID, _CONST, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 2, 3, 4, 5, 6, 7, 8, 9
_SELECT_OPERAND = 1
_CALL_TARGET, _CALL_FUNCTION, _CALL_ARGS = 1, 2, 3
_LIST_ELEMENTS = 1
_STRUCT_NAME, _STRUCT_ENTRIES = 1, 2
_ENTRY_KEY, _ENTRY_VALUE = 3, 4
_RANGE, _ACCU_INIT, _CONDITION, _STEP, _RESULT = 2, 4, 5, 6, 7
_CONST_INT64 = 3
_CHECKED_EXPR = 4  # CheckedExpr.expr
_PARSED_EXPR = 2  # ParsedExpr.expr
_ANY_TYPE_URL, _ANY_VALUE = 1, 2  # google.protobuf.Any
_VARINT, _BYTES = 0, 2
_FIXED = {1: 8, 5: 4}  # wire type -> size


class BudgetExceeded(ValueError):
    """An evaluation spent its budget; the message is cel-go's."""


class Budget:
    """The cost left to the evaluation under way (evaluations run one at a time, in the
    scheduler's event loop thread)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = 0

    def start(self, limit: int, upfront: int) -> None:
        self.left = limit - upfront
        if self.left < 0:
            raise BudgetExceeded(EXCEEDED)

    def charge(self, cost: int, condition: bool) -> bool:
        self.left -= cost
        if self.left < 0:
            raise BudgetExceeded(EXCEEDED)
        return condition


# ------------------------------------------------------------------ protobuf wire format

Field = tuple[int, int, int | bytes]  # number, wire type, value


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


def _fields(data: bytes) -> list[Field]:
    found: list[Field] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _BYTES:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        else:
            size = _FIXED[wire]
            value, pos = data[pos : pos + size], pos + size
        found.append((number, wire, value))
    return found


def _encode(fields: list[Field]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        out += _encode_varint(number << 3 | wire)
        if isinstance(value, int):
            out += _encode_varint(value)
        elif wire == _BYTES:
            out += _encode_varint(len(value)) + value
        else:
            out += value
    return bytes(out)


def _children(fields: list[Field], numbers: tuple[int, ...]) -> Iterator[bytes]:
    for number, wire, value in fields:
        if number in numbers and wire == _BYTES and isinstance(value, bytes):
            yield value


# ------------------------------------------------------------------ costs and instrumentation


def cost_once(expr: bytes) -> int:
    """What evaluating ``expr`` costs, comprehensions' loop bodies left out (they are charged
    per iteration)."""
    total = 0
    for number, _, value in _fields(expr):
        if not isinstance(value, bytes):
            continue
        if number in (_IDENT,):
            total += 1
        elif number == _SELECT:
            total += 1 + sum(cost_once(e) for e in _children(_fields(value), (_SELECT_OPERAND,)))
        elif number == _CALL:
            total += 1 + sum(cost_once(e) for e in _children(_fields(value), (_CALL_TARGET, _CALL_ARGS)))
        elif number == _LIST:
            total += LIST_COST + sum(cost_once(e) for e in _children(_fields(value), (_LIST_ELEMENTS,)))
        elif number == _STRUCT:
            parts = _fields(value)
            is_map = not any(n == _STRUCT_NAME for n, _, _ in parts)
            total += MAP_COST if is_map else STRUCT_COST
            for entry in _children(parts, (_STRUCT_ENTRIES,)):
                total += sum(cost_once(e) for e in _children(_fields(entry), (_ENTRY_KEY, _ENTRY_VALUE)))
        elif number == _COMPREHENSION:
            total += sum(cost_once(e) for e in _children(_fields(value), (_RANGE, _ACCU_INIT, _RESULT)))
    return total


@dataclass(slots=True)
class _Ids:
    """Ids for the added nodes: far above any a compiler gives (they are 64-bit)."""

    next: int = 1 << 48


def _charged(condition: bytes, cost: int, ids: _Ids) -> bytes:
    """``@dra_cost(cost, condition)``, as an Expr with fresh ids."""
    ids.next += 2
    constant = _encode([(_ID, _VARINT, ids.next), (_CONST, _BYTES, _encode([(_CONST_INT64, _VARINT, cost)]))])
    call = _encode(
        [
            (_CALL_FUNCTION, _BYTES, COST_FUNCTION.encode()),
            (_CALL_ARGS, _BYTES, constant),
            (_CALL_ARGS, _BYTES, condition),
        ]
    )
    return _encode([(_ID, _VARINT, ids.next + 1), (_CALL, _BYTES, call)])


_NESTED = {
    _SELECT: (_SELECT_OPERAND,),
    _CALL: (_CALL_TARGET, _CALL_ARGS),
    _LIST: (_LIST_ELEMENTS,),
    _COMPREHENSION: (_RANGE, _ACCU_INIT, _CONDITION, _STEP, _RESULT),
}


def _instrument(expr: bytes, ids: _Ids) -> tuple[bytes, bool]:
    """``expr`` with its comprehensions charged per iteration; whether it has any."""
    found = False
    out: list[Field] = []
    for number, wire, value in _fields(expr):
        if isinstance(value, bytes) and number in _NESTED:
            parts: list[Field] = []
            for inner_number, inner_wire, inner in _fields(value):
                if isinstance(inner, bytes) and inner_number in _NESTED[number]:
                    inner, nested = _instrument(inner, ids)
                    found |= nested
                parts.append((inner_number, inner_wire, inner))
            if number == _COMPREHENSION:
                found = True
                body = [v for n, _, v in parts if n in (_CONDITION, _STEP) and isinstance(v, bytes)]
                per_iteration = sum(cost_once(b) for b in body)
                parts = [
                    (n, w, _charged(v, per_iteration, ids) if n == _CONDITION and isinstance(v, bytes) else v)
                    for n, w, v in parts
                ]
            value = _encode(parts)
        elif isinstance(value, bytes) and number == _STRUCT:
            entries: list[Field] = []
            for inner_number, inner_wire, inner in _fields(value):
                if inner_number == _STRUCT_ENTRIES and isinstance(inner, bytes):
                    entry = []
                    for n, w, v in _fields(inner):
                        if n in (_ENTRY_KEY, _ENTRY_VALUE) and isinstance(v, bytes):
                            v, nested = _instrument(v, ids)
                            found |= nested
                        entry.append((n, w, v))
                    inner = _encode(entry)
                entries.append((inner_number, inner_wire, inner))
            value = _encode(entries)
        out.append((number, wire, value))
    return _encode(out), found


def instrumented(serialized: bytes) -> tuple[bytes, int] | None:
    """The serialized program with its comprehensions charged per iteration, and what the rest
    costs once; None when it has no comprehension (its cost is bounded by its size)."""
    wrapper = _fields(serialized)
    type_url = next(v for n, _, v in wrapper if n == _ANY_TYPE_URL)
    assert isinstance(type_url, bytes)
    # a checked expression holds its Expr in field 4, a parsed (unchecked) one in field 2
    expr_field = _PARSED_EXPR if type_url.endswith(b".ParsedExpr") else _CHECKED_EXPR
    at = next(i for i, (n, _, _) in enumerate(wrapper) if n == _ANY_VALUE)
    program = wrapper[at][2]
    assert isinstance(program, bytes)
    parts = _fields(program)
    where = next(i for i, (n, _, _) in enumerate(parts) if n == expr_field)
    expr = parts[where][2]
    assert isinstance(expr, bytes)
    new_expr, found = _instrument(expr, _Ids())
    if not found:
        return None
    parts[where] = (expr_field, _BYTES, new_expr)
    wrapper[at] = (_ANY_VALUE, _BYTES, _encode(parts))
    return _encode(wrapper), cost_once(expr)
