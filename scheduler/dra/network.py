"""Kubernetes' CEL IP, CIDR and URL libraries, with Go's parsing rules and error wording.

The runtime holds no foreign values, so, as quantities in ``scheduler.dra.cel``, an IP is the
one-entry map ``{"__ip__": canonical}``, a CIDR ``{"__cidr__": "addr/bits"}`` (the address as
given, host bits kept, as Go's netip.Prefix) and a URL ``{"__url__": text}``: CEL equality on
them is equality of those values. IPs parse as Go's netip.ParseAddr (no zones, no IPv4-mapped
IPv6, no leading zeros; Go's IPv4 and IPv6 field rules are followed for their messages), URLs as
Go's url.ParseRequestURI (an absolute URI or an absolute path; its most common errors); an error
is worded as Go's behind the library's own prefix.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, quote, unquote

IP_KEY = "__ip__"
CIDR_KEY = "__cidr__"
URL_KEY = "__url__"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _quote(text: str) -> str:
    """Go's strconv.Quote, for the printable text an expression carries."""
    return json.dumps(text, ensure_ascii=False)


# ------------------------------------------------------------------ addresses


class _ParseAddrError(ValueError):
    def __init__(self, text: str, message: str, at: str = "") -> None:
        where = f" (at {_quote(at)})" if at else ""
        super().__init__(f"ParseAddr({_quote(text)}): {message}{where}")


def _check_ipv4(text: str, whole: str = "") -> None:
    """Go's IPv4 field rules, for its messages (Python's parser says less); ``whole``: the
    IPv6 address ``text`` ends, which the messages name."""
    named = whole or text
    value, fields, digits = 0, 0, 0
    for i, char in enumerate(text):
        if char.isdigit() and char.isascii():
            if digits == 1 and value == 0:
                raise _ParseAddrError(named, "IPv4 field has octet with leading zero")
            value, digits = value * 10 + int(char), digits + 1
            if value > 255:
                raise _ParseAddrError(named, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(text) - 1 or text[i - 1] == ".":
                raise _ParseAddrError(named, "IPv4 field must have at least one digit", text[i:])
            if fields == 3:
                raise _ParseAddrError(named, "IPv4 address too long")
            fields, value, digits = fields + 1, 0, 0
        else:
            raise _ParseAddrError(named, "unexpected character", text[i:])
    if fields < 3:
        raise _ParseAddrError(named, "IPv4 address too short")


def _hex_group(s: str, text: str) -> tuple[int, int]:
    """The value and length of the hex group ``s`` starts with (Go's rules and messages)."""
    value = length = 0
    for char in s:
        digit = int(char, 16) if char in "0123456789abcdefABCDEF" else -1
        if digit < 0:
            break
        value, length = value * 16 + digit, length + 1
        if length > 4:
            raise _ParseAddrError(text, "each group must have 4 or less digits", s)
    if length == 0:
        raise _ParseAddrError(text, "each colon-separated field must have at least one digit", s)
    return value, length


def _check_ipv6(text: str) -> None:
    """Go's IPv6 rules, for its messages: 16 bytes of groups, at most one "::", an IPv4 tail
    only in the last four bytes."""
    s, _, zone = text.partition("%")
    if "%" in text and not zone:
        raise _ParseAddrError(text, "zone must be a non-empty string")
    ellipsis, size = -1, 0
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return
    while size < 16:
        _, length = _hex_group(s, text)
        if length < len(s) and s[length] == ".":
            if ellipsis < 0 and size != 12:
                raise _ParseAddrError(
                    text, "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if size + 4 > 16:
                raise _ParseAddrError(
                    text, "too many hex fields to fit an embedded IPv4 at the end of the address", s
                )
            _check_ipv4(s, text)
            size += 4
            s = ""
            break
        size += 2
        s = s[length:]
        if not s:
            break
        if s[0] != ":":
            raise _ParseAddrError(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _ParseAddrError(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _ParseAddrError(text, "multiple :: in address", s)
            ellipsis, s = size, s[1:]
            if not s:
                break
    if s:
        raise _ParseAddrError(text, "trailing garbage after address", s)
    if size < 16 and ellipsis < 0:
        raise _ParseAddrError(text, "address string too short")
    if size == 16 and ellipsis >= 0:
        raise _ParseAddrError(text, "the :: must expand to at least one field of zeros", s)


def _parse_addr(text: str) -> Address:
    """Go's netip.ParseAddr (zones kept in the result's scope id); _ParseAddrError otherwise."""
    first = next((c for c in text if c in ".:%"), "")
    if first == "%":
        raise _ParseAddrError(text, "missing IPv6 address")
    if first == ".":
        _check_ipv4(text)
        return ipaddress.IPv4Address(text)
    if first == ":":
        _check_ipv6(text)
        return ipaddress.IPv6Address(text)
    raise _ParseAddrError(text, "unable to parse IP")


def _is_4in6(address: Address) -> bool:
    return isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None


def _address(text: str) -> Address:
    """The library's parseIPAddr: netip.ParseAddr without zones or IPv4-mapped IPv6."""
    try:
        address = _parse_addr(text)
    except _ParseAddrError as exc:
        raise ValueError(
            f"IP Address {_quote(text)} parse error during conversion from string: {exc}"
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        raise ValueError(f"IP address {_quote(text)} with zone value is not allowed")
    if _is_4in6(address):
        raise ValueError(f"IPv4-mapped IPv6 address {_quote(text)} is not allowed")
    return address


def _canonical(address: Address) -> str:
    """Go's Addr.String(): RFC 5952 for IPv6 (a single zero group is not shortened)."""
    if isinstance(address, ipaddress.IPv4Address):
        return str(address)
    groups = address.exploded.split(":")
    best_start, best_length, start = -1, 0, -1
    for i, group in enumerate([*groups, "x"]):
        if group == "0000":
            start = i if start < 0 else start
            continue
        if start >= 0 and i - start > best_length:
            best_start, best_length = start, i - start
        start = -1
    short = [g.lstrip("0") or "0" for g in groups]
    if best_length < 2:
        return ":".join(short)
    return ":".join(short[:best_start]) + "::" + ":".join(short[best_start + best_length :])


def _ip_value(address: Address) -> dict[str, str]:
    return {IP_KEY: _canonical(address)}


def _ip_of(value: Mapping[str, str]) -> Address:
    if IP_KEY not in value:
        raise ValueError("no such overload")
    return ipaddress.ip_address(value[IP_KEY])


def ip(text: str) -> dict[str, str]:
    return _ip_value(_address(text))


def is_ip(text: str) -> bool:
    try:
        _address(text)
    except ValueError:
        return False
    return True


def is_canonical(text: str) -> bool:
    return _canonical(_address(text)) == text


def family(value: Mapping[str, str]) -> int:
    return _ip_of(value).version


def is_unspecified(value: Mapping[str, str]) -> bool:
    return _ip_of(value).is_unspecified


def is_loopback(value: Mapping[str, str]) -> bool:
    address = _ip_of(value)
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("127.0.0.0/8")
    return address == ipaddress.IPv6Address("::1")


def is_link_local_multicast(value: Mapping[str, str]) -> bool:
    address = _ip_of(value)
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("224.0.0.0/24")
    return address in ipaddress.IPv6Network("ff02::/16")


def is_link_local_unicast(value: Mapping[str, str]) -> bool:
    address = _ip_of(value)
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("169.254.0.0/16")
    return address in ipaddress.IPv6Network("fe80::/10")


def is_global_unicast(value: Mapping[str, str]) -> bool:
    """Go's: private and unique-local addresses count; unspecified, broadcast, loopback,
    multicast and link-local unicast do not."""
    address = _ip_of(value)
    if isinstance(address, ipaddress.IPv4Address) and address == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (
        address.is_unspecified or is_loopback(value) or address.is_multicast or is_link_local_unicast(value)
    )


# ------------------------------------------------------------------ prefixes


def _prefix(text: str) -> tuple[Address, int]:
    """Go's netip.ParsePrefix, then the library's refusal of IPv4-mapped IPv6 addresses."""

    def fail(message: str) -> ValueError:
        return ValueError(
            "network address parse error during conversion from string: "
            f"netip.ParsePrefix({_quote(text)}): {message}"
        )

    address_text, slash, bits_text = text.rpartition("/")
    if not slash:
        raise fail("no '/'")
    try:
        address = _parse_addr(address_text)
    except _ParseAddrError as exc:
        raise fail(str(exc)) from None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        raise fail("IPv6 zones cannot be present in a prefix")
    if not re.fullmatch(r"0|[1-9][0-9]*", bits_text):
        raise fail(f"bad bits after slash: {_quote(bits_text)}")
    bits = int(bits_text)
    if bits > (32 if address.version == 4 else 128):
        raise fail("prefix length out of range")
    if _is_4in6(address):
        raise ValueError(f"IPv4-mapped IPv6 address {_quote(text)} is not allowed")
    return address, bits


def _cidr_value(address: Address, bits: int) -> dict[str, str]:
    return {CIDR_KEY: f"{_canonical(address)}/{bits}"}


def _cidr_of(value: Mapping[str, str]) -> tuple[Address, int]:
    if CIDR_KEY not in value:
        raise ValueError("no such overload")
    address, _, bits = value[CIDR_KEY].rpartition("/")
    return ipaddress.ip_address(address), int(bits)


def _network(address: Address, bits: int) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(f"{address}/{bits}", strict=False)


def cidr(text: str) -> dict[str, str]:
    try:
        return _cidr_value(*_prefix(text))
    except ValueError as exc:  # the library adds its words once more, as upstream does
        raise ValueError(f"network address parse error during conversion from string: {exc}") from None


def is_cidr(text: str) -> bool:
    try:
        _prefix(text)
    except ValueError:
        return False
    return True


def contains_ip(value: Mapping[str, str], other: Mapping[str, str] | str) -> bool:
    address = _address(other) if isinstance(other, str) else _ip_of(other)
    own, bits = _cidr_of(value)
    return address.version == own.version and address in _network(own, bits)


def contains_cidr(value: Mapping[str, str], other: Mapping[str, str] | str) -> bool:
    inner, inner_bits = _cidr_of(cidr(other) if isinstance(other, str) else other)
    own, bits = _cidr_of(value)
    if inner.version != own.version or bits > inner_bits:
        return False
    return _network(own, bits).overlaps(_network(inner, inner_bits))


def cidr_ip(value: Mapping[str, str]) -> dict[str, str]:
    return _ip_value(_cidr_of(value)[0])


def masked(value: Mapping[str, str]) -> dict[str, str]:
    address, bits = _cidr_of(value)
    return _cidr_value(_network(address, bits).network_address, bits)


def prefix_length(value: Mapping[str, str]) -> int:
    return _cidr_of(value)[1]


# ------------------------------------------------------------------ URLs

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})(.{0,2})")


def _url_error(text: str, message: str) -> ValueError:
    return ValueError(f"URL parse error during conversion from string: parse {_quote(text)}: {message}")


def _check_url(text: str) -> None:
    """The errors Go's url.ParseRequestURI gives most often (it takes no #fragment apart)."""
    if not text:
        raise _url_error(text, "empty url")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise _url_error(text, "net/url: invalid control character in URL")
    if text.startswith(":"):
        raise _url_error(text, "missing protocol scheme")
    scheme = _SCHEME.match(text)
    rest = text[scheme.end() :] if scheme else text
    if not scheme and not rest.startswith("/"):
        raise _url_error(text, "invalid URI for request")
    bad = _BAD_ESCAPE.search(rest.partition("?")[0])
    if bad:
        raise _url_error(text, f"invalid URL escape {_quote('%' + bad.group(1))}")
    host = _host(text)
    port = host.rpartition("]")[2] if host.startswith("[") else host
    if ":" in port and not re.fullmatch(r"[0-9]*", port.rpartition(":")[2]):
        raise _url_error(text, f"invalid port {_quote(':' + port.rpartition(':')[2])} after host")


def _parts(text: str) -> tuple[str, str, str, str]:
    """(scheme, host, path, query) as Go's url.Parse takes them apart (lowercased scheme)."""
    scheme_match = _SCHEME.match(text)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    rest = text[scheme_match.end() :] if scheme_match else text
    rest, _, query = rest.partition("?")
    host = ""
    if rest.startswith("//") and (scheme or not rest.startswith("///")):
        authority, slash, path = rest[2:].partition("/")
        host, rest = authority.rpartition("@")[2], slash + path
    return scheme, host, rest, query


def _host(text: str) -> str:
    return _parts(text)[1]


def url(text: str) -> dict[str, str]:
    _check_url(text)
    return {URL_KEY: text}


def is_url(text: str) -> bool:
    try:
        _check_url(text)
    except ValueError:
        return False
    return True


def _url_of(value: Mapping[str, str]) -> tuple[str, str, str, str]:
    if URL_KEY not in value:
        raise ValueError("no such overload")
    return _parts(value[URL_KEY])


def get_scheme(value: Mapping[str, str]) -> str:
    return _url_of(value)[0]


def get_host(value: Mapping[str, str]) -> str:
    return _url_of(value)[1]


def get_hostname(value: Mapping[str, str]) -> str:
    host = _url_of(value)[1]
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.partition(":")[0]


def get_port(value: Mapping[str, str]) -> str:
    host = _url_of(value)[1]
    tail = host.rpartition("]")[2] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def get_escaped_path(value: Mapping[str, str]) -> str:
    """The path as given when it is a valid encoding of itself, else re-escaped (Go's)."""
    path = _url_of(value)[2]
    return path if quote(unquote(path), safe="/:@!$&'()*+,;=-._~") == path else quote(unquote(path), safe="/")


def get_query(value: Mapping[str, str]) -> dict[str, list[str]]:
    """Every key and its values in order; pairs that do not decode are left out (Go's Query())."""
    found: dict[str, list[str]] = {}
    for key, item in parse_qsl(_url_of(value)[3], keep_blank_values=True, separator="&"):
        found.setdefault(key, []).append(item)
    return found
