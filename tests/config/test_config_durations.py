"""Go-style duration parsing and printing (metav1.Duration on the wire)."""

import pytest

from scheduler.config import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("100ms", 0.1),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("300us", 0.0003),
        ("300µs", 0.0003),
        ("10ns", 1e-08),
        ("0", 0.0),
        ("-2s", -2.0),
        ("+3s", 3.0),
        (".5s", 0.5),
    ],
)
def test_go_duration_strings_parse_to_seconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "1m 30s", "abc", "1.2.3s", "-"])
def test_strings_time_parse_duration_rejects_are_rejected(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (15.0, "15s"),
        (90.0, "1m30s"),
        (600.0, "10m0s"),
        (3600.0, "1h0m0s"),
        (0.1, "100ms"),
        (1.5, "1.5s"),
        (0.0015, "1.5ms"),
        (0.0, "0s"),
        (-2.0, "-2s"),
        (2e-06, "2µs"),
        (5e-09, "5ns"),
    ],
)
def test_seconds_print_like_go_duration_string(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [15.0, 0.1, 600.0, 1.25, 0.0003, 86400.5])
def test_printed_durations_parse_back_to_the_same_value(seconds):
    assert parse_duration(format_duration(seconds)) == seconds
