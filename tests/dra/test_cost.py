"""The cost model of the runtime budget: what one evaluation is charged up front and per
comprehension iteration, as cel-go's tracker counts (1 per identifier, selection and call, 10
per list, 30 per map built, constants free)."""

from __future__ import annotations

import pytest
from cel_expr_python import cel

from scheduler.dra import cost
from scheduler.dra.cel import MAX_COST


def charged(expression: str, data: dict) -> int | None:
    """The cost an evaluation of ``expression`` was charged; None when it is not instrumented."""
    budget = cost.Budget()
    T = cel.Type
    charge = cel.Overload("dra_cost", T.BOOL, [T.INT, T.BOOL], impl=budget.charge)
    env = cel.NewEnv(variables={"device": T.DYN}, functions=[cel.FunctionDecl(cost.COST_FUNCTION, [charge])])
    found = cost.instrumented(env.compile(expression).serialize())
    if found is None:
        return None
    serialized, upfront = found
    budget.start(MAX_COST, upfront)
    env.deserialize(serialized).eval(data=data)
    return MAX_COST - budget.left


@pytest.mark.parametrize(
    ("expression", "data", "expected"),
    [
        # no comprehension: bounded by its size, not instrumented
        ("device.x == 1", {"device": {"x": 1}}, None),
        # list 10 + result 1 up front; per element: condition (call, ident) 2 + step (&&, accu,
        # >, x) 4 = 6, for 3 elements
        ("[1, 2, 3].all(x, x > 0)", {"device": {}}, 11 + 3 * 6),
        # the range's size is the device's; the first entry ends the search, the second one's
        # condition is charged as a whole iteration: range 2 + result 1, then 2 x (3 + 4)
        ("device.m.exists(k, k == 'a')", {"device": {"m": {"a": 1, "b": 2}}}, 3 + 2 * 7),
        # a nested comprehension's iterations are charged as they run: 2 x 2 inner ones
        (
            "[1, 2].all(x, [1, 2].all(y, y > 0))",
            {"device": {}},
            # outer: condition 2 + step (&&, accu) 2 + the inner one's list and result 11
            11 + 2 * (2 + 2 + 11) + 2 * 2 * 6,
        ),
    ],
)
def test_what_an_evaluation_is_charged(expression: str, data: dict, expected: int | None) -> None:
    assert charged(expression, data) == expected


def test_a_budget_runs_out_with_upstreams_error() -> None:
    budget = cost.Budget()
    budget.start(10, 4)
    assert budget.charge(6, True) is True
    with pytest.raises(cost.BudgetExceeded, match="operation cancelled: actual cost limit exceeded"):
        budget.charge(1, True)
