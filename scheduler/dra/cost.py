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

from dataclasses import dataclass

from scheduler.dra import checked

COST_FUNCTION = "@dra_cost"
EXCEEDED = "operation cancelled: actual cost limit exceeded"
LIST_COST = 10  # cel-go's common.ListCreateBaseCost
MAP_COST = 30  # cel-go's common.MapCreateBaseCost
STRUCT_COST = 40  # cel-go's common.StructCreateBaseCost


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


# ------------------------------------------------------------------ costs and instrumentation

# what building a node costs, besides the Exprs inside it
_OWN_COST = {checked.IDENT: 1, checked.SELECT: 1, checked.CALL: 1, checked.LIST: LIST_COST}


def _inner(message: bytes, numbers: tuple[int, ...]) -> list[bytes]:
    return list(checked.children(checked.fields(message), numbers))


def cost_once(expr: bytes) -> int:
    """What evaluating ``expr`` costs, comprehensions' loop bodies left out (they are charged
    per iteration)."""
    total = 0
    for number, _, value in checked.fields(expr):
        if not isinstance(value, bytes):
            continue
        if number == checked.IDENT:
            total += 1
        elif number in (checked.SELECT, checked.CALL, checked.LIST):
            total += _OWN_COST[number] + sum(cost_once(e) for e in _inner(value, checked.NESTED[number]))
        elif number == checked.STRUCT:
            parts = checked.fields(value)
            is_map = not any(n == checked.STRUCT_NAME for n, _, _ in parts)
            total += MAP_COST if is_map else STRUCT_COST
            for entry in checked.children(parts, (checked.STRUCT_ENTRIES,)):
                total += sum(cost_once(e) for e in _inner(entry, (checked.ENTRY_KEY, checked.ENTRY_VALUE)))
        elif number == checked.COMPREHENSION:
            once = (checked.RANGE, checked.ACCU_INIT, checked.RESULT)
            total += sum(cost_once(e) for e in _inner(value, once))
    return total


@dataclass(slots=True)
class _Ids:
    """Ids for the added nodes: far above any a compiler gives (they are 64-bit)."""

    next: int = 1 << 48


def _charged(condition: bytes, cost: int, ids: _Ids) -> bytes:
    """``@dra_cost(cost, condition)``, as an Expr with fresh ids."""
    ids.next += 2
    value = checked.encode([(checked.CONST_INT64, checked.VARINT, cost)])
    constant = checked.encode([(checked.ID, checked.VARINT, ids.next), (checked.CONST, checked.BYTES, value)])
    call = checked.encode(
        [
            (checked.CALL_FUNCTION, checked.BYTES, COST_FUNCTION.encode()),
            (checked.CALL_ARGS, checked.BYTES, constant),
            (checked.CALL_ARGS, checked.BYTES, condition),
        ]
    )
    return checked.encode([(checked.ID, checked.VARINT, ids.next + 1), (checked.CALL, checked.BYTES, call)])


def _instrument_all(message: bytes, numbers: tuple[int, ...], ids: _Ids) -> tuple[list[checked.Field], bool]:
    """The fields of ``message``, the Exprs among them (``numbers``) instrumented."""
    found = False
    parts: list[checked.Field] = []
    for number, wire, value in checked.fields(message):
        if isinstance(value, bytes) and number in numbers:
            value, nested = _instrument(value, ids)
            found |= nested
        parts.append((number, wire, value))
    return parts, found


def _instrument(expr: bytes, ids: _Ids) -> tuple[bytes, bool]:
    """``expr`` with its comprehensions charged per iteration; whether it has any."""
    found = False
    out: list[checked.Field] = []
    for number, wire, value in checked.fields(expr):
        if isinstance(value, bytes) and number in checked.NESTED:
            parts, found_inside = _instrument_all(value, checked.NESTED[number], ids)
            found |= found_inside
            if number == checked.COMPREHENSION:
                found = True
                body = (checked.CONDITION, checked.STEP)
                per_iteration = sum(cost_once(v) for n, _, v in parts if n in body and isinstance(v, bytes))
                parts = [
                    (
                        n,
                        w,
                        _charged(v, per_iteration, ids)
                        if n == checked.CONDITION and isinstance(v, bytes)
                        else v,
                    )
                    for n, w, v in parts
                ]
            value = checked.encode(parts)
        elif isinstance(value, bytes) and number == checked.STRUCT:
            entries: list[checked.Field] = []
            for inner_number, inner_wire, inner in checked.fields(value):
                if inner_number == checked.STRUCT_ENTRIES and isinstance(inner, bytes):
                    entry, found_inside = _instrument_all(
                        inner, (checked.ENTRY_KEY, checked.ENTRY_VALUE), ids
                    )
                    found |= found_inside
                    inner = checked.encode(entry)
                entries.append((inner_number, inner_wire, inner))
            value = checked.encode(entries)
        out.append((number, wire, value))
    return checked.encode(out), found


def instrumented(serialized: bytes) -> tuple[bytes, int] | None:
    """The serialized program with its comprehensions charged per iteration, and what the rest
    costs once; None when it has no comprehension (its cost is bounded by its size)."""
    program = checked.Program.parse(serialized)
    expr = program.expr
    new_expr, found = _instrument(expr, _Ids())
    if not found:
        return None
    return program.with_expr(new_expr), cost_once(expr)
