"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact integers.

The scheduler compares CPU in millicores and everything else in whole units, always rounding
up like apimachinery's ``Quantity.MilliValue()`` / ``Quantity.Value()`` do.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction:
    match = _QUANTITY.match(text.strip())
    if not match:
        raise QuantityError(f"quantities must match the regular expression '{_QUANTITY.pattern}': {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return value * Fraction(10) ** int(exponent[1:])
    return value * _SUFFIXES[suffix or ""]


def parse_quantity(value: str | int | float) -> Fraction:
    """Exact value of a quantity given as a string (or a bare JSON number)."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value).limit_denominator(10**9)
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    return _parse(value)


def milli_value(value: str | int | float) -> int:
    """Value in thousandths, rounded up (CPU in millicores)."""
    if isinstance(value, str):
        return _milli_of_text(value)
    return math.ceil(parse_quantity(value) * 1000)


def int_value(value: str | int | float) -> int:
    """Value in whole units, rounded up (bytes, pods, extended resources)."""
    if isinstance(value, str):
        return _int_of_text(value)
    return math.ceil(parse_quantity(value))


# Every pod of a workload states the same few quantities: decoding one is a dictionary lookup.
@lru_cache(maxsize=4096)
def _milli_of_text(text: str) -> int:
    return math.ceil(_parse(text) * 1000)


@lru_cache(maxsize=4096)
def _int_of_text(text: str) -> int:
    return math.ceil(_parse(text))
