"""Kubernetes' CEL regex library (``find``, ``findAll``) on RE2, as Go's regexp package runs it.

Go's regexp implements RE2's syntax and semantics (leftmost-first, linear time, no
backreferences); Google's RE2 binding gives the same matches where Python's ``re`` would differ
(backreferences, lookarounds, possessive quantifiers, catastrophic backtracking). ``findAll``
skips an empty match right after the previous match, as Go's does. Errors are worded as Go
words them (``error parsing regexp: missing closing ]: `[```), behind the library's
``Illegal regex:``; ``error_parsing`` rewords the runtime's own RE2 errors (``matches``) alike,
and ``problem`` tells what is wrong with a literal pattern before anything runs.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # an invalid pattern is the claim's error, not a log line
_CACHED_PATTERNS = 256

# RE2's error codes, as Go's regexp/syntax names them
_GO_WORDING = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
}
_RE2_ERROR = re.compile(r"^(?P<code>[^:]+)(?:: (?P<arg>.*))?$", re.DOTALL)


class RegexError(ValueError):
    """A pattern RE2 (and so Go) refuses; the message is Go's."""


def error_parsing(re2_message: str) -> str:
    """Go's ``error parsing regexp: <code>: `<expr>``` for an RE2 error ``<code>: <expr>``."""
    match = _RE2_ERROR.match(re2_message)
    if match is None:
        return f"error parsing regexp: {re2_message}"
    code = match.group("code")
    return f"error parsing regexp: {_GO_WORDING.get(code, code)}: `{match.group('arg') or ''}`"


@functools.lru_cache(maxsize=_CACHED_PATTERNS)
def _re2(pattern: str) -> Any:
    """RegexError with Go's message when the pattern is refused."""
    try:
        return re2.compile(pattern.encode(), options=_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        text = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        raise RegexError(error_parsing(text)) from None


def problem(pattern: str) -> str | None:
    """Why Go's regexp refuses ``pattern``, in its words; None when it compiles."""
    try:
        _re2(pattern)
    except RegexError as exc:
        return str(exc)
    return None


def _compiled(pattern: str) -> Any:
    """The library's functions prefix their error (Kubernetes' ``Illegal regex:``)."""
    try:
        return _re2(pattern)
    except RegexError as exc:
        raise RegexError(f"Illegal regex: {exc}") from None


def find(text: str, pattern: str) -> str:
    """The leftmost-first match of ``pattern`` in ``text``, "" when there is none."""
    match = _compiled(pattern).search(text.encode())
    return match.group(0).decode() if match is not None else ""


def _rune_width(data: bytes, pos: int) -> int:
    lead = data[pos]
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """Successive non-overlapping matches, at most ``limit`` (all when negative), as Go's
    FindAllString: an empty match abutting the previous match is not one."""
    regex = _compiled(pattern)
    data = text.encode()
    wanted = len(data) + 1 if limit < 0 else limit
    found: list[str] = []
    pos, previous_end = 0, -1
    while len(found) < wanted and pos <= len(data):
        match = regex.search(data, pos)
        if match is None:
            break
        start, end = match.span()
        accept = True
        if end == pos:  # an empty match: step one character on
            accept = start != previous_end
            pos += _rune_width(data, pos) if pos < len(data) else 1
        else:
            pos = end
        previous_end = end
        if accept:
            found.append(match.group(0).decode())
    return found
