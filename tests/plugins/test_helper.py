from __future__ import annotations

import numpy as np
import pytest

from scheduler.plugins.helper import default_normalize_score, go_div, go_div_array


@pytest.mark.parametrize(
    ("case", "raw", "reverse", "expected"),
    [
        ("the best raw score becomes 100", [0, 25, 50], False, [0, 50, 100]),
        ("scaling truncates", [1, 2, 3], False, [33, 66, 100]),
        ("all zeros stay zero", [0, 0], False, [0, 0]),
        ("reversed, all zeros become 100", [0, 0], True, [100, 100]),
        ("reversed, the lowest raw score becomes 100", [0, 1, 4], True, [100, 75, 0]),
        ("an empty list is left alone", [], False, []),
    ],
)
def test_default_normalize_score(case: str, raw: list[int], reverse: bool, expected: list[int]) -> None:
    scores = np.array(raw, dtype=np.int64)
    default_normalize_score(scores, reverse)
    assert scores.tolist() == expected


@pytest.mark.parametrize(("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)])
def test_go_division_truncates_toward_zero(a: int, b: int, q: int) -> None:
    assert go_div(a, b) == q
    assert go_div_array(np.array([a]), b).tolist() == [q]
