"""Go-style durations ("15s", "1m30s", "100ms"), as metav1.Duration reads and writes them.

Config files written for kube-scheduler use Go's syntax, and /configz should print
what kube-scheduler would print, so both directions follow time.ParseDuration and
time.Duration.String.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["format_duration", "parse_duration"]

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
# Longest units first so "ms" is not read as "m" followed by garbage.
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_NS_PER_S = 1_000_000_000


def parse_duration(text: str) -> float:
    """Seconds in `text`; raises ValueError on anything time.ParseDuration would reject."""
    s = text
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = Decimal(0)
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}")
        try:
            total += Decimal(m[1]) * _NS_PER_UNIT[m[2]]
        except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
            raise ValueError(f"invalid duration {text!r}") from exc
        pos = m.end()
    return sign * int(total) / _NS_PER_S


def _trim(whole: int, frac: int, digits: int) -> str:
    """`whole` plus `frac` (with `digits` places) without trailing zeros, like Go's fmtFrac."""
    if frac == 0:
        return str(whole)
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def format_duration(seconds: float) -> str:
    """The time.Duration.String() form of `seconds` (e.g. 600 -> "10m0s")."""
    ns = round(seconds * _NS_PER_S)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_trim(ns // 1_000, ns % 1_000, 3)}µs"
    if ns < _NS_PER_S:
        return f"{sign}{_trim(ns // 1_000_000, ns % 1_000_000, 6)}ms"
    hours, rest = divmod(ns, 3_600 * _NS_PER_S)
    minutes, rest = divmod(rest, 60 * _NS_PER_S)
    secs = _trim(rest // _NS_PER_S, rest % _NS_PER_S, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return f"{sign}{secs}"
