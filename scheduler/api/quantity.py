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


# ---------------------------------------------------------------------- quantities as values with a format

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
_NANO = 10**9
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


class Quantity:
    """A quantity as apimachinery keeps one: its exact value and the format it is printed in
    (the one it was written in: a binary suffix, an exponent, or decimal), so ``str`` gives the
    canonical form the API server would store ("4000000000" written as BinarySI is "3906250Ki")."""

    __slots__ = ("format", "value")

    def __init__(self, value: Fraction | int, format: str = DECIMAL_SI) -> None:
        self.value = Fraction(value)
        self.format = format

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        value = parse_quantity(text)
        if isinstance(text, str):
            stripped = text.strip()
            if stripped.endswith("i"):
                return cls(value, BINARY_SI)
            if "e" in stripped.lower():
                return cls(value, DECIMAL_EXPONENT)
        return cls(value, DECIMAL_SI)

    def integer(self) -> int:
        """The value in whole units, rounded up (apimachinery's ``Value()``)."""
        return math.ceil(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        value = Fraction(math.ceil(self.value * _NANO), _NANO)  # sub-nano precision rounds up
        if value == 0:
            return "0"
        if self.format == BINARY_SI and abs(value) >= 1024 and value.denominator == 1:
            return _binary(int(value))
        return _decimal(value, self.format)


def _decimal(value: Fraction, format: str) -> str:
    mantissa = value * _NANO  # an integer: the value in nano units
    exponent = -9
    number = int(mantissa)
    while number % 10 == 0:
        number //= 10
        exponent += 1
    while exponent % 3:  # down to a multiple of 3, as the printed suffixes go
        number *= 10
        exponent -= 1
    if format == DECIMAL_EXPONENT:
        return f"{number}e{exponent}" if exponent else str(number)
    suffix = _DECIMAL_SUFFIX.get(exponent)
    return f"{number}{suffix}" if suffix is not None else f"{number}e{exponent}"


def _binary(number: int) -> str:
    power = 0
    while number % 1024 == 0 and power < 6:
        number //= 1024
        power += 1
    return f"{number}{_BINARY_SUFFIX[power]}"


def canonical_quantity(text: str | int | float) -> str:
    """The form the API server stores a quantity in ("1024Mi" is "1Gi", "1000m" is "1")."""
    return str(Quantity.parse(text))
