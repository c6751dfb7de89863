"""The Kubernetes CEL libraries DRA's environment enables beyond the basics: regex functions on
RE2 with Go's semantics and error wording, two-variable comprehensions, strings.quote."""

from __future__ import annotations

import pytest

from scheduler.dra.cel import CelDevice, CelError, Selector

GPU = CelDevice("gpu.example.com", {"gpu.example.com": {"memory": 40, "model": "a100-sxm4"}}, {})
ATTRS = 'device.attributes["gpu.example.com"]'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # RE2, as Go's regexp: leftmost-first, unanchored
        (f'{ATTRS}.model.find("[0-9]+") == "100"', True),
        (f'{ATTRS}.model.find("z+") == ""', True),
        ('"a1b22c333".findAll("[0-9]+") == ["1", "22", "333"]', True),
        ('"a1b22c333".findAll("[0-9]+", 2) == ["1", "22"]', True),
        ('"a1b22c333".findAll("[0-9]+", 0) == []', True),
        # Go drops an empty match right after a match (Python's re keeps it: ["", "aaa", "", ""])
        ('"baaac".findAll("a*") == ["", "aaa", ""]', True),
        ('"ééa".findAll(".") == ["é", "é", "a"]', True),
        ('"abcabc".find("(a|ab)(c|bcd)") == "abc"', True),
        (f'{ATTRS}.model.matches("^a[0-9]+-sxm[0-9]$")', True),
        ('"AbC".matches("(?i)abc")', True),
        # two-variable comprehensions: index and value of a list, key and value of a map
        ("[10, 20, 30].all(i, v, v == (i + 1) * 10)", True),
        ("[10, 20, 30].exists(i, v, i == 1 && v == 20)", True),
        ("[10, 20, 30].existsOne(i, v, v > 15)", False),
        (f'{ATTRS}.exists(k, v, k == "memory" && v >= 32)', True),
        (f'{ATTRS}.all(k, v, k != "" && v != "")', True),
        ("[1, 2].transformList(i, v, v * 10) == [10, 20]", True),
        ("[1, 2, 3].transformList(i, v, i > 0, v) == [2, 3]", True),
        # the strings library's quote
        (r'strings.quote("a\nb\t\"c\"") == "\"a\\nb\\t\\\"c\\\"\""', True),
        (r'strings.quote("\\") == "\"\\\\\""', True),
    ],
)
def test_library_functions(expression: str, expected: bool) -> None:
    assert Selector(expression).matches(GPU) is expected


PATTERNS = CelDevice(
    "gpu.example.com",
    {
        "gpu.example.com": {
            "model": "a100",
            "bracket": "[",
            "paren": "(a",
            "stars": "a**",
            "backref": "(a)\\1",
        }
    },
    {},
)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # a pattern only known when it runs: Go's regexp wording, after the library's own
        (f'"a".find({ATTRS}.bracket) == ""', "Illegal regex: error parsing regexp: missing closing ]: `[`"),
        (f'"a".findAll({ATTRS}.paren) == []', "Illegal regex: error parsing regexp: missing closing ): `(a`"),
        (
            f'"a".find({ATTRS}.stars) == ""',
            "Illegal regex: error parsing regexp: invalid nested repetition operator: `**`",
        ),
        # RE2, as Go: no backreferences
        (
            f'"aa".find({ATTRS}.backref) == ""',
            "Illegal regex: error parsing regexp: invalid escape sequence: `\\1`",
        ),
        # matches, evaluated by the runtime's own RE2, with Go's wording too
        (f'"a".matches({ATTRS}.bracket)', "error parsing regexp: missing closing ]: `[`"),
    ],
)
def test_regex_errors_when_running_are_worded_as_go_words_them(expression: str, message: str) -> None:
    with pytest.raises(CelError) as caught:
        Selector(expression).matches(PATTERNS)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go's regex validator refuses a literal pattern of matches when compiling; the
        # column is the literal's (52 on line 1, 54 on line 2 after two spaces)
        (
            f'{ATTRS}.model.matches("[")',
            "compilation failed: ERROR: <input>:1:52: invalid matches argument\n"
            f' | {ATTRS}.model.matches("[")\n'
            " | " + "." * 51 + "^",
        ),
        (
            f'{ATTRS}.model == "a" ||\n  {ATTRS}.model.matches("x{{2000}}")',
            "compilation failed: ERROR: <input>:2:54: invalid matches argument\n"
            f' |   {ATTRS}.model.matches("x{{2000}}")\n'
            " | " + "." * 53 + "^",
        ),
        # find and findAll compile their literal pattern when the program is planned
        ('"a".find("[") == ""', "program instantiation failed: error parsing regexp: missing closing ]: `[`"),
        (
            '"a".findAll("*") == []',
            "program instantiation failed: error parsing regexp: missing argument to repetition "
            "operator: `*`",
        ),
    ],
)
def test_bad_literal_patterns_are_refused_before_anything_runs(expression: str, message: str) -> None:
    with pytest.raises(CelError) as caught:
        Selector(expression)
    assert str(caught.value) == message


def test_a_pattern_that_backtracks_forever_in_python_is_linear_in_re2() -> None:
    # (a+)+$ against a's and a b: exponential for a backtracking engine, linear for RE2
    expression = f'"{"a" * 5000}b".find("(a+)+$") == ""'
    assert Selector(expression).matches(GPU) is True
