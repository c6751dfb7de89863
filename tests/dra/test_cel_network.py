"""Kubernetes' CEL ip, cidr and url libraries in device selectors, with Go's parsing rules and
upstream's error wording."""

from __future__ import annotations

import pytest

from scheduler.dra.cel import CelDevice, CelError, Selector

NIC = CelDevice(
    "nic.example.com",
    {
        "nic.example.com": {
            "address": "10.1.2.3",
            "subnet": "10.0.0.0/8",
            "endpoint": "https://nic-0:8443/v1?a=1",
        }
    },
    {},
)
A = 'device.attributes["nic.example.com"]'


@pytest.mark.parametrize(
    "expression",
    [
        # ip: parsing, equality, canonical text, properties (Go's netip)
        f"ip({A}.address).family() == 4",
        'ip("::1").family() == 6',
        f'ip({A}.address) == ip("10.1.2.3")',
        'string(ip("2001:DB8:0:0:0:0:0:1")) == "2001:db8::1"',
        'string(ip("2001:db8:0:1:1:1:1:1")) == "2001:db8:0:1:1:1:1:1"',  # one zero group stays
        'ip.isCanonical("2001:db8::abcd") && !ip.isCanonical("2001:DB8::ABCD")',
        'isIP("127.0.0.1") && !isIP("127.0.0.256") && !isIP("::ffff:1.2.3.4") && !isIP("fe80::1%eth0")',
        '!isIP("01.2.3.4")',
        'ip("0.0.0.0").isUnspecified() && ip("::").isUnspecified() && !ip("::1").isUnspecified()',
        'ip("127.0.0.5").isLoopback() && ip("::1").isLoopback() && !ip("10.0.0.1").isLoopback()',
        'ip("224.0.0.1").isLinkLocalMulticast() && ip("ff02::1").isLinkLocalMulticast()',
        'ip("169.254.1.1").isLinkLocalUnicast() && ip("fe80::1").isLinkLocalUnicast()',
        # private and unique-local addresses are global unicast in Go; broadcast is not
        'ip("10.0.0.1").isGlobalUnicast() && ip("fd00::1").isGlobalUnicast()',
        '!ip("255.255.255.255").isGlobalUnicast() && !ip("224.0.0.1").isGlobalUnicast()',
        # cidr
        f"cidr({A}.subnet).containsIP({A}.address)",
        f'cidr({A}.subnet).containsIP(ip("10.255.0.1")) && !cidr({A}.subnet).containsIP("11.0.0.1")',
        'cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16") && !cidr("10.0.0.0/16").containsCIDR("10.0.0.0/8")',
        '!cidr("10.0.0.0/8").containsCIDR(cidr("::/0"))',
        'cidr("10.1.2.3/8").ip() == ip("10.1.2.3") && string(cidr("10.1.2.3/8").masked()) == "10.0.0.0/8"',
        'cidr("2001:db8::/32").prefixLength() == 32',
        'cidr("10.1.2.3/8") != cidr("10.0.0.0/8")',  # host bits kept, as Go's netip.Prefix
        'isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0") && !isCIDR("10.0.0.0/33") && !isCIDR("10.0.0.0/08")',
        # url
        f'url({A}.endpoint).getScheme() == "https" && url({A}.endpoint).getHost() == "nic-0:8443"',
        f'url({A}.endpoint).getHostname() == "nic-0" && url({A}.endpoint).getPort() == "8443"',
        f'url({A}.endpoint).getEscapedPath() == "/v1" && url({A}.endpoint).getQuery() == {{"a": ["1"]}}',
        'url("https://[::1]:80/").getHostname() == "::1" && url("https://[::1]:80/").getPort() == "80"',
        'url("HTTP://example.com").getScheme() == "http" && url("/just/a/path").getHost() == ""',
        'url("https://x/?k=1&k=2&j").getQuery() == {"k": ["1", "2"], "j": [""]}',
        'isURL("https://example.com") && isURL("/path") && !isURL("example.com") && !isURL("")',
    ],
)
def test_network_functions(expression: str) -> None:
    assert Selector(expression).matches(NIC) is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            'ip("1.2.3.256").family() == 4',
            'IP Address "1.2.3.256" parse error during conversion from string: ParseAddr("1.2.3.256"): '
            "IPv4 field has value >255",
        ),
        (
            'ip("01.2.3.4").family() == 4',
            'IP Address "01.2.3.4" parse error during conversion from string: ParseAddr("01.2.3.4"): '
            "IPv4 field has octet with leading zero",
        ),
        (
            'ip("1..2.3").family() == 4',
            'IP Address "1..2.3" parse error during conversion from string: ParseAddr("1..2.3"): '
            'IPv4 field must have at least one digit (at ".2.3")',
        ),
        (
            'ip("1.2.3").family() == 4',
            'IP Address "1.2.3" parse error during conversion from string: ParseAddr("1.2.3"): '
            "IPv4 address too short",
        ),
        (
            'ip("gpu").family() == 4',
            'IP Address "gpu" parse error during conversion from string: ParseAddr("gpu"): '
            "unable to parse IP",
        ),
        # the library's own test cases' wording
        (
            'ip("192.168.0.1.0").family() == 4',
            'IP Address "192.168.0.1.0" parse error during conversion from string: '
            'ParseAddr("192.168.0.1.0"): IPv4 address too long',
        ),
        (
            'ip("2001:db8:::68").family() == 6',
            'IP Address "2001:db8:::68" parse error during conversion from string: '
            'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at ":68")',
        ),
        (
            'cidr("192.168.0.0/").prefixLength() == 24',
            "network address parse error during conversion from string: network address parse error during "
            'conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""',
        ),
        (
            'ip("1::2::3").family() == 6',
            'IP Address "1::2::3" parse error during conversion from string: ParseAddr("1::2::3"): '
            'multiple :: in address (at ":3")',
        ),
        (
            'ip("1:2:3").family() == 6',
            'IP Address "1:2:3" parse error during conversion from string: ParseAddr("1:2:3"): '
            "address string too short",
        ),
        ('ip("::ffff:1.2.3.4").family() == 4', 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
        ('ip("fe80::1%eth0").family() == 6', 'IP address "fe80::1%eth0" with zone value is not allowed'),
        # the library wraps its own message once more, as upstream does
        (
            'cidr("10.0.0.0").prefixLength() == 8',
            "network address parse error during conversion from string: network address parse error "
            "during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'",
        ),
        (
            'cidr("10.0.0.0/33").prefixLength() == 8',
            "network address parse error during conversion from string: network address parse error "
            'during conversion from string: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range',
        ),
        (
            'url("example.com").getHost() == ""',
            'URL parse error during conversion from string: parse "example.com": invalid URI for request',
        ),
        ('url("").getHost() == ""', 'URL parse error during conversion from string: parse "": empty url'),
        (
            'url("https://x:port/").getHost() == ""',
            'URL parse error during conversion from string: parse "https://x:port/": '
            'invalid port ":port" after host',
        ),
        (
            'url("/a%zz").getHost() == ""',
            'URL parse error during conversion from string: parse "/a%zz": invalid URL escape "%zz"',
        ),
    ],
)
def test_network_errors_are_upstreams(expression: str, message: str) -> None:
    with pytest.raises(CelError) as caught:
        Selector(expression).matches(NIC)
    assert str(caught.value) == message
